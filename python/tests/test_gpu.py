"""The lane calls on a real GPU, from a torch engine: spans recorded by the
C span path (go/capi's spanpath.c) against torch.cuda.Event pairs recorded
at the same places, and lane calls during a CUDA graph capture. Skipped
unless $GPUSPANS_GPU is set and torch sees a GPU (tools/gpu/run.sh runs it
on the GPU machine)."""

import os
import time
import unittest

import gpuspans

LANES = ["prefill", "decode", "sample"]


def gpu_torch(test):
    if not os.environ.get("GPUSPANS_GPU"):
        test.skipTest("set GPUSPANS_GPU=1 on a GPU machine")
    try:
        import torch
    except ImportError:
        test.skipTest("no torch")
    if not torch.cuda.is_available():
        test.skipTest("torch sees no GPU")
    return torch


def torch_hub(test, torch, stream):
    """A hub at level Kernel on the current device, lane spans on stream,
    closed when the test ends."""
    hub = gpuspans.Hub(lanes=LANES, level="kernel", quiet=True)
    test.addCleanup(hub.close)
    hub.install(torch.cuda.current_device(), stream)
    return hub


class TorchLanesTest(unittest.TestCase):
    def test_shared_lanes_match_events(self):
        # Three lanes a step, shared boundaries, a torch event recorded
        # beside each boundary: each lane span reads what its event pair
        # reads, to the events' resolution.
        torch = gpu_torch(self)
        hub = torch_hub(self, torch, torch.cuda.current_stream())
        hub.start_harvester(0.001)
        hub.step()  # the pool opens
        time.sleep(0.05)  # the harvester runs: steps stay in C
        lib = gpuspans.library()
        counting = hasattr(lib, "gs_hub_testing_crossings")
        cycles = {"prefill": 30000, "decode": 80000, "sample": 10000}
        torch.cuda._sleep(1000)
        torch.cuda.synchronize()
        if counting:
            lib.gs_hub_testing_count_crossings(1)
            before = lib.gs_hub_testing_crossings()
        events = []
        steps = 60
        for i in range(steps):
            hub.next_step("sample", "prefill")
            e0 = torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.cuda._sleep(cycles["prefill"])
            hub.next_lane("prefill", "decode")
            e1 = torch.cuda.Event(enable_timing=True)
            e1.record()
            torch.cuda._sleep(cycles["decode"])
            hub.next_lane("decode", "sample")
            e2 = torch.cuda.Event(enable_timing=True)
            e2.record()
            torch.cuda._sleep(cycles["sample"])
            events.append((e0, e1, e2))
        hub.lane_end("sample")
        e3 = torch.cuda.Event(enable_timing=True)
        e3.record()
        if counting:
            crossed = lib.gs_hub_testing_crossings() - before
            lib.gs_hub_testing_count_crossings(0)
            # With a background harvester and kernel timing events, steps
            # and lanes stay in C.
            self.assertEqual(crossed, 0, "the step or lane calls crossed into Go")
        torch.cuda.synchronize()
        self.assertEqual(hub.drain(5.0), 0)
        want = {name: [] for name in LANES}
        for i, (e0, e1, e2) in enumerate(events):
            nxt = events[i + 1][0] if i + 1 < steps else e3
            want["prefill"].append(e0.elapsed_time(e1) * 1e6)
            want["decode"].append(e1.elapsed_time(e2) * 1e6)
            want["sample"].append(e2.elapsed_time(nxt) * 1e6)
        snap = hub.snapshot()
        self.assertEqual(snap["counters"]["landed"], 3 * steps)
        self.assertEqual(snap["counters"]["begun"], 3 * steps)
        for a in snap["lanes"]:
            ref = sorted(want[a["name"]])
            self.assertEqual(a["count"], steps, a["name"])
            mean = sum(ref) / len(ref)
            # The hub's sum against the events' sum, per span: the two
            # records at a boundary sit next to each other on the stream.
            self.assertLess(abs(a["sum_ns"] / steps - mean), 2000, (a["name"], a["sum_ns"] / steps, mean))
            self.assertLess(abs(a["p50_ns"] - ref[len(ref) // 2]), 0.03 * ref[len(ref) // 2] + 2000, a["name"])

    def test_capture_is_left_intact(self):
        # Lane calls while torch captures the stream into a graph: nothing
        # recorded (counted as dropped, capturing), the graph replays.
        torch = gpu_torch(self)
        s = torch.cuda.Stream()
        hub = torch_hub(self, torch, s)
        hub.step()
        x = torch.zeros(1024, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.stream(s):
            x.add_(1)  # warm up on the side stream, as torch asks
        torch.cuda.synchronize()
        with torch.cuda.graph(g, stream=s):
            hub.lane_begin("decode")
            x.add_(1)
            hub.next_lane("decode", "sample")
            x.add_(1)
            hub.lane_end("sample")
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
        self.assertEqual(float(x[0]), 7.0)
        hub.drain(5.0)
        c = hub.snapshot()["counters"]
        self.assertEqual(c["dropped_capturing"], 2)
        self.assertEqual(c["begun"], 2)
        with torch.cuda.stream(s):
            hub.lane_begin("decode")
            x.add_(1)
            hub.lane_end("decode")
        torch.cuda.synchronize()
        self.assertEqual(hub.drain(5.0), 0)
        self.assertEqual(hub.snapshot()["counters"]["landed"], 1)


if __name__ == "__main__":
    unittest.main()

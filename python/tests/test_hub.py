"""The Python binding on the simulated GPU. Needs the c-shared library:
GPUSPANS_LIB=path/libgpuspans.so PYTHONPATH=python python3 -m unittest discover -s python/tests -t python
"""

import ctypes
import json
import os
import sys
import threading
import time
import types
import unittest
import urllib.error
import urllib.request

import gpuspans
from gpuspans import _lib


def lane_count(snap, name):
    return next(a["count"] for a in snap["lanes"] if a["name"] == name)


def kernel_count(snap, name):
    return next(a["count"] for a in snap["kernels"] if a["name"] == name)


def skip_with_cupti_loaded(test):
    """GPUSPANS_CUPTI only chooses a libcupti when none is in the process
    yet: once torch has loaded its own (a GPU test in the same process),
    the tracer uses that one and cannot fall back."""
    try:
        with open("/proc/self/maps") as f:
            if "libcupti" in f.read():
                test.skipTest("a libcupti is loaded in this process already (torch's)")
    except OSError:
        pass


class FakeStream:
    """What the binding uses of a torch.cuda.Stream."""

    def __init__(self, handle):
        self.cuda_stream = handle


class HubTest(unittest.TestCase):
    def test_spans_land(self):
        with gpuspans.Hub(lanes=["prefill", "decode"], level="kernel", kernel_span_every=2, quiet=True) as hub:
            gpu = hub.install(0, FakeStream(5), sim=True)
            prefill, decode = hub.lane("prefill"), hub.lane("decode")
            armed = 0
            for step in range(1, 21):
                hub.step()
                armed += hub.armed
                with prefill:
                    with hub.kernel("attention"):
                        gpu.launch(20e-6)
                hub.lane_begin("decode")
                tok = hub.kernel_begin("mlp")
                gpu.launch(30e-6)
                hub.kernel_end(tok)
                hub.lane_end(decode)
            self.assertEqual(armed, 10)
            self.assertEqual(hub.drain(5.0), 0)
            snap = hub.snapshot()
            self.assertEqual(lane_count(snap, "prefill"), 20)
            self.assertEqual(lane_count(snap, "decode"), 20)
            self.assertEqual(kernel_count(snap, "attention"), 10)
            self.assertEqual(kernel_count(snap, "mlp"), 10)
            self.assertEqual(snap["counters"]["landed"], 60)
            self.assertEqual(snap["devices"][0]["stream"], 5)
            self.assertGreater(len(hub.snapshot_proto()), 100)

    def test_disabled_path_makes_no_call(self):
        lib = gpuspans.library()
        if not hasattr(lib, "gs_hub_testing_crossings"):
            self.skipTest("the library has no test hooks: build it with -tags gpuspans_testing")
        with gpuspans.Hub(level="off", quiet=True) as hub:
            hub.install(0, 0, sim=True)
            lib.gs_hub_testing_count_crossings(1)
            try:
                before = lib.gs_hub_testing_crossings()
                decode = hub.lane("decode")
                for _ in range(10000):
                    hub.step()
                    with decode:
                        with hub.kernel("attention"):
                            pass
                    hub.kernel_end(hub.kernel_begin(7))
                self.assertEqual(lib.gs_hub_testing_crossings(), before)
                # At Kernel, unarmed steps make no kernel call.
                hub.set_kernel_span_every(1000000)
                hub.level = "kernel"
                hub.step()
                before = lib.gs_hub_testing_crossings()
                for _ in range(1000):
                    with hub.kernel("attention"):
                        pass
                self.assertEqual(lib.gs_hub_testing_crossings(), before)
            finally:
                lib.gs_hub_testing_count_crossings(0)

    def test_levels(self):
        with gpuspans.Hub(quiet=True) as hub:
            self.assertIs(hub.level, gpuspans.Level.OFF)
            hub.level = "Kernel "
            self.assertIs(hub.level, gpuspans.Level.KERNEL)
            hub.level = gpuspans.Level.STEP
            self.assertEqual(hub.level, 1)
            with self.assertRaisesRegex(ValueError, "unknown level 'loud'"):
                hub.level = "loud"
            with self.assertRaisesRegex(ValueError, "unknown level 7"):
                hub.level = 7
            with self.assertRaises(gpuspans.Error) as cm:
                hub.set_kernel_span_every(0)
            self.assertEqual(cm.exception.name, "GS_HUB_ERR_INVALID_ARGUMENT")

    def test_kernel_windows(self):
        # The window settings and requests, through the C ABI, with no CUPTI
        # to open: bounds refused by name, a request refused once the
        # tracer fell back, the reason in the snapshot.
        skip_with_cupti_loaded(self)
        old = os.environ.get("GPUSPANS_CUPTI")
        os.environ["GPUSPANS_CUPTI"] = "/nonexistent/libcupti.so.13"
        try:
            with gpuspans.Hub(level="kernel", kernel_timing="auto", kernel_window_every=2.5, kernel_window_steps=3, quiet=True) as hub:
                w = hub.snapshot()["kernel_timing"]["windows"]
                self.assertEqual((w["every_ns"], w["steps"], w["opened"]), (2_500_000_000, 3, 0))
                for every, steps, what in ((0.0001, 1, "every is 100µs"), (86401, 1, "every is 24h0m1s"), (float("nan"), 1, "every is nan"),
                                           (1, 1025, "steps is 1025"), (1, -1, "steps is -1")):
                    with self.assertRaisesRegex((ValueError, gpuspans.Error), what):
                        hub.set_kernel_windows(every, steps)
                hub.set_kernel_windows(0, 0)
                self.assertEqual(hub.snapshot()["kernel_timing"]["windows"]["every_ns"], 10_000_000_000)
                hub.request_kernel_window()  # not tried yet: accepted
                hub.install(0, FakeStream(5), sim=True)
                hub.step()  # the window meets no CUPTI: event pairs, for good
                with self.assertRaisesRegex(gpuspans.Error, "fell back to event pairs"):
                    hub.request_kernel_window()
                s = hub.snapshot()["kernel_timing"]
                self.assertFalse(s["tracing"])
                self.assertIn("libcupti", s["reason"])
                # No window measured anything: GPU time is not known, not zero.
                self.assertIsNone(hub.gpu_time())
                self.assertNotIn("gpu_time", hub.snapshot())
                hub.kernel_timing = "attached"
                self.assertEqual(hub.kernel_timing, "attached")
                with self.assertRaisesRegex(gpuspans.Error, "windows need auto or cupti"):
                    hub.request_kernel_window()
        finally:
            if old is None:
                del os.environ["GPUSPANS_CUPTI"]
            else:
                os.environ["GPUSPANS_CUPTI"] = old

    def test_profile(self):
        # start_profile through the C ABI: bad arguments refused by name, one
        # at a time, the status in the snapshot, and a file that is not a
        # profile read as such and never replaced.
        import tempfile
        with tempfile.TemporaryDirectory() as d, gpuspans.Hub(level="step", quiet=True) as hub:
            path = os.path.join(d, "notes.txt")
            with open(path, "w") as f:
                f.write("my notes\n")
            for args, err in (((path, ""), gpuspans.Error), (("", "v1"), gpuspans.Error), ((path, "a\nb"), gpuspans.Error),
                              ((path, "v1", -1), ValueError), ((path, "v1", float("nan")), ValueError),
                              ((b"p", "v1"), TypeError), ((path, 3), TypeError), ((path, "v\0"), ValueError)):
                with self.assertRaises(err, msg=repr(args)):
                    hub.start_profile(*args)
            hub.start_profile(path, "v1", 1)
            with self.assertRaises(gpuspans.Error) as cm:
                hub.start_profile(path, "v2")
            self.assertEqual(cm.exception.name, "GS_HUB_ERR_LIMIT")
            p = hub.snapshot()["profile"]
            self.assertEqual((p["path"], p["build"], p["running"]), (path, "v1", True))
            self.assertIn("not a gpuspans profile", p["ignored"])
            hub.stop_profile()
            hub.stop_profile()  # none runs
            self.assertFalse(hub.snapshot()["profile"]["running"])
            with open(path) as f:
                self.assertEqual(f.read(), "my notes\n")
            # A path-like path, as pathlib gives one.
            import pathlib
            hub.start_profile(pathlib.Path(d) / "decode.profile", "v1", 1)
            self.assertEqual(hub.snapshot()["profile"]["path"], os.path.join(d, "decode.profile"))
            hub.stop_profile()

    def test_kernel_timing_falls_back_to_events(self):
        # GPUSPANS_CUPTI names a library that is not there: CUPTI stays off,
        # and kernel spans are event pairs as before, through the C ABI.
        skip_with_cupti_loaded(self)
        old = os.environ.get("GPUSPANS_CUPTI")
        os.environ["GPUSPANS_CUPTI"] = "/nonexistent/libcupti.so.13"
        try:
            with gpuspans.Hub(level="kernel", kernel_span_every=1, kernel_timing="auto", quiet=True) as hub:
                self.assertEqual(hub.kernel_timing, "auto")
                gpu = hub.install(0, FakeStream(5), sim=True)
                for _ in range(3):
                    hub.step()
                    with hub.kernel("attention"):
                        gpu.launch(20e-6)
                self.assertFalse(hub.tracing_kernels)
                self.assertEqual(hub.drain(5.0), 0)
                self.assertEqual(kernel_count(hub.snapshot(), "attention"), 3)
                hub.kernel_timing = "events"
                self.assertEqual(hub.kernel_timing, "events")
                with self.assertRaisesRegex(ValueError, "kernel_timing 'nvtx'"):
                    hub.kernel_timing = "nvtx"
            with self.assertRaisesRegex(ValueError, "kernel_timing 'nvtx'"):
                gpuspans.Hub(kernel_timing="nvtx")
        finally:
            if old is None:
                del os.environ["GPUSPANS_CUPTI"]
            else:
                os.environ["GPUSPANS_CUPTI"] = old

    def test_background_harvester(self):
        # With the harvester running, step() only counts and arms: spans
        # land without any harvest on this thread.
        with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, quiet=True) as hub:
            gpu = hub.install(0, FakeStream(5), sim=True)
            hub.start_harvester(0.001)
            with self.assertRaises(gpuspans.Error) as cm:
                hub.start_harvester(0.001)
            self.assertEqual(cm.exception.name, "GS_HUB_ERR_LIMIT")
            decode = hub.lane("decode")
            # The harvester opens the pool at its next tick, not at step():
            # wait for it, or the first steps would record nothing.
            deadline = time.monotonic() + 5
            while hub.snapshot()["devices"][0]["state"] != "open" and time.monotonic() < deadline:
                time.sleep(0.002)
            self.assertEqual(hub.snapshot()["devices"][0]["state"], "open")
            for _ in range(20):
                hub.step()
                with decode:
                    gpu.launch(10e-6)
            deadline = time.monotonic() + 5
            while lane_count(hub.snapshot(), "decode") < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
            self.assertEqual(lane_count(hub.snapshot(), "decode"), 20)
            hub.stop_harvester()
            hub.stop_harvester()  # none runs: fine
            for bad in (0, -1, 2.0, float("nan")):
                with self.assertRaisesRegex(ValueError, "harvester interval"):
                    hub.start_harvester(bad)
            hub.start_harvester(0.01)  # left running: close() stops it

    def test_errors_name_what_was_wrong(self):
        with self.assertRaisesRegex(gpuspans.Error, "duplicate lane"):
            gpuspans.Hub(lanes=["a", "a"])
        with self.assertRaisesRegex(gpuspans.Error, "lanes is empty"):
            gpuspans.Hub(lanes=[])
        with gpuspans.Hub(quiet=True) as hub:  # None: the library's default lanes
            self.assertEqual(hub.lanes, ("prefill", "decode"))
        with self.assertRaisesRegex(TypeError, "not one string"):
            gpuspans.Hub(lanes="decode")
        hub = gpuspans.Hub(quiet=True)
        with self.assertRaisesRegex(KeyError, "no lane 'nope'"):
            hub.lane("nope")
        with self.assertRaisesRegex(gpuspans.Error, "device 99"):
            hub.install(99, sim=True)
        with self.assertRaisesRegex(TypeError, "stream"):
            hub.install(0, "stream")
        with self.assertRaisesRegex(gpuspans.Error, "reserved"):
            hub.register_kernel(1, "other")
        with self.assertRaisesRegex(gpuspans.Error, "not a kernel span open"):
            hub.kernel_end(424242)
        hub.close()
        hub.close()  # twice is fine
        with self.assertRaises(gpuspans.Error) as cm:
            hub.level = "step"
        self.assertEqual(cm.exception.status, _lib.ERR_BAD_HANDLE)
        hub.step()  # a closed hub's span calls do nothing
        hub.lane_end(0)

    def test_serve(self):
        with gpuspans.Hub(level="step", quiet=True) as hub:
            hub.install(0, sim=True)
            addr = hub.serve("127.0.0.1:0")
            with urllib.request.urlopen(f"http://{addr}/metrics", timeout=10) as r:
                self.assertIn(b"gpuspans_level", r.read())
            with urllib.request.urlopen(f"http://{addr}/debug/gpuspans/snapshot.json", timeout=10) as r:
                self.assertEqual(json.load(r)["level"], "step")
            req = urllib.request.Request(f"http://{addr}/control/level", data=b"kernel", method="PUT")
            with urllib.request.urlopen(req, timeout=10) as r:
                self.assertEqual(r.read().strip(), b"kernel")
            self.assertIs(hub.level, gpuspans.Level.KERNEL)
            with self.assertRaisesRegex(gpuspans.Error, "serving on .* already"):
                hub.serve("127.0.0.1:0")
            hub.stop_serving()
            with self.assertRaisesRegex(gpuspans.Error, "token"):
                hub.serve("0.0.0.0:0")
            addr = hub.serve("127.0.0.1:0", token="s3cret")
            req = urllib.request.Request(f"http://{addr}/control/level", data=b"off", method="PUT")
            with self.assertRaises(urllib.error.HTTPError) as cm:
                urllib.request.urlopen(req, timeout=10)
            self.assertEqual(cm.exception.code, 401)

    def test_many_hubs(self):
        hubs = [gpuspans.Hub(quiet=True) for _ in range(_lib.MAX_HUBS)]
        try:
            # Handles are taken by the hubs of other tests too; at the limit
            # creation fails by name.
            with self.assertRaisesRegex(gpuspans.Error, "hubs are open already"):
                gpuspans.Hub()
        finally:
            for h in hubs:
                h.close()
        gpuspans.Hub(quiet=True).close()

    def test_threads(self):
        import threading

        with gpuspans.Hub(level="kernel", kernel_span_every=1, quiet=True) as hub:
            gpu = hub.install(0, 3, sim=True)
            hub.step()
            errors = []

            def work():
                try:
                    for _ in range(200):
                        with hub.kernel("k"):
                            gpu.launch(1e-6)
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            ts = [threading.Thread(target=work) for _ in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(errors, [])
            deadline = time.time() + 5
            while hub.drain(1.0) and time.time() < deadline:
                pass
            self.assertEqual(kernel_count(hub.snapshot(), "k"), 800)


class GraphReplayGuardTest(unittest.TestCase):
    """torch.cuda.CUDAGraph.replay through the launch guard, with a stand-in
    torch module: a hub made or set to auto or cupti wraps it once, and every
    replay then runs inside the guard, on any thread, leaving it when the
    replay raises."""

    def setUp(self):
        lib = gpuspans._process.library()
        if not hasattr(lib, "gs_testing_in_launch_guard"):
            self.skipTest("needs the library built with -tags gpuspans_testing")
        lib.gs_testing_in_launch_guard.restype = ctypes.c_int32
        self.lib = lib
        inside = self.inside = []

        class CUDAGraph:
            def replay(self, fail=False):
                inside.append(lib.gs_testing_in_launch_guard())
                if fail:
                    raise RuntimeError("replay failed")
                return "replayed"

        self.graph = CUDAGraph
        saved = sys.modules.get("torch")
        sys.modules["torch"] = types.SimpleNamespace(cuda=types.SimpleNamespace(CUDAGraph=CUDAGraph))
        self.addCleanup(lambda: sys.modules.__setitem__("torch", saved) if saved else sys.modules.pop("torch", None))

    def test_events_leaves_replay_alone(self):
        with gpuspans.Hub(quiet=True):
            self.assertEqual(self.graph().replay(), "replayed")
        self.assertEqual(self.inside, [0])

    def test_auto_guards_every_replay_on_any_thread(self):
        with gpuspans.Hub(quiet=True) as hub:
            hub.kernel_timing = "auto"
            wrapped = self.graph.replay
            with gpuspans.Hub(quiet=True, kernel_timing="cupti"):
                self.assertIs(self.graph.replay, wrapped, "a second hub wrapped replay again")
            self.assertEqual(self.graph().replay(), "replayed")
            t = threading.Thread(target=self.graph().replay)
            t.start()
            t.join()
            with self.assertRaisesRegex(RuntimeError, "replay failed"):
                self.graph().replay(fail=True)
        self.assertEqual(self.inside, [1, 1, 1])
        self.assertEqual(self.lib.gs_testing_in_launch_guard(), 0, "a failed replay left the guard held")

    def test_interrupts_never_leave_the_guard_held(self):
        """1,000 KeyboardInterrupts delivered to a thread replaying through
        the guard, in both paths (compiled, and ctypes where the extension
        is missing): the thread is inside no guard after each one."""
        import signal
        if threading.current_thread() is not threading.main_thread():
            self.skipTest("signals reach the main thread only")
        lib = self.lib
        hots = [None] + ([gpuspans._process._hot] if gpuspans._process._hot is not None else [])
        for hot in hots:
            with self.subTest(compiled=hot is not None):
                spins = 0

                def replay(graph):
                    nonlocal spins
                    spins += 1
                    self.assertEqual(lib.gs_launch_guard_depth(), 1)

                guarded = gpuspans._graphs._guarded(replay, lib, hot)
                main = threading.main_thread().ident
                interrupts, caught, acked = 1000, 0, threading.Semaphore(0)
                go, done = threading.Event(), threading.Event()

                def interrupter():
                    # One at a time, each once the last was caught, so that
                    # none lands in the checks below; they land anywhere in
                    # the replay loop.
                    go.wait()
                    for _ in range(interrupts):
                        if done.is_set():
                            return
                        signal.pthread_kill(main, signal.SIGINT)
                        if not acked.acquire(timeout=60):
                            return

                t = threading.Thread(target=interrupter)
                t.start()
                try:
                    while caught < interrupts:
                        try:
                            go.set()
                            while True:
                                guarded(None)
                                if lib.gs_launch_guard_depth() != 0:
                                    self.fail("the guard was left held after a replay")
                        except KeyboardInterrupt:
                            caught += 1
                            self.assertEqual(lib.gs_launch_guard_depth(), 0, f"interrupt {caught} left the guard held")
                            self.assertEqual(lib.gs_testing_in_launch_guard(), 0)
                            acked.release()
                finally:
                    done.set()
                    acked.release()
                    t.join()
                self.assertGreater(spins, 0)
                self.assertEqual(lib.gs_launch_guard_depth(), 0)


if __name__ == "__main__":
    unittest.main()

"""python/examples/torch_lane_costs.py's engine and report, without torch:
a fake runtime and decoder on the simulated GPU, so every variant's loop,
its per-call timing and what it landed run in CI; only the torch parts
need the GPU machine."""

import argparse
import importlib.util
import os
import time
import unittest

import gpuspans

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("torch_lane_costs", os.path.join(HERE, "..", "examples", "torch_lane_costs.py"))
tlc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tlc)


class FakeStream:
    cuda_stream = 0


class FakeEvent:
    def __init__(self, **kw):
        self.recorded = 0

    def record(self):
        self.recorded += 1


class FakeCuda:
    Event = FakeEvent

    @staticmethod
    def current_stream():
        return FakeStream()

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def get_device_name(i):
        return "Fake GPU"

    @staticmethod
    def current_device():
        return 0


class FakeTorch:
    __version__ = "0-fake"
    cuda = FakeCuda


class FakeModel:
    batch = 4

    def describe(self):
        return "a fake decoder"


class FakeTokens:
    def __init__(self, dec):
        self.dec = dec

    def cpu(self):
        self.dec.gpu.launch(20e-6)


class FakeDecoder:
    """The decode step on the simulated GPU: 100 us of graph, 20 us of
    read-back, 50 us of prefill."""

    def __init__(self):
        self.m, self.gpu, self.prefills, self.decodes = FakeModel(), None, 0, 0
        self.tok = FakeTokens(self)

    def start_batch(self):
        self.prefills += 1
        if self.gpu:
            self.gpu.launch(50e-6)

    def decode(self):
        self.decodes += 1
        if self.gpu:
            self.gpu.launch(100e-6)


class LaneCostsTest(unittest.TestCase):
    def engine(self, variant):
        args = argparse.Namespace(prefill_every=8, evrecord=None, harvest_every=0.001)
        dec = FakeDecoder()

        def install(hub):
            dec.gpu = hub.install(0, 0, sim=True)

        eng = tlc.Engine(args, variant, FakeTorch, dec, install)
        if dec.gpu is None:
            dec.gpu = _NoGPU()
        return eng, dec

    def test_every_variant(self):
        rates, steps, calls, landed, alt, blk = {}, {}, {}, {}, {}, {}
        for v in tlc.VARIANTS:
            if v == "lanes/ctypes" or v.endswith("/go") or v.startswith("records"):
                continue  # the process's own GPUSPANS_HOT or GPUSPANS_SPAN_PATH decides, or evrecord.so is needed
            with self.subTest(variant=v):
                eng, dec = self.engine(v)
                r = [eng.run(64) for _ in range(2)]
                rates[v] = [x["rate"] for x in r]
                steps[v] = [x["step_p50_us"] for x in r]
                calls[v] = eng.calls(64)
                landed[v] = eng.landed()
                self.assertEqual(dec.decodes, 3 * 64)
                self.assertEqual(dec.prefills, 3 * 64 // 8)
                if v == "torch-events":
                    self.assertEqual([e.recorded for e in eng.events], [16, 16, 192, 192, 128, 128])
                if v.startswith("lanes"):
                    s = landed[v]
                    self.assertEqual(s["lanes"]["decode"]["count"], 3 * 64)
                    self.assertEqual(s["lanes"]["sample"]["count"], 3 * 64)
                    self.assertEqual(s["lanes"]["prefill"]["count"], 3 * 64 // 8)
                    self.assertEqual(s["begun"], s["landed"])
                    self.assertEqual(s["dropped"], {})
                    self.assertEqual(s["steps"], 3 * 64)
                if v.startswith("lanes"):
                    self.assertTrue(all(x["lane_share"] > 0 for x in r), r)
                if v.startswith("lanes/shared"):
                    self.assertEqual(landed[v]["gaps_ns"], [0, 0, 0])
                    self.assertIn("next_lane(decode, sample) after the replay", calls[v])
                    self.assertIn("next_lane(decode, sample), after that crossing", calls[v])
                    self.assertIn("lane_end(decode) after the replay, in this process", calls[v])
                elif v in ("lanes", "off"):
                    self.assertIn("lane_end(sample) after the read-back", calls[v])
                    self.assertIn("lane_end(prefill), not open: the crossing alone", calls[v])
                    self.assertIn("lane_end(decode), after that crossing", calls[v])
                if v == "off":
                    self.assertEqual(landed[v]["landed"], 0)
                # Alternate steps, on an engine of its own: half with the
                # variant's calls, half with none.
                eng, dec = self.engine(v)
                alt[v] = eng.alternate(16)
                self.assertEqual(alt[v]["pairs"], 8)
                self.assertEqual(dec.decodes, 16)
                blk[v] = eng.blocks(100, block=25)
                self.assertEqual(blk[v]["pairs"], 2)
                self.assertEqual(dec.decodes, 16 + 100)
                if eng.hub:
                    self.assertEqual(eng.hub.snapshot()["options"]["level"], "off" if v == "off" else "kernel")
                if eng.hub:
                    if v.startswith("lanes"):
                        eng.hub.drain(2.0)
                        # 8 steps with calls (i = 0, 2, .. 14): decode and
                        # sample each, prefill at i = 0 and 8; then 2
                        # blocks of 25 (i = 16..40 and 66..90): 100, and
                        # prefill at 16, 24, 32, 40, 72, 80, 88.
                        self.assertEqual(eng.hub.snapshot()["counters"]["begun"], 2 * 8 + 2 + 2 * 50 + 7)
                    eng.hub.close()
        variants = list(rates)
        args = argparse.Namespace(steps=64, rounds=2, prefill_every=8)
        shares = {v: [0.9, 1.0] for v in variants if v.startswith("lanes")}
        md = tlc.report(args, "Fake GPU", variants, rates, steps, calls, landed, shares, alt, blk)
        self.assertIn("alternate blocks of 25 steps", md)
        self.assertIn("alternate steps with the variant's calls and without any (8 pairs", md)
        for v in variants:
            self.assertIn(f"| {v} |", md)
        self.assertIn("|start - end of the one before|: p50 0 ns, p99 0 ns, max 0 ns", md)
        self.assertIn("| 95.0% |", md)
        self.assertIn("| none | timer |", md)

    def test_records_where_the_lanes_are(self):
        # records and records/shared: the driver's record at each boundary
        # step_lanes and step_shared make, no hub.
        class FakeRecord:
            n = 0

            def evrecord_timed(self, stream):
                self.n += 1
                return 1000

        for body, per_step, prefill in (("step_records", 4, 2), ("step_records_shared", 2, 1)):
            with self.subTest(body=body):
                eng, dec = self.engine("none")
                eng.evrec = FakeRecord()
                for _ in range(16):
                    getattr(eng, body)()
                self.assertEqual(eng.evrec.n, 16 * per_step + 2 * prefill)
                self.assertEqual(dec.decodes, 16)

    def test_bad_arguments(self):
        for argv, msg in [(["--rounds", "0"], "--rounds must be >= 1"), (["--variants", "none,loud"], "loud")]:
            with self.assertRaises(SystemExit), _Stderr() as err:
                tlc.main(argv)
            self.assertIn(msg, err.text)


class _NoGPU:
    def launch(self, seconds):
        time.sleep(0)


class _Stderr:
    """Captures stderr (argparse's errors)."""

    def __enter__(self):
        import contextlib
        import io

        self._buf = io.StringIO()
        self._cm = contextlib.redirect_stderr(self._buf)
        self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        self.text = self._buf.getvalue()
        return False


if __name__ == "__main__":
    unittest.main()

"""python/examples/torch_decode.py's harness, without torch: a fake runtime
(host-clock events) and a fake model on the simulated GPU, so the
measurement and report logic runs in CI; only the torch parts need the GPU
machine."""

import contextlib
import importlib.util
import io
import os
import time
import unittest

import gpuspans

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("torch_decode", os.path.join(HERE, "..", "examples", "torch_decode.py"))
td = importlib.util.module_from_spec(spec)
spec.loader.exec_module(td)


class FakeEvent:
    def __init__(self):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def elapsed_ms(self, end):
        return (end.t - self.t) * 1e3


class FakeRuntime:
    event_name = "fake event"

    def event(self):
        return FakeEvent()

    def synchronize(self):
        pass

    def busy(self, us):
        pass

    def describe(self):
        return "fake runtime"

    def event_pair_cost(self, n):
        t0 = time.perf_counter()
        for _ in range(n):
            b, e = FakeEvent(), FakeEvent()
            b.record()
            e.record()
            b.elapsed_ms(e)
        return (time.perf_counter() - t0) / n * 1e6

    def driver_floor(self, n):
        return None


class FakeModel:
    """Launches simulated work where the torch model runs kernels."""

    batch = 4

    def describe(self):
        return "fake model"

    def reset(self):
        pass

    def prefill(self, hub, dev):
        if dev is not None:
            dev.launch(50e-6)

    def decode(self, hub, dev):
        for name in ("attention", "mlp"):
            with hub.kernel(name) if hub is not None else td._NULL:
                if dev is not None:
                    dev.launch(10e-6)


def install(hub):
    return hub.install(0, 9, sim=True) if hub is not None else None


class TorchDecodeHarnessTest(unittest.TestCase):
    def test_report(self):
        args = td.parse(["--rounds", "2", "--steps", "40", "--warmup", "4", "--prefill-every", "8",
                         "--kernel-span-every", "2", "--agree-steps", "16", "--cost-spans", "2048"])
        out = io.StringIO()
        res = td.report(args, FakeRuntime(), FakeModel(), install, out=out)
        text = out.getvalue()
        for lv in td.LEVELS:
            self.assertGreater(res["throughput"][lv], 0)
            self.assertIn(f"| {lv} |", text)
        self.assertEqual(set(res["agreement"]), {"prefill", "decode"})
        self.assertEqual(res["missing"], 0)
        cost, note = res["costs"]["gpuspans lane span (Python: begin + end + harvest)"]
        self.assertGreater(cost, 0)
        self.assertEqual(note, "2048 of 2048 landed")
        self.assertIn("## Cost per span", text)
        # Kernel spans landed at Kernel only: 2 per armed step.
        self.assertIn("| kernel |", text)

    def test_bad_flags(self):
        err = io.StringIO()
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(err):
            td.parse(["--steps", "0"])
        self.assertIn("--steps must be >= 1", err.getvalue())

    def test_graph_decode_bad_flags(self):
        # The CUDA-graph example checks its flags before it imports torch.
        spec = importlib.util.spec_from_file_location(
            "torch_graph_decode", os.path.join(HERE, "..", "examples", "torch_graph_decode.py"))
        gd = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gd)
        err = io.StringIO()
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(err):
            gd.main(["--kernel-span-every", "0"])
        self.assertIn("--kernel-span-every must be >= 1", err.getvalue())


if __name__ == "__main__":
    unittest.main()

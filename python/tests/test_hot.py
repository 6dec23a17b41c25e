"""The compiled span calls (gpuspans/_hot.c) against the ctypes path they
replace, and the shared lane boundaries (next_lane, next_step), on the
simulated GPU. go/capi's TestPython compiles the extension and sets
$GPUSPANS_HOT; without it the compiled half of each test is skipped."""

import ctypes
import gc
import os
import sys
import unittest

import gpuspans
from gpuspans import _lib, _spans

from .test_guards import run_child

LANES = ["prefill", "decode", "sample"]


def hub_for(test, compiled, **kw):
    """A hub whose span calls are the compiled ones, or ctypes'."""
    kw.setdefault("quiet", True)
    hub = gpuspans.Hub(**kw)
    test.addCleanup(hub.close)
    if compiled and not hub.compiled:
        test.skipTest("the compiled span calls are not loaded (set GPUSPANS_HOT)")
    if not compiled:
        hub._unbind_hot()
    return hub


def lanes(snap):
    return {a["name"]: (a["count"], a["sum_ns"]) for a in snap["lanes"]}


class LoadTest(unittest.TestCase):
    def test_loaded_where_given(self):
        path = os.environ.get(_lib.HOT_ENV)
        with gpuspans.Hub(quiet=True) as hub:
            self.assertEqual(hub.compiled, bool(path) and path != "off", f"{_lib.HOT_ENV}={path!r}")

    def test_fallback_says_why_once(self):
        # A missing file and a file that is no extension: ctypes, one warning
        # naming the reason, and the hub works.
        lib = os.environ[_lib.LIB_ENV]
        for hot, why in [("/nonexistent/_hot.abi3.so", "no such file"), (lib, "PyInit__hot")]:
            code, out, err, _ = run_child(
                f"""
                import logging, os
                os.environ[{_lib.HOT_ENV!r}] = {hot!r}
                logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
                import gpuspans
                for _ in range(3):
                    with gpuspans.Hub(level="kernel", quiet=True) as hub:
                        gpu = hub.install(0, sim=True)
                        hub.next_step(None, "decode")
                        gpu.launch(1e-4)
                        hub.lane_end("decode")
                        hub.drain()
                        assert not hub.compiled
                        assert hub.snapshot()["lanes"][1]["count"] == 1, hub.snapshot()["lanes"]
                print("ready")
                """
            )
            self.assertEqual(code, 0, err)
            lines = [l for l in err.splitlines() if "compiled span calls not loaded" in l]
            self.assertEqual(len(lines), 1, err)
            self.assertIn(why, lines[0])
            self.assertTrue(lines[0].startswith("WARNING"), lines[0])


class SameResultsTest(unittest.TestCase):
    def run_engine(self, compiled):
        """Every span call in each form it takes; the sim's durations are
        exact, so both paths must land the same spans."""
        hub = hub_for(self, compiled, lanes=LANES, level="kernel", kernel_span_every=1)
        gpu = hub.install(0, sim=True)
        prefill, decode = hub.lane("prefill"), hub.lane("decode")
        tokens = 0
        for step in range(8):
            hub.step()
            with prefill:
                with hub.kernel("attention"):
                    gpu.launch(10e-6)
            hub.lane_begin(1)
            tok = hub.kernel_begin("mlp", None, -1)
            tokens += tok != 0
            gpu.launch(20e-6)
            hub.kernel_end(tok)
            hub.next_lane(decode, "sample")
            gpu.launch(5e-6)
            hub.lane_end(2)
            hub.next_step(None, 0)
            gpu.launch(7e-6)
            hub.next_lane("prefill", None)
        self.assertEqual(hub.drain(5.0), 0)
        snap = hub.snapshot()
        counts = {a["name"]: a["count"] for a in snap["lanes"] + snap["kernels"]}
        counters = {k: v for k, v in snap["counters"].items() if not k.startswith("harvest")}  # timing
        return tokens, counts, counters, hub.step_number

    def test_compiled_and_ctypes_agree(self):
        want = self.run_engine(False)
        got = self.run_engine(True)
        # 16 steps: step and next_step each begin one.
        self.assertEqual(got[0], 8)
        self.assertEqual(got[1], {"prefill": 16, "decode": 8, "sample": 8, "other": 0, "attention": 8, "mlp": 8})
        self.assertEqual(got[2]["landed"], 48)
        self.assertEqual(got[3], 16)
        self.assertEqual(got, want)


class ErrorsTest(unittest.TestCase):
    def test_bad_arguments_raise_alike(self):
        for compiled in (False, True):
            with self.subTest(compiled=compiled):
                hub = hub_for(self, compiled, lanes=LANES, level="kernel", kernel_span_every=1)
                hub.install(0, sim=True)
                hub.step()
                for call, exc, msg in [
                    (lambda: hub.lane_begin("nope"), KeyError, "nope"),
                    (lambda: hub.lane_end(2**40), ValueError, "not a lane index"),
                    (lambda: hub.next_lane("decode", "nope"), KeyError, "nope"),
                    (lambda: hub.next_step(2**31, None), ValueError, "not a lane index"),
                    (lambda: hub.next_lane("decode"), TypeError, ""),
                    (lambda: hub.kernel_end(-1), ValueError, "token is -1"),
                    (lambda: hub.kernel_end("x"), ValueError, ""),
                    (lambda: hub.kernel_end(12345), gpuspans.Error, ""),
                    (lambda: hub.kernel_begin(-5), ValueError, "kernel is -5"),
                    (lambda: hub.kernel("k", device=2**40), ValueError, "device"),
                ]:
                    with self.assertRaisesRegex(exc, msg):
                        call()
                # Out-of-range int32 lanes are the hub's to ignore and count.
                hub.lane_begin(99)
                hub.next_lane(-7, 99)
                hub.lane_end(-3)
                self.assertEqual(hub.drain(5.0), 0)

    def test_closed_hub_does_nothing(self):
        for compiled in (False, True):
            with self.subTest(compiled=compiled):
                hub = hub_for(self, compiled, lanes=LANES, level="kernel", kernel_span_every=1)
                hub.install(0, sim=True)
                hub.step()
                step, begin, tok = hub.step, hub.lane_begin, hub.kernel_begin("k")
                self.assertNotEqual(tok, 0)
                hub.close()
                for call in (step, hub.step, lambda: begin(0), lambda: hub.next_lane(0, 1), lambda: hub.next_step(1, 2)):
                    call()
                self.assertFalse(hub.armed)
                self.assertEqual(hub.kernel_begin("k"), 0)
                with self.assertRaises(gpuspans.Error):
                    hub.kernel_end(tok)

    def test_no_reference_leaks(self):
        # Every path through the compiled calls that takes a reference gives
        # it back: names resolved in Python, the no-op context manager, the
        # errors.
        hub = hub_for(self, True, lanes=LANES, level="kernel", kernel_span_every=1000000)
        hub.install(0, sim=True)
        name, lane, no_span = "decode", hub.lane("sample"), _spans._NO_SPAN

        def refs():
            # The lane indices are ints shared across the interpreter (and
            # immortal from 3.12): a leak shows as thousands more references.
            gc.collect()
            ints = tuple(sys.getrefcount(i) for i in range(len(LANES)))
            return (sys.getrefcount(name), sys.getrefcount(lane), sys.getrefcount(no_span)), ints, len(gc.get_objects())

        def loop():
            for _ in range(5000):
                hub.step()
                hub.lane_begin(name)
                hub.next_lane(name, lane)
                hub.next_step(lane, name)
                hub.lane_end(name)
                with hub.kernel("k"):
                    pass
                hub.kernel_end(0)
                try:
                    hub.next_lane(name, "nope")
                except KeyError:
                    pass

        loop()
        before = refs()
        loop()
        after = refs()
        self.assertEqual(before[0], after[0])
        for b, a in zip(before[1], after[1]):
            self.assertLess(abs(a - b), 1000, (before, after))
        self.assertLess(abs(after[2] - before[2]), 100)


class SharedBoundaryTest(unittest.TestCase):
    def test_one_event_per_boundary(self):
        # Shared boundaries: each lane starts exactly where the one before
        # it ended (one event); separate calls leave the host's time between
        # two records as a gap.
        for compiled in (False, True):
            with self.subTest(compiled=compiled):
                hub = hub_for(self, compiled, lanes=LANES, level="kernel", start_times="always")
                gpu = hub.install(0, sim=True)
                hub.step()
                hub.lane_begin("prefill")
                # Each boundary is recorded while the work before it runs,
                # so every span but the first is exactly its work.
                for step in range(10):
                    gpu.launch(1e-3)
                    hub.next_lane("prefill", "decode")
                    gpu.launch(2e-3)
                    hub.next_lane("decode", "sample")
                    gpu.launch(0.5e-3)
                    hub.next_step("sample", "prefill")
                hub.lane_end("prefill")
                self.assertEqual(hub.drain(5.0), 0)
                spans = sorted((s for s in hub.recent_spans() if s.kind == "lane"), key=lambda s: s.start_ns)
                self.assertEqual(len(spans), 31)
                for a, b in zip(spans, spans[1:]):
                    self.assertEqual(a.start_ns + a.duration_ns, b.start_ns, (a, b))
                self.assertEqual([s.name for s in spans[:4]], ["prefill", "decode", "sample", "prefill"])
                self.assertEqual(hub.step_number, 11)
                self.assertEqual(lanes(hub.snapshot())["decode"], (10, 10 * 2000000))
                self.assertEqual(lanes(hub.snapshot())["sample"], (10, 10 * 500000))

    def test_disabled_path_makes_no_call(self):
        for compiled in (False, True):
            with self.subTest(compiled=compiled):
                hub = hub_for(self, compiled, lanes=LANES, level="off")
                lib = gpuspans.library()
                if not hasattr(lib, "gs_hub_testing_crossings"):
                    self.skipTest("the library has no test hooks: build it with -tags gpuspans_testing")
                lib.gs_hub_testing_count_crossings(1)
                try:
                    before = lib.gs_hub_testing_crossings()
                    for _ in range(20000):
                        hub.next_step("sample", "prefill")
                        hub.next_lane("prefill", "decode")
                        hub.lane_begin("decode")
                        hub.lane_end("decode")
                        hub.kernel_end(hub.kernel_begin("k"))
                        with hub.kernel("k"):
                            pass
                    self.assertEqual(lib.gs_hub_testing_crossings(), before)
                finally:
                    lib.gs_hub_testing_count_crossings(0)


class CSpanPathTest(unittest.TestCase):
    """The lane calls on a CUDA device record in C (go/capi's spanpath.c),
    here on the fake driver of the tests' library: no crossing into Go,
    and every span its work."""

    def setUp(self):
        self.lib = lib = gpuspans.library()
        if not hasattr(lib, "gs_testing_use_fake_driver"):
            self.skipTest("the library has no fake driver: build it with -tags gpuspans_testing")
        lib.gs_testing_use_fake_driver()
        self.addCleanup(lib.gs_testing_use_real_driver)
        lib.gs_testing_fake_stream_work.argtypes = [ctypes.c_uint64, ctypes.c_int64]
        lib.gs_testing_fake_advance.argtypes = [ctypes.c_int64]

    def test_span_path_is_chosen_by_name(self):
        # GPUSPANS_SPAN_PATH: a value the library does not know refuses
        # every hub, naming it (TestSpanPath runs "c" and "go").
        code, out, err, _ = run_child(
            """
            import os
            os.environ["GPUSPANS_SPAN_PATH"] = "fast"  # after the start: the library reads it all the same
            import gpuspans
            try:
                gpuspans.Hub(quiet=True)
            except gpuspans.Error as e:
                print("refused:", e)
            print("ready")
            """
        )
        self.assertEqual(code, 0, err)
        self.assertIn('gs_hub_create: GPUSPANS_SPAN_PATH is "fast": want c', out)

    def test_lanes_in_c(self):
        stream = 0x5100
        work = {"prefill": 30000, "decode": 40000, "sample": 10000}
        hub = hub_for(self, True, lanes=LANES, level="kernel")
        hub.install(0, stream)
        hub.step()  # opens the pool on the fake driver
        lib = self.lib
        lib.gs_hub_testing_count_crossings(1)
        self.addCleanup(lib.gs_hub_testing_count_crossings, 0)
        before = lib.gs_hub_testing_crossings()
        hub.lane_begin("prefill")
        for step in range(20):
            lib.gs_testing_fake_stream_work(stream, work["prefill"])
            hub.next_lane("prefill", "decode")
            lib.gs_testing_fake_stream_work(stream, work["decode"])
            hub.next_lane("decode", "sample")
            lib.gs_testing_fake_stream_work(stream, work["sample"])
            hub.lane_end("sample")
            lib.gs_testing_fake_advance(200000)
            if step < 19:
                hub.lane_begin("prefill")
        self.assertEqual(lib.gs_hub_testing_crossings(), before, "a lane call crossed into Go")
        lib.gs_testing_fake_advance(10**9)
        self.assertEqual(hub.drain(5.0), 0)
        got = lanes(hub.snapshot())
        for name, ns in work.items():
            self.assertEqual(got[name], (20, 20 * ns), name)
        hub.close()


if __name__ == "__main__":
    unittest.main()


class HostileArgumentsTest(unittest.TestCase):
    """One outcome per argument on both paths: every span call with a set of
    hostile lane arguments (ints at and past int32's edges, floats, names
    good and bad, None, bytes, objects, and Lanes whose index the caller
    changed to each of those), the same result or exception type from the
    compiled calls and from ctypes'."""

    VALUES = [0, 1, 2, 3, 99, -1, -3, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**40, -(2**40), 2**63, 2**64,
              -(2**64), True, False, 1.0, 1.5, float("nan"), float("inf"), "prefill", "decode", "sample", "other",
              "nope", "", "de\x00code", None, b"decode", bytearray(b"x"), object(), [], (), {}, 1j]

    def outcomes(self, compiled):
        hub = hub_for(self, compiled, lanes=LANES, level="kernel", kernel_span_every=1)
        hub.install(0, sim=True)
        hub.step()
        args = list(self.VALUES)
        for v in self.VALUES:
            lane = _spans.Lane(hub, 1, "decode")
            lane.index = v
            args.append(lane)
        calls = [("lane_begin", lambda a: hub.lane_begin(a)), ("lane_end", lambda a: hub.lane_end(a)),
                 ("next_lane from", lambda a: hub.next_lane(a, "sample")),
                 ("next_lane to", lambda a: hub.next_lane("prefill", a)),
                 ("next_step last", lambda a: hub.next_step(a, None)),
                 ("next_step first", lambda a: hub.next_step(None, a))]
        out = {}
        for i, a in enumerate(args):
            for name, call in calls:
                try:
                    out[(i, name)] = ("ok", call(a))
                except Exception as e:  # noqa: BLE001: the outcome is what is compared
                    out[(i, name)] = ("raises", type(e).__name__)
        for lane in LANES:
            hub.lane_end(lane)
        self.assertEqual(hub.drain(5.0), 0)
        counters = hub.snapshot()["counters"]
        return out, {k: v for k, v in counters.items() if not k.startswith("harvest")}

    def test_one_outcome_per_argument(self):
        want, want_counters = self.outcomes(False)
        got, got_counters = self.outcomes(True)
        self.assertGreaterEqual(len(want), 400)
        differ = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
        self.assertEqual(differ, {}, f"{len(differ)} of {len(want)} outcomes differ (argument index, call): (ctypes, compiled)")
        self.assertEqual(got_counters, want_counters)
        # A Lane whose index is no int32 is refused by both, never wrapped.
        lane_at = len(self.VALUES) + self.VALUES.index(2**40)
        self.assertEqual(want[(lane_at, "lane_begin")], ("raises", "ValueError"))

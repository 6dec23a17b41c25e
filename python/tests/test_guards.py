"""The binding's guards against hostile or careless use: fork, dropped hubs,
out-of-range integers, NUL characters, stale kernel tokens, Ctrl-C during
drain. On the simulated GPU, against the c-shared library."""

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time
import unittest

import gpuspans
from gpuspans import _lib, _process

PYTHONPATH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_child(code, timeout=30, sig=None, sig_after=None):
    """Runs code in a fresh interpreter; with sig, sends it sig_after seconds
    after the child prints "ready". Returns (returncode, stdout, stderr,
    seconds from ready to exit)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [PYTHONPATH, env.get("PYTHONPATH", "")] if p)
    p = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, text=True)
    try:
        line = p.stdout.readline()
        if line.strip() != "ready":
            out, err = p.communicate(timeout=timeout)
            return p.returncode, line + out, err, 0.0
        ready = time.monotonic()
        if sig is not None:
            time.sleep(sig_after)
            p.send_signal(sig)
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err, time.monotonic() - ready
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


class ForkTest(unittest.TestCase):
    def test_forked_child_refuses_clearly(self):
        # Before the guard the child hung at its first call into the
        # library, whose Go runtime's threads were not forked.
        code, out, err, _ = run_child(
            """
            import os, sys
            import gpuspans
            hub = gpuspans.Hub(level="kernel", kernel_span_every=1, quiet=True)
            hub.install(0, 1, sim=True)
            hub.step()
            print("ready", flush=True)
            pid = os.fork()
            if pid == 0:
                results = []
                for name, call in [
                    ("step", hub.step),
                    ("lane", lambda: hub.lane_begin("decode")),
                    ("next lane", lambda: hub.next_lane("prefill", "decode")),
                    ("next step", lambda: hub.next_step("decode", "prefill")),
                    ("level", lambda: hub.level),
                    ("snapshot", hub.snapshot),
                    ("kernel", lambda: hub.kernel("k")),
                    ("new hub", lambda: gpuspans.Hub(quiet=True)),
                ]:
                    try:
                        call()
                        results.append(name + ": no error")
                    except gpuspans.Error as e:
                        forked = "forked" in str(e) and e.status == 7 and e.name == "GS_HUB_ERR_FORKED"
                        results.append(name + (": refused" if forked else ": " + str(e)))
                hub.close()  # forgets; the parent's hub is the parent's to close
                print("child " + "; ".join(results), flush=True)
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            hub.step()
            with hub.lane("decode"):
                pass
            print("parent level", hub.level.name, "child status", status, flush=True)
            hub.close()
            """,
            timeout=30,
        )
        self.assertEqual(code, 0, f"stdout {out!r}, stderr {err!r}")
        self.assertIn("child step: refused; lane: refused; next lane: refused; next step: refused; level: refused; snapshot: refused; kernel: refused; new hub: refused", out)
        self.assertIn("parent level KERNEL child status 0", out)


class FinalizerTest(unittest.TestCase):
    def test_dropped_hubs_are_closed(self):
        # Without a finalizer, 64 hubs dropped without close() filled the
        # table for good.
        for _ in range(3 * _lib.MAX_HUBS):
            hub = gpuspans.Hub(quiet=True)
            hub.lane("decode")  # a Lane holds its hub: a reference cycle
            del hub
        gc.collect()
        gpuspans.Hub(quiet=True).close()

    def test_dropped_hub_with_a_span_open_does_not_block_the_collector(self):
        # The finalizer's close lands spans in flight for up to 1 s; run by
        # the collector, it blocked whichever thread collected (70 such
        # hubs took 70 s of gc.collect()).
        for _ in range(20):
            hub = gpuspans.Hub(level="kernel", kernel_span_every=1, quiet=True)
            hub.install(0, sim=True)
            hub.step()
            hub.lane_begin("decode")
            token = hub.kernel_begin("k")
            self.assertNotEqual(token, 0)
            hub.lane("decode")  # a reference cycle: only the collector frees it
            del hub
        t0 = time.monotonic()
        gc.collect()
        took = time.monotonic() - t0
        self.assertLess(took, 0.5, f"gc.collect() took {took:.2f} s")
        _process._wait_closing(10.0)
        self.assertEqual(len(_process._closing), 0)
        gpuspans.Hub(quiet=True).close()

    def test_close_then_drop(self):
        hub = gpuspans.Hub(quiet=True)
        hub.close()
        del hub
        gc.collect()


class RangeTest(unittest.TestCase):
    def test_out_of_range_ints_are_refused(self):
        with self.assertRaisesRegex(ValueError, "slots is 4294967304"):
            gpuspans.Hub(slots=2**32 + 8)
        with self.assertRaisesRegex(ValueError, "kernel_span_every"):
            gpuspans.Hub(kernel_span_every=2**32 + 1)
        # Not integers: refused by name, never truncated or a bare int() error.
        for bad in (7.5, float("nan"), float("inf"), "x", None):
            with self.assertRaisesRegex(ValueError, "kernel_labels is .*want an integer"):
                gpuspans.Hub(kernel_labels=bad)
        with self.assertRaisesRegex(ValueError, "at most about 292 years"):
            gpuspans.Hub(kernel_window_every=1e300)
        with gpuspans.Hub(level="kernel", kernel_span_every=1, quiet=True) as hub:
            with self.assertRaisesRegex(ValueError, "device is 4294967296"):
                hub.install(2**32, sim=True)  # would have installed device 0
            with self.assertRaisesRegex(ValueError, "device"):
                hub.uninstall(-(2**40))
            with self.assertRaisesRegex(ValueError, "kernel is -1"):
                hub.register_kernel(-1, "k")
            with self.assertRaisesRegex(ValueError, "kernel_span_every"):
                hub.set_kernel_span_every(2**32 + 1)  # would have been 1
            with self.assertRaisesRegex(ValueError, "stream handle"):
                hub.install(0, 2**64, sim=True)
            gpu = hub.install(0, 1, sim=True)
            with self.assertRaisesRegex(ValueError, "seconds"):
                gpu.launch(1e300)
            with self.assertRaisesRegex(ValueError, "finite"):
                gpu.launch(float("nan"))
            with self.assertRaisesRegex(ValueError, "event_offset"):
                hub.install(1, 1, sim=True, event_offset=float("inf"))
            hub.step()
            with self.assertRaisesRegex(ValueError, "lane 4294967296"):
                hub.lane_begin(2**32)  # would have been lane 0
            with self.assertRaisesRegex(ValueError, "kernel is 18446744073709551616"):
                hub.kernel_begin(2**64)
            with self.assertRaisesRegex(ValueError, "token"):
                hub.kernel_end(2**64 + 1)
            with self.assertRaisesRegex(ValueError, "drain timeout"):
                hub.drain(float("nan"))
            self.assertEqual(hub.snapshot()["counters"]["unknown_lane_calls"], 0)


class NulTest(unittest.TestCase):
    def test_nul_is_refused(self):
        with self.assertRaisesRegex(ValueError, "NUL"):
            gpuspans.Hub(lanes=["pre\x00fill"])
        with gpuspans.Hub(quiet=True) as hub:
            # It served with no token: C read the token as "".
            with self.assertRaisesRegex(ValueError, "token .* NUL"):
                hub.serve("127.0.0.1:0", token="\x00secret")
            with self.assertRaisesRegex(ValueError, "addr .* NUL"):
                hub.serve("127.0.0.1:0\x00junk")
            with self.assertRaisesRegex(ValueError, "kernel name .* NUL"):
                hub.register_kernel(1, "attn\x00ention")

    def test_protect_reads_needs_a_token(self):
        with gpuspans.Hub(quiet=True) as hub:
            with self.assertRaisesRegex(gpuspans.Error, "needs a token"):
                hub.serve("127.0.0.1:0", protect_reads=True)


class KernelSpanTest(unittest.TestCase):
    def test_with_block_does_not_raise_for_a_stale_token(self):
        with gpuspans.Hub(level="kernel", kernel_span_every=1, quiet=True) as hub:
            hub.install(0, 1, sim=True)
            hub.step()
            with hub.kernel("k") as span:
                hub.kernel_end(span._token)  # ended (or reclaimed) before the block ends
            with self.assertRaisesRegex(gpuspans.Error, "not a kernel span open"):
                hub.kernel_end(span._token)  # the explicit form still says so

    def test_tokens_stay_with_their_hub(self):
        with gpuspans.Hub(level="kernel", kernel_span_every=1, quiet=True) as a, \
                gpuspans.Hub(level="kernel", kernel_span_every=1, quiet=True) as b:
            for h in (a, b):
                h.install(0, 1, sim=True)
                h.step()
            ta, tb = a.kernel_begin(7), b.kernel_begin(7)
            with self.assertRaisesRegex(gpuspans.Error, "another hub"):
                b.kernel_end(ta)
            b.kernel_end(tb)
            a.kernel_end(ta)


class DrainInterruptTest(unittest.TestCase):
    def test_ctrl_c_interrupts_drain(self):
        # drain(30) was one 30-second call into Go: Ctrl-C waited for it.
        code, out, err, took = run_child(
            """
            import sys
            import gpuspans
            hub = gpuspans.Hub(level="kernel", kernel_span_every=1, quiet=True)
            gpu = hub.install(0, 1, sim=True)
            hub.step()
            gpu.launch(120.0)  # lands in two minutes
            with hub.lane("decode"):
                pass
            print("ready", flush=True)
            try:
                hub.drain(30.0)
                print("drained", flush=True)
            except KeyboardInterrupt:
                print("KeyboardInterrupt", flush=True)
            sys.exit(0)
            """,
            timeout=60,
            sig=signal.SIGINT,
            sig_after=0.5,
        )
        self.assertEqual(code, 0, f"stdout {out!r}, stderr {err!r}")
        self.assertIn("KeyboardInterrupt", out)
        self.assertLess(took, 10.0, "Ctrl-C waited for drain to time out")


if __name__ == "__main__":
    unittest.main()

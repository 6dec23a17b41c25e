"""Ctrl-C still raises KeyboardInterrupt in a process that loaded the
library: the Go runtime of a c-shared library installs no SIGINT handler
(os/signal: only synchronous signals and SIGPIPE, unless Notify is called),
and keeps Python's, adding SA_ONSTACK."""

import os
import signal
import subprocess
import sys
import textwrap
import unittest

CHILD = textwrap.dedent(
    """
    import sys, time
    import gpuspans
    hub = gpuspans.Hub(level="kernel", kernel_span_every=1, quiet=True)
    gpu = hub.install(0, 1, sim=True)
    addr = hub.serve("127.0.0.1:0")  # Go threads busy too
    try:
        print("ready", flush=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            hub.step()
            with hub.lane("decode"):
                with hub.kernel("k"):
                    gpu.launch(1e-5)
            hub.drain(0.001)  # time spent inside Go calls
        print("no signal", flush=True)
        sys.exit(3)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", flush=True)
        hub.close()
        sys.exit(0)
    """
)


class SigintTest(unittest.TestCase):
    def run_child(self, sig):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), env.get("PYTHONPATH", "")] if p)
        p = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        try:
            line = p.stdout.readline()
            self.assertEqual(line.strip(), "ready", p.stderr.read() if not line else line)
            p.send_signal(sig)
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        return p.returncode, out, err

    def test_sigint_raises_keyboard_interrupt(self):
        for _ in range(3):  # the signal lands at different points of the loop
            code, out, err = self.run_child(signal.SIGINT)
            self.assertEqual(code, 0, f"stdout {out!r}, stderr {err!r}")
            self.assertIn("KeyboardInterrupt", out)

    def test_sigterm_still_terminates(self):
        code, out, err = self.run_child(signal.SIGTERM)
        self.assertEqual(code, -signal.SIGTERM, f"stdout {out!r}, stderr {err!r}")


if __name__ == "__main__":
    unittest.main()

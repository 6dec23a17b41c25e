"""Hubs' log lines on the logging logger "gpuspans", through a real
handler: delivered in order, never blocking the engine, drops counted."""

import logging
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

import gpuspans


class Collect(logging.Handler):
    """Keeps every record; with a gate, the first emit waits for it, as a
    handler stuck on a slow disk or socket would."""

    def __init__(self, gate=None):
        super().__init__(logging.DEBUG)
        self.records = []
        self.gate = gate
        self.cond = threading.Condition()

    def emit(self, record):
        if self.gate is not None:
            self.gate.wait(30)
        with self.cond:
            self.records.append(record)
            self.cond.notify_all()

    def wait(self, n, timeout=10.0):
        with self.cond:
            self.cond.wait_for(lambda: len(self.records) >= n, timeout)
            return list(self.records)


def set_level(addr, value):
    req = urllib.request.Request(f"http://{addr}/control/level", data=value.encode(), method="PUT")
    with urllib.request.urlopen(req, timeout=5) as r:
        r.read()


class LogsTest(unittest.TestCase):
    def handler(self, gate=None):
        h = Collect(gate)
        gpuspans.logger.addHandler(h)
        self.addCleanup(gpuspans.logger.removeHandler, h)
        old = gpuspans.logger.level
        gpuspans.logger.setLevel(logging.DEBUG)
        self.addCleanup(gpuspans.logger.setLevel, old)
        return h

    def test_lines_reach_the_logger(self):
        h = self.handler()
        with gpuspans.Hub(lanes=["decode"], level="step") as hub:
            addr = hub.serve("127.0.0.1:0")
            set_level(addr, "kernel")
            set_level(addr, "off")
            records = h.wait(2)
            handle = hub._h
        self.assertEqual(len(records), 2, [r.getMessage() for r in records])
        for r, (old, new) in zip(records, [("step", "kernel"), ("kernel", "off")]):
            self.assertEqual(r.name, "gpuspans")
            self.assertEqual(r.levelno, logging.INFO)
            self.assertIn(f"level {old} -> {new}", r.getMessage())
            self.assertEqual(r.gpuspans_hub, handle)
            self.assertNotEqual(r.thread, threading.get_ident(), "delivered on the engine's thread")

    def test_quiet_logs_nothing(self):
        h = self.handler()
        with gpuspans.Hub(lanes=["decode"], level="step", quiet=True) as hub:
            addr = hub.serve("127.0.0.1:0")
            set_level(addr, "kernel")
            self.assertEqual(hub.level, gpuspans.Level.KERNEL)
        time.sleep(0.2)
        self.assertEqual(h.records, [])

    def test_a_stuck_handler_blocks_nothing_and_drops_are_counted(self):
        gate = threading.Event()
        self.addCleanup(gate.set)
        h = self.handler(gate)
        n = 400  # more than the library's queue of 256
        with gpuspans.Hub(lanes=["decode"], level="step") as hub:
            addr = hub.serve("127.0.0.1:0")
            for i in range(n):
                set_level(addr, "kernel" if i % 2 == 0 else "step")
            # The hub works on while the handler is stuck.
            t0 = time.monotonic()
            for _ in range(1000):
                hub.step()
            # Blocked on the stuck handler, it would wait for good.
            self.assertLess(time.monotonic() - t0, 60.0)
            self.assertEqual(hub.snapshot()["step"], 1000)
            dropped = hub.log_lines_dropped
            # The first line is held by the stuck handler, 256 wait in the
            # queue, the rest are dropped.
            self.assertGreaterEqual(dropped, n - 256 - 1)
            self.assertEqual(h.records, [])
            gate.set()
            records = h.wait(n - dropped + 1)
            self.assertEqual(hub.log_lines_dropped, dropped)
        messages = [r.getMessage() for r in records]
        self.assertEqual(len(messages), n - dropped + 1, messages[-3:])
        lost = [m for m in messages if "log lines dropped" in m]
        self.assertEqual(lost, [f"gpuspans: {dropped} log lines dropped: the log callback did not keep up"])
        warn = next(r for r in records if "log lines dropped" in r.getMessage())
        self.assertEqual(warn.levelno, logging.WARNING)
        # The first lines, in order (the changes alternate); the rest were
        # the dropped ones.
        changes = [m for m in messages if "control: level" in m]
        self.assertEqual(len(changes), n - dropped)
        for i, m in enumerate(changes):
            self.assertIn("level step -> kernel" if i % 2 == 0 else "level kernel -> step", m, i)

    def test_close_delivers_what_is_queued(self):
        gate = threading.Event()
        h = self.handler(gate)
        hub = gpuspans.Hub(lanes=["decode"], level="step")
        addr = hub.serve("127.0.0.1:0")
        for v in ("kernel", "off", "step"):
            set_level(addr, v)
        threading.Timer(0.2, gate.set).start()
        hub.close()  # waits for the handler, then delivers the rest
        self.assertEqual(len(h.records), 3, [r.getMessage() for r in h.records])

    def test_close_bounds_delivery_to_a_stuck_handler(self):
        h = self.handler(threading.Event())  # never set: each emit waits...
        h.gate.wait = lambda timeout: time.sleep(1.5)  # ...1.5 s
        hub = gpuspans.Hub(lanes=["decode"], level="step")
        addr = hub.serve("127.0.0.1:0")
        for i in range(6):
            set_level(addr, "kernel" if i % 2 == 0 else "step")
        t0 = time.monotonic()
        hub.close()  # the call running (1.5 s), then 1 s of delivery at most
        took = time.monotonic() - t0
        self.assertLess(took, 5.0, "close waited for every queued line")
        self.assertLess(len(h.records), 6)

    def test_exit_without_close_while_lines_flow(self):
        # The library's thread must not call into an interpreter that is
        # finalizing: atexit takes the callback off first.
        program = """if True:
            import logging, threading, urllib.request, gpuspans
            logging.basicConfig(level=logging.INFO)
            hub = gpuspans.Hub(lanes=["decode"], level="step")
            addr = hub.serve("127.0.0.1:0")
            def put(v):
                req = urllib.request.Request(f"http://{addr}/control/level", data=v.encode(), method="PUT")
                urllib.request.urlopen(req, timeout=5).read()
            for i in range(100):
                put("kernel" if i % 2 == 0 else "step")
            print("exiting")
        """
        for _ in range(3):
            r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            self.assertIn("exiting", r.stdout)
            self.assertIn("control: level", r.stderr)


if __name__ == "__main__":
    unittest.main()

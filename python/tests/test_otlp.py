"""Hub.start_otlp and link_requests against an OTLP/HTTP receiver on
loopback: the steps' spans arrive, linked to their requests, and stopping
sends what is left."""

import http.server
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
import unittest

import gpuspans

# The end-to-end tests' OTLP/HTTP receiver (tools/e2e/otlpsink.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "e2e"))
from otlpsink import OTLPHandler  # noqa: E402


class Receiver(OTLPHandler):
    """Keeps each POST's path, content type and body, and its x-tenant."""

    def take(self, body):
        with self.server.lock:
            self.server.posts.append((self.path, self.headers.get("Content-Type"), body))
            self.server.headers.append(self.headers.get("x-tenant"))
        return None


class OTLPTest(unittest.TestCase):
    def receiver(self):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        srv.posts, srv.headers, srv.lock = [], [], threading.Lock()
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        self.addCleanup(srv.server_close)
        self.addCleanup(t.join, 5)
        self.addCleanup(srv.shutdown)
        return srv

    def test_linked_spans_reach_the_receiver(self):
        srv = self.receiver()
        trace_id = 0x0AF7651916CD43DD8448EB211C80319C
        span_id = 0xB7AD6B7169203331
        with gpuspans.Hub(lanes=["prefill", "decode"], level="kernel", kernel_span_every=2, quiet=True) as hub:
            gpu = hub.install(0, 1, sim=True)
            hub.start_otlp(f"http://127.0.0.1:{srv.server_port}", service_name="py-engine", sample_every=2, poll_every=0.05)
            with self.assertRaises(gpuspans.Error) as e:
                hub.start_otlp(f"http://127.0.0.1:{srv.server_port}")
            self.assertEqual(e.exception.name, "GS_HUB_ERR_LIMIT")
            linked = []
            for _ in range(10):
                hub.step()
                step = hub.step_number
                hub.link_requests(step, [(trace_id, span_id)])
                linked.append(step)
                with hub.lane("decode"):
                    with hub.kernel("attention"):
                        gpu.launch(2e-5)
            self.assertEqual(linked, list(range(1, 11)))
            self.assertEqual(hub.drain(5.0), 0)
            hub.stop_otlp(5.0)
            hub.stop_otlp()  # none runs: fine
            metrics = hub.metrics_text()
        with srv.lock:
            posts = list(srv.posts)
        self.assertTrue(posts, "nothing received")
        body = b"".join(b for _, _, b in posts)
        for path, ctype, _ in posts:
            self.assertEqual(path, "/v1/traces")
            self.assertEqual(ctype, "application/x-protobuf")
        # Protobuf carries strings and ids as raw bytes.
        for want in (b"gpu step", b"decode", b"attention", b"py-engine"):
            self.assertIn(want, body)
        # A link: its trace_id (field 1) and span_id (field 2).
        link = b"\n\x10" + trace_id.to_bytes(16, "big") + b"\x12\x08" + span_id.to_bytes(8, "big")
        self.assertEqual(body.count(link), 5, "want a link to the request on each sampled step's lane span")
        # 5 sampled steps (2, 4, ..., 10): a root, a lane span and a kernel span each.
        self.assertIn("gpuspans_otlp_spans_exported_total 15", metrics)

    def test_bad_arguments(self):
        with gpuspans.Hub(quiet=True) as hub:
            for bad in ("ftp://x", "127.0.0.1:4318", "grpc://127.0.0.1:4317"):
                with self.assertRaises(gpuspans.Error) as e:
                    hub.start_otlp(bad)
                self.assertEqual(e.exception.name, "GS_HUB_ERR_INVALID_ARGUMENT")
            for bad in ("udp", "GRPC", "http/json"):
                with self.assertRaises(gpuspans.Error) as e:
                    hub.start_otlp("http://127.0.0.1:1", protocol=bad)
                self.assertEqual(e.exception.name, "GS_HUB_ERR_INVALID_ARGUMENT")
                self.assertIn(repr(bad).replace("'", '"'), str(e.exception))
            with self.assertRaises(ValueError):
                hub.start_otlp("http://127.0.0.1:1", sample_every=0)
            with self.assertRaises(ValueError):
                hub.start_otlp("http://127.0.0.1:1", poll_every=float("nan"))
            for bad in ([(0, 1)], [(1, 0)], [(1 << 128, 1)], [(1, 2)] * 1025):
                with self.assertRaises(ValueError):
                    hub.link_requests(1, bad)
            hub.link_requests(1, [(1, 2)])  # no exporter: nothing done
            with self.assertRaises(ValueError):
                hub.stop_otlp(-1)

    def test_an_unreachable_collector_blocks_nothing(self):
        with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, quiet=True) as hub:
            gpu = hub.install(0, 1, sim=True)
            hub.start_otlp("http://127.0.0.1:1", sample_every=1, poll_every=0.01)
            t0 = time.monotonic()
            for _ in range(200):
                hub.step()
                with hub.lane("decode"):
                    gpu.launch(1e-6)
            # A step that waited for the exporter would wait for its 10 s
            # timeout; 200 of them for over half an hour.
            self.assertLess(time.monotonic() - t0, 60.0)
            hub.drain(5.0)
            hub.stop_otlp(0.5)
            # The stopped exporter's counts stay.
            self.assertRegex(hub.metrics_text(), r"\ngpuspans_otlp_export_errors_total [1-9]")
            self.assertRegex(hub.metrics_text(), r"\ngpuspans_otlp_spans_exported_total 0\n")

    def test_protocol_mismatch_is_named(self):
        # gRPC sent to an OTLP/HTTP port: the log says so, with the fix.
        srv = self.receiver()
        h = Capture()
        gpuspans.logger.addHandler(h)
        self.addCleanup(gpuspans.logger.removeHandler, h)
        with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, quiet=False) as hub:
            gpu = hub.install(0, 1, sim=True)
            hub.start_otlp(f"http://127.0.0.1:{srv.server_port}", protocol="grpc", sample_every=1, poll_every=0.01)
            for _ in range(20):
                hub.step()
                with hub.lane("decode"):
                    gpu.launch(1e-6)
            hub.drain(5.0)
            hub.stop_otlp(2.0)
            metrics = hub.metrics_text()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not any("protocol mismatch" in m for m in h.lines()):
                time.sleep(0.01)
        self.assertRegex(metrics, r"\ngpuspans_otlp_export_errors_total [1-9]")
        self.assertRegex(metrics, r'\ngpuspans_otlp_spans_dropped_total\{reason="export_failed"\} [1-9]')
        want = f"protocol mismatch: the collector at 127.0.0.1:{srv.server_port} speaks OTLP/HTTP, not gRPC: use protocol http/protobuf"
        self.assertTrue(any(want in m for m in h.lines()), f"no log line with {want!r} in {h.lines()}")
        with srv.lock:
            self.assertEqual(srv.posts, [], "the HTTP receiver got a gRPC request as a POST")

    def test_from_the_environment(self):
        # No argument: endpoint, service and resource from OTEL_*, read as
        # the process had them when the library loaded (a child process).
        srv = self.receiver()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [PYTHONPATH, env.get("PYTHONPATH", "")] if p)
        env.update({
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{srv.server_port}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=py%20env",
            "OTEL_SERVICE_NAME": "py-env-engine",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=py-ci",
        })
        code = textwrap.dedent("""
            import gpuspans
            with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, quiet=True) as hub:
                gpu = hub.install(0, 1, sim=True)
                hub.start_otlp(sample_every=1, poll_every=0.01)
                for _ in range(5):
                    hub.step()
                    with hub.lane("decode"):
                        gpu.launch(1e-6)
                hub.drain(5.0)
                hub.stop_otlp(5.0)
                print(hub.metrics_text())
        """)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"\ngpuspans_otlp_spans_exported_total [1-9]")
        with srv.lock:
            posts = list(srv.posts)
            headers = list(srv.headers)
        body = b"".join(b for _, _, b in posts)
        for want in (b"py-env-engine", b"deployment.environment.name", b"py-ci", b"host.name", b"service.instance.id"):
            self.assertIn(want, body)
        self.assertIn("py env", headers)

    def test_no_endpoint_anywhere(self):
        if any(k in os.environ for k in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
            self.skipTest("an OTLP endpoint is set in the environment")
        with gpuspans.Hub(quiet=True) as hub:
            for endpoint in (None, ""):
                with self.assertRaises(gpuspans.Error) as e:
                    hub.start_otlp(endpoint)
                self.assertEqual(e.exception.name, "GS_HUB_ERR_INVALID_ARGUMENT")
                self.assertIn("OTEL_EXPORTER_OTLP_ENDPOINT", str(e.exception))


PYTHONPATH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Capture(logging.Handler):
    """Keeps the messages of the records it handles."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self._lock2 = threading.Lock()
        self._lines = []

    def emit(self, record):
        with self._lock2:
            self._lines.append(record.getMessage())

    def lines(self):
        with self._lock2:
            return list(self._lines)


if __name__ == "__main__":
    unittest.main()

"""gpuspans.prometheus: the hub's families on an engine's prometheus_client
registry, served by the engine's own /metrics. Needs prometheus_client
(Debian: python3-prometheus-client); skipped without it."""

import threading
import unittest
import urllib.request
import wsgiref.simple_server

import gpuspans

try:
    import prometheus_client
    from prometheus_client.parser import text_string_to_metric_families

    import gpuspans.prometheus
except ImportError:
    prometheus_client = None


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def samples(text):
    """{(name, sorted labels): value} of a text exposition."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@unittest.skipIf(prometheus_client is None, "prometheus_client not installed (Debian: python3-prometheus-client)")
class PrometheusTest(unittest.TestCase):
    def hub(self):
        hub = gpuspans.Hub(lanes=["prefill", "decode"], level="kernel", kernel_span_every=2, quiet=True)
        self.addCleanup(hub.close)
        gpu = hub.install(0, 3, sim=True)
        for _ in range(20):
            hub.step()
            with hub.lane("prefill"):
                gpu.launch(3e-4)
            with hub.lane("decode"):
                with hub.kernel("attention"):
                    gpu.launch(5e-5)
        self.assertEqual(hub.drain(5.0), 0)
        return hub

    def engine(self, registry):
        """An engine's /metrics: prometheus_client's WSGI app on a loopback
        port; returns a function that scrapes it."""
        srv = wsgiref.simple_server.make_server("127.0.0.1", 0, prometheus_client.make_wsgi_app(registry),
                                                handler_class=_QuietHandler)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        self.addCleanup(srv.server_close)
        self.addCleanup(t.join, 5)
        self.addCleanup(srv.shutdown)
        url = f"http://127.0.0.1:{srv.server_port}/metrics"

        def scrape():
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read().decode()

        return scrape

    def test_the_engines_metrics_carry_the_hubs_families(self):
        hub = self.hub()
        reg = prometheus_client.CollectorRegistry()
        requests = prometheus_client.Counter("engine_requests", "The engine's own counter.", registry=reg)
        requests.inc(7)
        gpuspans.prometheus.register(hub, reg)
        scrape = self.engine(reg)
        self.assertNotIn("gpuspans_kernel_duration_seconds", scrape(), "kernel histograms without set_metrics")
        hub.set_metrics(kernel_histograms=True)
        got = samples(scrape())
        self.assertEqual(got[("engine_requests_total", ())], 7)
        lane = (("device", "0"), ("lane", "decode"))
        self.assertEqual(got[("gpuspans_lane_duration_seconds_count", lane)], 20)
        self.assertEqual(got[("gpuspans_lane_duration_seconds_bucket", lane + (("le", "+Inf"),))], 20)
        self.assertAlmostEqual(got[("gpuspans_lane_duration_seconds_sum", lane)], 20 * 5e-5, delta=20 * 5e-5)
        kernel = (("device", "0"), ("kernel", "attention"))
        self.assertEqual(got[("gpuspans_kernel_duration_seconds_count", kernel)], 10)
        self.assertEqual(got[("gpuspans_steps_total", ())], 20)
        self.assertEqual(got[("gpuspans_spans_landed_total", (("device", "0"),))], 50)
        self.assertEqual(got[("gpuspans_device_up", (("device", "0"),))], 1)
        self.assertEqual(got[("gpuspans_level_info", (("level", "kernel"),))], 1)
        # Buckets cumulative, the decode lane's median where its work puts it.
        buckets = sorted((float(dict(k[1])["le"]), v) for k, v in got.items()
                         if k[0] == "gpuspans_lane_duration_seconds_bucket" and dict(k[1])["lane"] == "decode")
        self.assertEqual(len(buckets), 26, "25 bounds from 2^-20 s to 16 s, and +Inf")
        self.assertEqual([v for _, v in buckets], sorted(v for _, v in buckets))
        median = next(le for le, v in buckets if v >= 10)
        self.assertTrue(5e-5 <= median <= 5e-5 * 1.5, median)
        self.assertFalse(any(k[0].startswith(("go_", "process_")) for k in got))

    def test_the_same_series_as_the_hubs_own_metrics(self):
        hub = self.hub()
        hub.set_metrics(kernel_histograms=True, classic_buckets=8)
        reg = prometheus_client.CollectorRegistry()
        gpuspans.prometheus.register(hub, reg)
        ours = samples(prometheus_client.generate_latest(reg).decode())
        with urllib.request.urlopen(f"http://{hub.serve('127.0.0.1:0')}/metrics", timeout=5) as r:
            served = {k: v for k, v in samples(r.read().decode()).items() if k[0].startswith("gpuspans_")}
        # A harvest between the two reads moves only the harvest counters.
        moving = ("gpuspans_harvests_total", "gpuspans_harvest_seconds_total", "gpuspans_harvests_skipped_total")
        self.assertEqual({k for k in ours}, {k for k in served})
        self.assertEqual({k: v for k, v in ours.items() if k[0] not in moving},
                         {k: v for k, v in served.items() if k[0] not in moving})
        # 2 lanes and a kernel, 193 classic bounds each.
        self.assertGreater(len(ours), 3 * 196)
        self.assertIn(("gpuspans_kernel_duration_seconds_count", (("device", "0"), ("kernel", "attention"))), ours)

    def test_constant_labels_on_every_series(self):
        hub = self.hub()
        hub.set_metric_labels({"model_name": "llama-3-70b"})
        reg = prometheus_client.CollectorRegistry()
        gpuspans.prometheus.register(hub, reg)
        got = samples(prometheus_client.generate_latest(reg).decode())
        self.assertGreater(len(got), 20)
        for name, labels in got:
            self.assertIn(("model_name", "llama-3-70b"), labels, name)
        with urllib.request.urlopen(f"http://{hub.serve('127.0.0.1:0')}/metrics", timeout=5) as r:
            served = samples(r.read().decode())
        for name, labels in served:
            self.assertEqual(("model_name", "llama-3-70b") in labels, name.startswith("gpuspans_"), name)
        for bad, why in [({"lane": "x"}, '"lane"'), ({"1x": "v"}, '"1x"'), ({"model": ""}, "empty"),
                         ({f"l{i}": "v" for i in range(17)}, "at most 16"),
                         ({"m" * (1 << 20): "v"}, "of 1048576 bytes: at most 128"),
                         ({"model": "v" * 1025}, "value of 1025 bytes")]:
            with self.assertRaises(gpuspans.Error) as e:
                hub.set_metric_labels(bad)
            self.assertIn(why, str(e.exception))
        with self.assertRaises(ValueError):
            hub.set_metric_labels({"model": "a\0b"})
        for bad, why in [({"model": b"x"}, "label model's value b'x' is bytes"), ({"model": 7}, "value 7 is int"),
                         ({b"model": "x"}, "label name b'model' is bytes"), ({None: "x"}, "label name None")]:
            with self.assertRaises(TypeError) as e:
                hub.set_metric_labels(bad)
            self.assertIn(why, str(e.exception))
        hub.set_metric_labels(None)
        self.assertNotIn("model_name", prometheus_client.generate_latest(reg).decode())

    def test_set_metrics_refuses_what_it_does_not_know(self):
        hub = self.hub()
        for bad in (3, 5):
            with self.assertRaises(gpuspans.Error) as e:
                hub.set_metrics(classic_buckets=bad)
            self.assertIn(f"classic_buckets {bad}", str(e.exception))
        for bad in (0, 16, -1):
            with self.assertRaises(ValueError):
                hub.set_metrics(classic_buckets=bad)

    def test_the_default_registry_and_clashes(self):
        hub = self.hub()
        c = gpuspans.prometheus.register(hub)
        try:
            self.assertIn("gpuspans_steps_total 20.0", prometheus_client.generate_latest().decode())
            other = gpuspans.Hub(quiet=True)
            self.addCleanup(other.close)
            with self.assertRaises(ValueError):
                gpuspans.prometheus.register(other)  # the same names, on the same registry
        finally:
            prometheus_client.REGISTRY.unregister(c)

    def test_a_closed_hub_leaves_the_engines_metrics_alone(self):
        hub = self.hub()
        reg = prometheus_client.CollectorRegistry()
        prometheus_client.Gauge("engine_up", "The engine's own gauge.", registry=reg).set(1)
        gpuspans.prometheus.register(hub, reg)
        hub.close()
        text = prometheus_client.generate_latest(reg).decode()
        self.assertIn("engine_up 1.0", text)
        self.assertNotIn("gpuspans_", text)


if __name__ == "__main__":
    unittest.main()

"""Whose GPU time from Python on the simulated GPU: requests said per
lane span, split by the lane's cost model, their records and classes."""

import unittest

import gpuspans

from .test_hub import FakeStream


class RequestsTest(unittest.TestCase):
    def test_two_tenants(self):
        with gpuspans.Hub(lanes=["decode"], level="kernel", quiet=True) as hub:
            gpu = hub.install(0, FakeStream(5), sim=True)
            a = hub.request_class(model="llama", tenant="a")
            b = hub.request_class(model="llama", tenant="b")
            self.assertEqual(hub.request_class(model="llama", tenant="a"), a)
            self.assertNotEqual(a, b)
            decode = hub.lane("decode")
            ids = iter(range(1, 1 << 20))
            live = {}
            for step in range(200):
                hub.step()
                while len(live) < 4:
                    rid = next(ids)
                    live[rid] = [a if rid % 2 else b, 0, 4 + rid % 7]
                reqs = []
                for rid, r in live.items():
                    r[1] += 1
                    reqs.append((rid, 0, 1, (4000 if r[0] == a else 100) + r[1], r[0], "ab" * 16 if rid == 1 else None, "cd" * 8))
                hub.serve_requests(decode, reqs)
                hub.lane_work("decode", 1e9)
                with decode:
                    gpu.launch(200e-6)
                for rid in [rid for rid, r in live.items() if r[1] >= r[2]]:
                    self.assertTrue(hub.end_request(rid))
                    del live[rid]
            for rid in list(live):
                self.assertTrue(hub.end_request(rid))
            self.assertFalse(hub.end_request(999999))
            self.assertEqual(hub.drain(5.0), 0)
            hub.step()
            recs = hub.finished_requests()
            self.assertGreater(len(recs), 50)
            self.assertEqual([r["seq"] for r in recs], list(range(1, len(recs) + 1)))
            self.assertEqual(hub.finished_requests(recs[-1]["seq"]), [])
            first = next(r for r in recs if r["id"] == 1)
            self.assertEqual((first["trace_id"], first["span_id"]), ("ab" * 16, "cd" * 8))
            self.assertEqual(first["tenant"], "a")
            total = sum(r["gpu_ns"] for r in recs)
            att = hub.attribution()
            lane = att["lanes"][0]
            self.assertEqual(lane["lane"], "decode")
            self.assertEqual(lane["time_ns"], total, "the records add up to the lane's spans")
            self.assertGreater(lane["flops"], 0)
            tenants = {c["tenant"]: c for c in att["classes"]}
            self.assertEqual(sum(l["gpu_ns"] for c in att["classes"] for l in c["lanes"]), total)
            self.assertEqual(tenants["a"]["finished"] + tenants["b"]["finished"], len(recs))
            self.assertTrue(att["heaviest"])

    def test_refusals(self):
        with gpuspans.Hub(lanes=["decode"], level="kernel", quiet=True) as hub:
            hub.install(0, FakeStream(5), sim=True)
            hub.step()
            for bad, why in [
                ([(0, 0, 1, 0)], "id 0"),
                ([(1, 0, 0, 0)], "no tokens"),
                ([(1, 0, 1, 0, 77)], "never returned"),
                ([(1, 0, 1, 0), (1, 0, 1, 0)], "twice"),
            ]:
                with self.assertRaisesRegex(gpuspans.Error, why):
                    hub.serve_requests("decode", bad)
            with self.assertRaisesRegex(ValueError, "request id"):
                hub.serve_requests("decode", [(-1, 0, 1, 0)])
            with self.assertRaisesRegex(ValueError, "16 and 8"):
                hub.serve_requests("decode", [(1, 0, 1, 0, 0, "ab", "cd")])
            with self.assertRaises(gpuspans.Error):
                hub.lane_work("decode", float("nan"))
            with self.assertRaisesRegex(ValueError, "NUL"):
                hub.request_class(model="a\0b")
            self.assertEqual(hub.attribution()["in_flight"], 0)

    def test_off_records_nothing(self):
        with gpuspans.Hub(lanes=["decode"], quiet=True) as hub:
            hub.serve_requests("decode", [(1, 0, 1, 0)])
            hub.lane_work("decode", 1)
            self.assertFalse(hub.end_request(1))
            self.assertEqual(hub.finished_requests(), [])
            self.assertEqual(hub.attribution(), {})


if __name__ == "__main__":
    unittest.main()

"""Hub.recent_spans and keep_start_times on the simulated GPU."""

import time
import unittest

import gpuspans


def run(hub, gpu, steps, seconds=2e-5):
    decode = hub.lane("decode")
    for _ in range(steps):
        hub.step()
        with decode:
            with hub.kernel("matmul"):
                gpu.launch(seconds)
    assert hub.drain(5.0) == 0


class RecentSpansTest(unittest.TestCase):
    def test_every_span_once_in_order_when_polled(self):
        with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, quiet=True) as hub:
            gpu = hub.install(0, 9, sim=True)
            run(hub, gpu, 5)
            first = hub.recent_spans()
            self.assertEqual(len(first), 10)
            self.assertEqual([s.seq for s in first], list(range(1, 11)))
            self.assertEqual(sorted({(s.kind, s.name) for s in first}), [("kernel", "matmul"), ("lane", "decode")])
            for s in first:
                self.assertIsInstance(s, gpuspans.Span)
                self.assertEqual((s.device, s.stream, s.graph), (0, 9, 0))
                self.assertGreaterEqual(s.duration_ns, 20_000, s)
                self.assertIn(s.step, range(1, 6))
            self.assertEqual(hub.recent_spans(first[-1].seq), [])
            run(hub, gpu, 3)
            # Paged: limit spans a call, the rest on the next.
            page = hub.recent_spans(first[-1].seq, limit=4)
            self.assertEqual([s.seq for s in page], [11, 12, 13, 14])
            rest = hub.recent_spans(page[-1].seq, limit=100)
            self.assertEqual([s.seq for s in rest], [15, 16])

    def test_a_small_ring_keeps_the_newest(self):
        with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, recent_spans=8, quiet=True) as hub:
            gpu = hub.install(0, 1, sim=True)
            run(hub, gpu, 10)  # 20 spans through a ring of 8
            spans = hub.recent_spans()
            self.assertEqual([s.seq for s in spans], list(range(13, 21)))
            self.assertEqual(hub.snapshot()["counters"]["recent_spans_overwritten"], 12)

    def test_start_times_placed_while_read(self):
        with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, quiet=True) as hub:
            gpu = hub.install(0, 1, sim=True)
            run(hub, gpu, 2)
            self.assertTrue(all(s.start_ns == 0 for s in hub.recent_spans()), "placed before any reader")
            before = time.time_ns()
            run(hub, gpu, 2)  # the read above keeps start times placed
            after = time.time_ns()
            spans = hub.recent_spans(4)
            self.assertEqual(len(spans), 4)
            for s in spans:
                self.assertTrue(before - 10**9 <= s.start_ns <= after, f"{s}: not between {before} and {after}")

    def test_keep_start_times_before_the_first_read(self):
        with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, quiet=True) as hub:
            gpu = hub.install(0, 1, sim=True)
            hub.keep_start_times()
            run(hub, gpu, 2)
            self.assertTrue(all(s.start_ns > 0 for s in hub.recent_spans()))

    def test_always_places_without_a_reader(self):
        with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, start_times="always", quiet=True) as hub:
            gpu = hub.install(0, 1, sim=True)
            run(hub, gpu, 3)
            spans = hub.recent_spans()
            self.assertEqual(len(spans), 6)
            self.assertTrue(all(s.start_ns > 0 for s in spans), spans)
        with self.assertRaisesRegex(ValueError, "start_times 'sometimes'"):
            gpuspans.Hub(start_times="sometimes", quiet=True)

    def test_never_means_none(self):
        with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=1, start_times="never", quiet=True) as hub:
            gpu = hub.install(0, 1, sim=True)
            hub.keep_start_times()
            hub.recent_spans()
            run(hub, gpu, 3)
            spans = hub.recent_spans()
            self.assertEqual(len(spans), 6)
            self.assertTrue(all(s.start_ns == 0 for s in spans), spans)
            self.assertTrue(all(s.duration_ns > 0 for s in spans), spans)

    def test_bad_arguments(self):
        with gpuspans.Hub(quiet=True) as hub:
            for bad in (-1, 1 << 64):
                with self.assertRaises(ValueError):
                    hub.recent_spans(bad)
            for bad in (0, -5, (1 << 20) + 1):
                with self.assertRaises(ValueError):
                    hub.recent_spans(0, limit=bad)
            self.assertEqual(hub.recent_spans((1 << 64) - 1), [])
        with self.assertRaises(gpuspans.Error) as e:
            hub.recent_spans()
        self.assertEqual(e.exception.name, "GS_HUB_ERR_BAD_HANDLE")
        with self.assertRaises(gpuspans.Error):
            hub.keep_start_times()


if __name__ == "__main__":
    unittest.main()

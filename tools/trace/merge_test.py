#!/usr/bin/env python3
"""Tests of merge.py: python3 tools/trace/merge_test.py"""

import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import merge  # noqa: E402

KBASE = 1_700_000_000_000_000_000  # Kineto's base: a whole second
SBASE = 1_700_000_042_000_000_000  # gpuspans' origin, 42 s later


def kineto_trace():
    return {
        "schemaVersion": 1,
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": KBASE,
        "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "python3"}},
            {"ph": "X", "cat": "kernel", "name": "attn", "pid": 0, "tid": 7, "ts": 42_000_100.5, "dur": 10.25,
             "args": {"stream": 7, "device": 0}},
        ],
    }


def gpuspans_trace():
    # As go/export/trace writes it.
    return {
        "traceEvents": [
            {"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": "GPU 0"}},
            {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "lane decode"}},
            {"ph": "X", "pid": 1, "tid": 1, "ts": 100.123, "dur": 50.001, "name": "decode", "cat": "lane",
             "args": {"step": 3, "seq": 9, "stream": 16}},
        ],
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": SBASE,
        "otherData": {"origin_unix_nanos": str(SBASE), "unplaced_spans": 0, "unknown_kind_spans": 0},
    }


def absolute_ns(trace, ev):
    return trace["baseTimeNanoseconds"] + round(ev["ts"] * 1000)


class MergeTest(unittest.TestCase):
    def test_aligns_on_kineto_base(self):
        k, s = kineto_trace(), gpuspans_trace()
        want = absolute_ns(s, s["traceEvents"][2])
        out = merge.merge(k, gpuspans_trace())
        self.assertEqual(out["baseTimeNanoseconds"], KBASE)
        self.assertEqual(len(out["traceEvents"]), 5)
        lane = out["traceEvents"][4]
        self.assertEqual(absolute_ns(out, lane), want)  # to the nanosecond
        self.assertEqual(lane["ts"], 42_000_100.123)
        self.assertEqual(lane["dur"], 50.001)
        self.assertEqual(lane["pid"], merge.PID_BASE + 1)
        # The Kineto kernel at 42_000_100.5 us starts inside the lane span.
        kern = out["traceEvents"][1]
        self.assertLess(lane["ts"], kern["ts"])
        self.assertLess(kern["ts"] + kern["dur"], lane["ts"] + lane["dur"])
        names = {e["pid"]: e["args"]["name"] for e in out["traceEvents"] if e.get("name") == "process_name"}
        self.assertEqual(names, {0: "python3", merge.PID_BASE + 1: "gpuspans GPU 0"})
        self.assertEqual(out["otherData"]["gpuspans_base_time_ns"], str(SBASE))

    def test_older_gpuspans_trace_uses_origin(self):
        s = gpuspans_trace()
        del s["baseTimeNanoseconds"]
        out = merge.merge(kineto_trace(), s)
        self.assertEqual(out["traceEvents"][4]["ts"], 42_000_100.123)

    def test_refuses(self):
        k = kineto_trace()
        del k["baseTimeNanoseconds"]
        with self.assertRaisesRegex(merge.MergeError, "no baseTimeNanoseconds"):
            merge.merge(k, gpuspans_trace())
        s = gpuspans_trace()
        s["baseTimeNanoseconds"] = KBASE + 2 * merge.MAX_SKEW_NS
        with self.assertRaisesRegex(merge.MergeError, "more than a day"):
            merge.merge(kineto_trace(), s)
        with self.assertRaisesRegex(merge.MergeError, "no traceEvents"):
            merge.merge({"baseTimeNanoseconds": KBASE}, gpuspans_trace())

    def test_command_line_gzip(self):
        with tempfile.TemporaryDirectory() as d:
            kp, sp, op = (os.path.join(d, n) for n in ("k.pt.trace.json.gz", "s.json", "out.json"))
            with gzip.open(kp, "wt") as f:
                json.dump(kineto_trace(), f)
            with open(sp, "w") as f:
                json.dump(gpuspans_trace(), f)
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "merge.py")
            r = subprocess.run([sys.executable, script, kp, sp, "-o", op], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(op) as f:
                self.assertEqual(len(json.load(f)["traceEvents"]), 5)
            r = subprocess.run([sys.executable, script, kp, os.path.join(d, "missing.json"), "-o", op],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("missing.json", r.stderr)


if __name__ == "__main__":
    unittest.main()

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



class HostileInputTest(unittest.TestCase):
    """Untrusted inputs and outputs: errors, never tracebacks or damage."""

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "merge.py")

    def run_merge(self, d, kineto, spans, out="out.json", raw=False):
        paths = []
        for name, content in (("k.json", kineto), ("s.json", spans)):
            p = os.path.join(d, name)
            if content is not None:
                with open(p, "w" if raw else "w") as f:
                    f.write(content if raw else json.dumps(content))
            paths.append(p)
        o = out if os.path.isabs(out) else os.path.join(d, out)
        return subprocess.run([sys.executable, self.script, paths[0], paths[1], "-o", o], capture_output=True, text=True)

    def test_malformed_inputs_are_errors(self):
        good_s = json.dumps(gpuspans_trace())
        for bad in ["[1, 2]", "3", '"x"', '{"traceEvents": 5, "baseTimeNanoseconds": 1}',
                    '{"traceEvents": [5], "baseTimeNanoseconds": 1700000000000000000}',
                    '{"traceEvents": [{"pid": "x"}], "baseTimeNanoseconds": 1700000000000000000}',
                    '{"traceEvents": [{"pid": 1, "ts": "soon"}], "baseTimeNanoseconds": 1700000000000000000}',
                    '{"traceEvents": [{"pid": 1, "ts": 1e999}], "baseTimeNanoseconds": 1700000000000000000}',
                    '{"traceEvents": [], "otherData": [1], "baseTimeNanoseconds": null}',
                    '{"traceEvents": [], "baseTimeNanoseconds": [1]}',
                    '{"traceEvents": [{"ts": NaN}], "baseTimeNanoseconds": 1700000000000000000}',
                    '{"traceEvents": [], "baseTimeNanoseconds": Infinity}',
                    "[" * 100000, "\xff\xfe", ""]:
            with tempfile.TemporaryDirectory() as d:
                for k, s in ((json.dumps(kineto_trace()), bad), (bad, good_s)):
                    r = self.run_merge(d, k, s, raw=True)
                    self.assertNotIn("Traceback", r.stderr, bad[:60])
                    if s is good_s and r.returncode == 0:
                        continue  # Kineto's own events are kept as they are
                    self.assertEqual(r.returncode, 1, f"{bad[:60]!r}: {r.stdout} {r.stderr}")
                    self.assertTrue(r.stderr.startswith("merge.py: "), r.stderr)
                    self.assertFalse(os.path.exists(os.path.join(d, "out.json")))

    def test_odd_but_usable_input_merges(self):
        s = gpuspans_trace()
        s["traceEvents"][0]["args"] = 7  # a process_name with args not an object
        out = merge.merge(kineto_trace(), s)
        self.assertEqual(out["traceEvents"][2]["args"], {"name": "gpuspans "})

    def test_output_never_written_through_a_link_or_onto_an_input(self):
        with tempfile.TemporaryDirectory() as d:
            victim = os.path.join(d, "victim")
            with open(victim, "w") as f:
                f.write("keep")
            os.symlink(victim, os.path.join(d, "link.json"))
            r = self.run_merge(d, kineto_trace(), gpuspans_trace(), out="link.json")
            self.assertEqual(r.returncode, 1)
            self.assertIn("symbolic link", r.stderr)
            with open(victim) as f:
                self.assertEqual(f.read(), "keep")
            os.mkfifo(os.path.join(d, "fifo"))
            r = self.run_merge(d, kineto_trace(), gpuspans_trace(), out="fifo")
            self.assertIn("not a regular file", r.stderr)
            r = self.run_merge(d, kineto_trace(), gpuspans_trace(), out="k.json")
            self.assertEqual(r.returncode, 1)
            self.assertIn("is also the input", r.stderr)
            with open(os.path.join(d, "k.json")) as f:
                self.assertEqual(json.load(f), kineto_trace())

    def test_failed_write_leaves_the_output(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "out.json")
            with open(out, "w") as f:
                f.write("previous")
            real = os.replace

            def failing(*args):
                raise OSError(28, "No space left on device")

            os.replace = failing
            try:
                with self.assertRaisesRegex(merge.MergeError, "No space left"):
                    merge.dump(merge.merge(kineto_trace(), gpuspans_trace()), out)
            finally:
                os.replace = real
            with open(out) as f:
                self.assertEqual(f.read(), "previous")
            self.assertEqual(os.listdir(d), ["out.json"])

    def test_gzip_bomb_is_refused_in_bounded_memory(self):
        with tempfile.TemporaryDirectory() as d:
            bomb = os.path.join(d, "bomb.json.gz")
            with gzip.open(bomb, "wb", compresslevel=9) as f:
                f.write(b'{"traceEvents": [')
                chunk = b"0," * (1 << 20)
                for _ in range(48):  # 96 MiB of JSON, about 100 KiB of gzip
                    f.write(chunk)
                f.write(b'0], "baseTimeNanoseconds": 1}')
            code = ("import resource, sys; sys.path.insert(0, %r); import merge\n"
                    "try:\n    merge.load(%r)\nexcept merge.MergeError as e:\n    print(e)\n"
                    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)") % (os.path.dirname(self.script), bomb)
            r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = r.stdout.split("\n")
            self.assertIn("gzip bomb", lines[0])
            self.assertLess(int(lines[1]), 100 << 10, "max RSS in KiB")

    def test_nan_never_written(self):
        k = kineto_trace()
        k["traceEvents"][1]["dur"] = float("nan")  # a caller's own trace
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaisesRegex(merge.MergeError, "JSON"):
                merge.dump(merge.merge(k, gpuspans_trace()), os.path.join(d, "o.json"))
            self.assertEqual(os.listdir(d), [])


if __name__ == "__main__":
    unittest.main()

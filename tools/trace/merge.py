#!/usr/bin/env python3
"""Merge a gpuspans timeline trace into a torch.profiler (Kineto) trace.

Both files are Chrome Trace Event JSON whose timestamps are microseconds from
a base time written as "baseTimeNanoseconds" (Unix ns): an event began at
baseTimeNanoseconds + 1000*ts. The gpuspans events are shifted onto the Kineto
trace's base, and their processes moved to pids of their own (Kineto uses the
device ordinal as the pid of GPU tracks, and gpuspans uses ordinal+1), named
"gpuspans GPU n". The Kineto trace is otherwise kept as it is.

Usage: merge.py KINETO.json[.gz] GPUSPANS.json[.gz] -o OUT.json[.gz]

Only the Python standard library is used. See docs/traces.md.
"""

import argparse
import gzip
import json
import sys

# gpuspans processes move to PID_BASE + their pid: clear of OS pids (at most
# 2^22 on Linux) and of the small pids Kineto gives devices.
PID_BASE = 1_000_000_000
# Base times further apart than this mean the traces are not of one run, or
# one of them was not written on the wall clock.
MAX_SKEW_NS = 24 * 3600 * 10**9


class MergeError(Exception):
    """A trace that cannot be merged, with why."""


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise MergeError(f"{path}: {e}") from e


def base_time(trace, path):
    base = trace.get("baseTimeNanoseconds")
    if base is None:
        other = trace.get("otherData") or {}
        base = other.get("origin_unix_nanos")  # gpuspans traces before baseTimeNanoseconds
    if base is None:
        raise MergeError(f"{path}: no baseTimeNanoseconds: cannot place its events in time")
    try:
        return int(base)
    except (TypeError, ValueError) as e:
        raise MergeError(f"{path}: baseTimeNanoseconds {base!r} is not an integer") from e


def merge(kineto, spans, kineto_path="kineto", spans_path="gpuspans"):
    """Returns kineto with the events of spans added, on kineto's base time."""
    if not isinstance(kineto.get("traceEvents"), list):
        raise MergeError(f"{kineto_path}: no traceEvents list")
    if not isinstance(spans.get("traceEvents"), list):
        raise MergeError(f"{spans_path}: no traceEvents list")
    kbase = base_time(kineto, kineto_path)
    sbase = base_time(spans, spans_path)
    if abs(sbase - kbase) > MAX_SKEW_NS:
        raise MergeError(
            f"base times {kbase} ({kineto_path}) and {sbase} ({spans_path}) are more than a day "
            "apart: not the same run, or not the same host clock")
    # Doubles keep the nanosecond digit of timestamps below 2^53 ns (104
    # days) from the base, which both writers' bases are well within.
    shift_us = (sbase - kbase) / 1000
    events = kineto["traceEvents"]
    for ev in spans["traceEvents"]:
        ev = dict(ev)
        if "pid" in ev:
            ev["pid"] = PID_BASE + int(ev["pid"])
        if "ts" in ev:
            ev["ts"] = round(ev["ts"] + shift_us, 3)
        if ev.get("ph") == "M" and ev.get("name") == "process_name":
            ev["args"] = dict(ev.get("args") or {}, name="gpuspans " + str((ev.get("args") or {}).get("name", "")))
        events.append(ev)
    if not isinstance(kineto.get("otherData"), dict):
        kineto["otherData"] = {}
    kineto["otherData"]["gpuspans_base_time_ns"] = str(sbase)
    return kineto


def dump(trace, path):
    opener = gzip.open if path.endswith(".gz") else open
    text = json.dumps(trace, separators=(",", ":"))
    with opener(path, "wt", encoding="utf-8") as f:
        f.write(text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kineto", help="torch.profiler trace (export_chrome_trace, or a .pt.trace.json[.gz])")
    p.add_argument("gpuspans", help="gpuspans trace (gpuspans demo --trace, or gpuspans trace FILE)")
    p.add_argument("-o", "--output", required=True, help="merged trace to write (.gz: gzipped)")
    args = p.parse_args(argv)
    try:
        kineto = load(args.kineto)
        spans = load(args.gpuspans)
        n = len(spans.get("traceEvents") or [])
        dump(merge(kineto, spans, args.kineto, args.gpuspans), args.output)
    except MergeError as e:
        print(f"merge.py: {e}", file=sys.stderr)
        return 1
    print(f"{args.output}: {n} gpuspans events merged into {args.kineto}, shifted by {(base_time(spans, args.gpuspans) - base_time(kineto, args.kineto)) / 1e9:+.9f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

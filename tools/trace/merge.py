#!/usr/bin/env python3
"""Merge a gpuspans timeline trace into a torch.profiler (Kineto) trace.

Both files are Chrome Trace Event JSON whose timestamps are microseconds from
a base time written as "baseTimeNanoseconds" (Unix ns): an event began at
baseTimeNanoseconds + 1000*ts. The gpuspans events are shifted onto the Kineto
trace's base, and their processes moved to pids of their own (Kineto uses the
device ordinal as the pid of GPU tracks, and gpuspans uses ordinal+1), named
"gpuspans GPU n". The Kineto trace is otherwise kept as it is.

Usage: merge.py KINETO.json[.gz] GPUSPANS.json[.gz] -o OUT.json[.gz]

Inputs are untrusted: a malformed one is an error naming the file and what
is wrong (never a traceback), NaN and Infinity are refused (they are not
JSON), and a .gz may decompress to at most MAX_GUNZIP_RATIO times its size.
The output is written to a temporary file beside it and renamed onto it at
the end, and only ever replaces a regular file that is not an input: a
symbolic link, FIFO, device or directory there is refused.

Only the Python standard library is used. See docs/traces.md.
"""

import argparse
import gzip
import io
import json
import math
import os
import stat
import sys
import tempfile
import zlib

# gpuspans processes move to PID_BASE + their pid: clear of OS pids (at most
# 2^22 on Linux) and of the small pids Kineto gives devices.
PID_BASE = 1_000_000_000
# Base times further apart than this mean the traces are not of one run, or
# one of them was not written on the wall clock.
MAX_SKEW_NS = 24 * 3600 * 10**9


# A .gz may decompress to this many times its size (plus GUNZIP_SLACK):
# JSON traces compress 5-20x, a crafted file over 1000x.
MAX_GUNZIP_RATIO = 32
GUNZIP_SLACK = 8 << 20


class MergeError(Exception):
    """A trace that cannot be merged, with why."""


def _no_constant(name):
    raise ValueError(f"{name} is not JSON (a number must be finite)")


def _read_gzip(path):
    limit = MAX_GUNZIP_RATIO * os.path.getsize(path) + GUNZIP_SLACK
    with gzip.open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise MergeError(
            f"{path}: decompresses to more than {limit} bytes ({MAX_GUNZIP_RATIO} times its size): "
            "refused as a gzip bomb; if it is a genuine trace, gunzip it and pass the JSON")
    return data


def load(path):
    try:
        if path.endswith(".gz"):
            data = _read_gzip(path)
        else:
            with open(path, "rb") as f:
                data = f.read()
        trace = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except MergeError:
        raise
    except RecursionError as e:
        raise MergeError(f"{path}: nested too deeply to be a trace") from e
    except (OSError, ValueError, EOFError, zlib.error) as e:
        raise MergeError(f"{path}: {e}") from e
    if not isinstance(trace, dict):
        raise MergeError(f"{path}: a {type(trace).__name__}, want a JSON object with traceEvents")
    return trace


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def base_time(trace, path):
    base = trace.get("baseTimeNanoseconds")
    if base is None:
        other = trace.get("otherData")
        base = other.get("origin_unix_nanos") if isinstance(other, dict) else None  # gpuspans traces before baseTimeNanoseconds
    if base is None:
        raise MergeError(f"{path}: no baseTimeNanoseconds: cannot place its events in time")
    try:
        if isinstance(base, bool) or not isinstance(base, (int, str)):
            raise TypeError(base)
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
    for i, ev in enumerate(spans["traceEvents"]):
        if not isinstance(ev, dict):
            raise MergeError(f"{spans_path}: traceEvents[{i}] is a {type(ev).__name__}, want an object")
        ev = dict(ev)
        if "pid" in ev:
            pid = ev["pid"]
            if isinstance(pid, bool) or not isinstance(pid, int) or not 0 <= pid < PID_BASE:
                raise MergeError(f"{spans_path}: traceEvents[{i}]: pid {pid!r}, want an integer 0..{PID_BASE - 1}")
            ev["pid"] = PID_BASE + pid
        if "ts" in ev:
            if not _number(ev["ts"]):
                raise MergeError(f"{spans_path}: traceEvents[{i}]: ts {ev['ts']!r}, want a finite number")
            ev["ts"] = round(ev["ts"] + shift_us, 3)
        if ev.get("ph") == "M" and ev.get("name") == "process_name":
            args = ev.get("args")
            args = args if isinstance(args, dict) else {}
            ev["args"] = dict(args, name="gpuspans " + str(args.get("name", "")))
        events.append(ev)
    if not isinstance(kineto.get("otherData"), dict):
        kineto["otherData"] = {}
    kineto["otherData"]["gpuspans_base_time_ns"] = str(sbase)
    return kineto


def check_output(path, inputs=()):
    """Raises MergeError unless path may be replaced by the output: nothing
    is there, or a regular file that is none of inputs."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as e:
        raise MergeError(f"-o {path}: {e.strerror}") from e
    if stat.S_ISLNK(st.st_mode):
        raise MergeError(f"-o {path} is a symbolic link: name the file it points to, outputs are never written through one")
    if stat.S_ISDIR(st.st_mode):
        raise MergeError(f"-o {path} is a directory")
    if not stat.S_ISREG(st.st_mode):
        raise MergeError(f"-o {path} is not a regular file: outputs only replace regular files")
    for i in inputs:
        try:
            same = os.path.samefile(path, i)
        except OSError:
            same = False
        if same:
            raise MergeError(f"-o {path} is also the input {i}: write the merged trace elsewhere")


def dump(trace, path, inputs=()):
    """Writes trace to a temporary file beside path and renames it onto
    path, checked first (check_output); on any failure path is untouched."""
    try:
        text = json.dumps(trace, separators=(",", ":"), allow_nan=False)
    except ValueError as e:
        raise MergeError(f"-o {path}: {e}") from e
    check_output(path, inputs)
    d = os.path.dirname(path) or "."
    try:
        fd, tmp = tempfile.mkstemp(dir=d, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    except OSError as e:
        raise MergeError(f"-o {path}: cannot write in its directory: {e.strerror}") from e
    try:
        with io.open(fd, "wb") as raw:
            if path.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw, mode="wb") as f:
                    f.write(text.encode("utf-8"))
            else:
                raw.write(text.encode("utf-8"))
        os.chmod(tmp, 0o644)
        check_output(path, inputs)  # something may have appeared there meanwhile
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise MergeError(f"-o {path}: {e.strerror or e}") from e
        raise


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kineto", help="torch.profiler trace (export_chrome_trace, or a .pt.trace.json[.gz])")
    p.add_argument("gpuspans", help="gpuspans trace (gpuspans demo --trace, or gpuspans trace FILE)")
    p.add_argument("-o", "--output", required=True, help="merged trace to write (.gz: gzipped)")
    args = p.parse_args(argv)
    try:
        check_output(args.output, [args.kineto, args.gpuspans])
        kineto = load(args.kineto)
        spans = load(args.gpuspans)
        merged = merge(kineto, spans, args.kineto, args.gpuspans)
        n = len(spans["traceEvents"])
        shift = (base_time(spans, args.gpuspans) - base_time(kineto, args.kineto)) / 1e9
        dump(merged, args.output, [args.kineto, args.gpuspans])
    except MergeError as e:
        print(f"merge.py: {e}", file=sys.stderr)
        return 1
    print(f"{args.output}: {n} gpuspans events merged into {args.kineto}, shifted by {shift:+.9f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

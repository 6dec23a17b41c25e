#!/usr/bin/env python3
"""An eager decode's step before, beside and after kernel windows, in one
process: is what a window leaves behind the engine's time, or ours?

served.py's eager truth comes from another process, and a host-bound loop's
step moved by 7-27% from one process to the next, more than the 2 points
the busy ratio is judged by. Here each process times the same eager step
(bench/gputime/served.py's decoder, ~230 launches) in phases, each after a
second of warm-up:

  bare     event pairs, no hub: CUPTI never loaded in this process yet
  events   a hub at kernel level, kernel_timing events (lane event pairs)
  auto     a hub at auto, a window every --every s: steps between windows
           (by steps since the last window) and the busy ratio it reports
  bare2    event pairs again, the hub closed: CUPTI loaded and finalized
  events2  a hub at events again

and prints one JSON line a phase: the host's step (perf_counter around the
step and its sync) and the lane's event time, means and medians. The
busy ratio's truth is the windows' busy a span over `bare`'s lane: event
pairs in this process before it loaded CUPTI; and over the lane's event
time between the windows of `auto` (the same seconds: bare phases alone
moved by up to a fifth from one to the next on an H100, run 8).

    PYTHONPATH=python GPUSPANS_LIB=... GPUSPANS_HOT=... python3 bench/gputime/eager_between.py --procs 3
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from served import Between, Decoder, Steps, emit, lane_of, reported, settle  # noqa: E402


def stats(xs):
    if not xs:
        return {}
    s = sorted(xs)
    return {"n": len(s), "mean": round(statistics.fmean(s), 1), "p50": round(s[len(s) // 2], 1),
            "p10": round(s[len(s) // 10], 1), "p90": round(s[len(s) * 9 // 10], 1)}


def phase(torch, st, name, args, hub=None):
    lane = hub.lane("decode") if hub else None
    warm = time.perf_counter() + 1
    while time.perf_counter() < warm:
        if hub:
            hub.step()
            st.run(lane.begin, lane.end)
        else:
            st.run()
    host, since, ev = [], [], []
    last = None
    # Only auto's phases read the ring: the others' steps stay as they are.
    between = Between(hub) if hub and name.startswith("auto") else None
    if between:
        between.phase(skip=0)
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        if not hub:  # made before the step's clock starts, as a hub's are
            ev.append((torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)))
        a = time.perf_counter()
        if hub:
            hub.step()
            if hub.armed:
                last = len(host)
            st.run(lane.begin, lane.end)
        else:
            st.run(ev[-1][0].record, ev[-1][1].record)
        host.append((time.perf_counter() - a) * 1e6)
        since.append(-1 if last is None else len(host) - 1 - last)
        if between:  # after the step's clock: reading the ring is ours, not the step's
            between.step(hub.armed)
    out = {"phase": name, "host_us": stats(host)}
    if ev:
        out["lane_us"] = stats([a.elapsed_time(b) * 1e3 for a, b in ev])
    if hub and name.startswith("auto"):
        out["host_us_in_windows"] = stats([h for h, s in zip(host, since) if s == 0])
        out["host_us_1_50_after"] = stats([h for h, s in zip(host, since) if 0 < s <= 50])
        out["host_us_later"] = stats([h for h, s in zip(host, since) if s > 50 or s < 0])
        out["lane"] = reported(lane_of(settle(hub)))
        between.poll()
        out["lane_us_between"] = between.mean_us()
    return out


def child(args):
    import torch
    import gpuspans

    m = Decoder(torch, args.d, args.batch, 1, args.layers)
    st = Steps(m, {"eager": True})
    out = {"proc": args.proc, "device": torch.cuda.get_device_name(), "phases": []}
    for name in args.phases.split(","):
        hub = None
        if name.startswith("events") or name.startswith("auto"):
            timing = "auto" if name.startswith("auto") else "events"
            hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing=timing, kernel_window_every=args.every,
                               quiet=True)
            hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
        try:
            ph = phase(torch, st, name, args, hub)
        finally:
            if hub:
                hub.close()
        out["phases"].append(ph)
        emit({"proc": args.proc, **ph})
    byname = {p["phase"]: p for p in out["phases"]}
    ln = (byname.get("auto") or {}).get("lane") or {}
    bare = (byname.get("bare") or {}).get("lane_us", {}).get("mean")
    spans = ln.get("served_spans") or 0
    between = (byname.get("auto") or {}).get("lane_us_between")
    if bare and spans:
        busy = ln["served_busy_ns"] / spans / 1e3
        truth = busy / bare
        out = {"proc": args.proc, "truth_busy_over_bare": round(truth, 4), "served_ratio": ln.get("ratio_served"),
               "error_points": round((ln.get("ratio_served", 0) - truth) * 100, 2),
               "served_us_a_span": round(ln["served_ns"] / spans / 1e3, 1), "bare_lane_us": bare}
        if between:
            # The lane's event time between the windows, the same seconds.
            out["truth_same_seconds"] = round(busy / between, 4)
            out["error_points_same_seconds"] = round((ln.get("ratio_served", 0) - busy / between) * 100, 2)
            out["lane_us_between"] = round(between, 1)
        emit(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--proc", type=int, default=-1, help=argparse.SUPPRESS)
    ap.add_argument("--procs", type=int, default=3, help="processes, one after the other")
    ap.add_argument("--phases", default="bare,events,auto,bare2,events2")
    ap.add_argument("--seconds", type=float, default=4, help="seconds a phase measures")
    ap.add_argument("--every", type=float, default=0.25, help="auto: window period, s")
    ap.add_argument("--layers", type=int, default=46)
    ap.add_argument("--d", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    if args.proc >= 0:
        return child(args)
    for i in range(args.procs):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--proc", str(i)] + sys.argv[1:],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sys.stdout.write(p.stdout)
        sys.stdout.flush()
        if p.returncode:
            emit({"proc": i, "rc": p.returncode, "stderr_tail": p.stderr[-2000:]})


if __name__ == "__main__":
    sys.exit(main())

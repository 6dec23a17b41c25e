#!/usr/bin/env python3
"""Where a window's busy time parts from torch.profiler's: kernel by kernel.

served.py's no-stall graph decode read a busy time a step about 2% under
torch.profiler's (796 against 812 us on an H100) while the host-bound
workloads agreed within 0.5%: the profiler's first session in a process
reads kernels 2% longer (run 10; served.py now leaves it out). This
probe sets the two side by side, each in its own process (one CUPTI
subscriber at a time), for the workloads given:

  profiler   torch.profiler's kernels of 40 steps, per step: the union of
             the kernels launched in it, their summed durations, their
             extent (first start to last end), and each kernel's duration
             by its place in the step. Twice a workload: "cold" as
             served.py takes it (10 steps after 2 s of an idle GPU) and
             "hot" (the loop runs 2 s first and on through the profile,
             started by a schedule's warm-up steps, so no idle comes before
             the steps it keeps).
  gpuspans   a hub at auto, one window every 0.25 s: every window step's
             timeline (hub.gpu_time()["timelines"]): the lane span and the
             step's kernels as placed on the host clock. Per step: busy as
             the hub counts it (inside the lane), the kernels' union with
             no lane to clip them, the last kernel's end less the lane's end
             and the first kernel's start less the lane's start, and each
             kernel's duration by its place.

The parent prints one line a workload: the means, and the kernels whose
durations differ most between the hub and the hot profiler.

    PYTHONPATH=python GPUSPANS_LIB=... GPUSPANS_HOT=... python3 bench/gputime/busy_probe.py
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from served import WORKLOADS, Decoder, Steps, emit, lane_of, profiled_steps, settle, union  # noqa: E402


def mean(xs):
    return round(statistics.fmean(xs), 3) if xs else None


def modal(steps):
    """The steps with the most common kernel count, and that count."""
    n = statistics.mode(len(s) for s in steps)
    return [s for s in steps if len(s) == n], n


def per_place(steps):
    """Mean duration (us) of each kernel by its place in the step, over the
    steps with the most common kernel count."""
    if not steps:
        return []
    keep, n = modal(steps)
    return [round(statistics.fmean(s[i][1] - s[i][0] for s in keep), 3) for i in range(n)]


def gaps_per_place(steps):
    """Mean gap (us) before each kernel by its place, as per_place."""
    if not steps:
        return []
    keep, n = modal(steps)
    return [0.0] + [round(statistics.fmean(max(0.0, s[i][0] - s[i - 1][1]) for s in keep), 3) for i in range(1, n)]


def summary(steps):
    """steps: per step, its kernels' (start, end) in us, sorted."""
    busy = [sum(e - s for s, e in union(k)) for k in steps]
    total = [sum(e - s for s, e in k) for k in steps]
    extent = [max(e for _, e in k) - k[0][0] for k in steps]
    out = {"steps": len(steps), "kernels": statistics.mode(len(k) for k in steps), "busy_us": mean(busy),
           "sum_us": mean(total), "extent_us": mean(extent)}
    # The gaps between consecutive kernels, split at the step's middle
    # kernel (a two-graph step: inside graph a, between the graphs, inside b).
    halves = {"gaps_first_half_us": [], "gap_middle_us": [], "gaps_second_half_us": []}
    for k in steps:
        gaps = [max(0.0, k[i + 1][0] - k[i][1]) for i in range(len(k) - 1)]
        h = len(k) // 2
        halves["gaps_first_half_us"].append(sum(gaps[:h - 1]))
        halves["gap_middle_us"].append(gaps[h - 1] if h >= 1 and gaps else 0.0)
        halves["gaps_second_half_us"].append(sum(gaps[h:]))
    out.update({k: mean(v) for k, v in halves.items()})
    return out


def role_profiler(torch, m, args, names):
    for name in names:
        for mode in ("cold", "hot"):
            st = Steps(m, WORKLOADS[name])
            if mode == "cold":
                torch.cuda.synchronize()
                time.sleep(2)
            got = profiled_steps(torch, st, args.steps, warm=2.0 if mode == "hot" else 0.0, warm_steps=args.warmup)
            steps = [sorted((s, e) for s, e, _ in step["kernels"]) for step in got]
            names_at = [n[:60] for _, _, n in sorted(got[0]["kernels"])] if got else []
            emit({"role": "profiler", "workload": name, "mode": mode, **summary(steps), "per_place_us": per_place(steps),
                  "gaps_per_place_us": gaps_per_place(steps), "names": names_at})


def role_gpuspans(torch, m, args, names):
    import gpuspans

    for name in names:
        st = Steps(m, WORKLOADS[name])
        hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", kernel_window_every=args.every,
                           quiet=True)
        hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
        lane = hub.lane("decode")
        seen, steps, rows = set(), [], []
        last_ls, last_causes, hub_lane = 0.0, None, None
        windows = 0
        try:
            end = time.perf_counter() + args.seconds
            poll = 0.0
            while time.perf_counter() < end:
                hub.step()
                st.run(lane.begin, lane.end)
                if time.perf_counter() < poll:  # a snapshot costs the loop: a few a window
                    continue
                poll = time.perf_counter() + args.every / 5
                g = hub.gpu_time() or {}
                if g.get("windows", 0) == windows:
                    continue
                windows = g.get("windows", 0)
                for tl in g.get("timelines") or []:
                    if tl.get("step") in seen or not tl.get("lanes"):
                        continue
                    seen.add(tl.get("step"))
                    ln = tl["lanes"][0]
                    ls, le = ln["start_unix_ns"] / 1e3, ln["end_unix_ns"] / 1e3
                    ks = sorted((k["start_unix_ns"] / 1e3, k["end_unix_ns"] / 1e3) for k in tl.get("kernels") or [])
                    if not ks:
                        continue
                    inside = [(max(s, ls), min(e, le)) for s, e in ks if e > ls and s < le]
                    steps.append(ks)
                    last_ls, last_causes = ls, ln.get("causes")
                    rows.append({"lane_us": le - ls, "busy_us_hub": ln["busy_ns"] / 1e3,
                                 "busy_us_clipped": sum(e - s for s, e in union(inside)),
                                 "last_end_less_lane_end_us": max(e for _, e in ks) - le,
                                 "first_start_less_lane_start_us": ks[0][0] - ls,
                                 "kernels_outside": sum(1 for s, e in ks if e <= ls or s >= le),
                                 "kernels_cut": sum(1 for s, e in ks if (s < ls < e) or (s < le < e))})
            hub_lane = lane_of(settle(hub))
        finally:
            hub.close()
        out = {"role": "gpuspans", "workload": name, "timelines": len(steps)}
        if steps:
            out.update(summary(steps))
            for k in rows[0]:
                out[k] = mean([r[k] for r in rows])
            out["last_end_less_lane_end_us_all"] = [round(r["last_end_less_lane_end_us"], 2) for r in rows]
            out["per_place_us"] = per_place(steps)
            out["gaps_per_place_us"] = gaps_per_place(steps)
            out["causes_last"] = last_causes
            out["timeline_last_us"] = [[round(s - last_ls, 2), round(e - last_ls, 2)] for s, e in steps[-1]]
        out["lane"] = {k: v for k, v in ((hub_lane or {}).items()) if not isinstance(v, list)}
        emit(out)


ROLES = {"profiler": role_profiler, "gpuspans": role_gpuspans}


def child(args):
    import torch

    m = Decoder(torch, args.d, args.batch, 4, args.layers)
    for _ in range(20):
        Steps(m, {}).run()
    ROLES[args.role](torch, m, args, [n for n in args.workloads.split(",") if n])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--role", choices=sorted(ROLES), help=argparse.SUPPRESS)
    ap.add_argument("--workloads", default="graph,graph_between_0.5ms,graph_between_1ms,eager")
    ap.add_argument("--steps", type=int, default=40, help="profiler: steps kept")
    ap.add_argument("--warmup", type=int, default=20, help="profiler, hot: the schedule's warm-up steps")
    ap.add_argument("--seconds", type=float, default=4, help="gpuspans: seconds a workload")
    ap.add_argument("--every", type=float, default=0.25, help="gpuspans: window period, s")
    ap.add_argument("--layers", type=int, default=46)
    ap.add_argument("--d", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    if args.role:
        return child(args)
    got = {}
    for role in ("profiler", "gpuspans"):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--role", role] + sys.argv[1:],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in p.stdout.splitlines():
            try:
                o = json.loads(line)
            except ValueError:
                continue
            print(line, flush=True)
            got[(o.get("role"), o.get("workload"), o.get("mode"))] = o
        if p.returncode:
            emit({"role": role, "rc": p.returncode, "stderr_tail": p.stderr[-2000:]})
    for name in args.workloads.split(","):
        g, hot, cold = got.get(("gpuspans", name, None)), got.get(("profiler", name, "hot")), got.get(("profiler", name, "cold"))
        if not (g and hot and cold):
            continue
        line = {"compare": name, "busy_us": {"hub": g["busy_us_hub"], "hub_unclipped": g["busy_us"],
                                             "profiler_hot": hot["busy_us"], "profiler_cold": cold["busy_us"]},
                "sum_us": {"hub": g["sum_us"], "profiler_hot": hot["sum_us"], "profiler_cold": cold["sum_us"]},
                "extent_us": {"hub": g["extent_us"], "profiler_hot": hot["extent_us"], "profiler_cold": cold["extent_us"]},
                "last_end_less_lane_end_us": g["last_end_less_lane_end_us"]}
        a, b = g.get("per_place_us") or [], hot.get("per_place_us") or []
        if a and len(a) == len(b):
            d = sorted(((x - y, i) for i, (x, y) in enumerate(zip(a, b))), key=lambda t: -abs(t[0]))[:8]
            line["most_apart_hub_less_hot_us"] = [{"place": i, "us": round(x, 3), "hub": a[i], "hot": b[i],
                                                   "kernel": (hot.get("names") or [""] * len(b))[i]} for x, i in d]
        emit(line)


if __name__ == "__main__":
    sys.exit(main())

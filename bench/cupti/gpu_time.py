#!/usr/bin/env python3
"""GPU time from kernel windows against torch.profiler, on one GPU.

A decode step of LAYERS layers (layer norm, two matmuls, gelu, add: 5
kernels a layer) is captured as two CUDA graphs, the first and second half,
replayed back to back inside one "decode" lane, with HOST seconds of host
work between the two replays (0, 0.2, 0.5 and 1 ms). Each step ends with a
sync, as an engine reading its sampled tokens does.

For each host delay, in one process:
1. torch.profiler over --steps steps: per step, the union of the step's
   kernel intervals (kernels of the graph launches made inside the step's
   record_function), their extent (first start to last end), the idle
   inside it and the largest gap, with the kernels on either side.
2. A gpuspans hub at kernel timing auto, one window every --every s, for
   --seconds: GPU time's busy, idle and spans of the lane from the
   snapshot's totals, and the latest window's largest gap.
Then a hub run at kernel timing events against one at auto, alternating,
for the step time between windows, and a last one where the second graph
is swapped for one whose layer-MOVE first matmul reads a weight twice as
deep (twice the bytes: about twice the time) after --baseline s, for the
kernels that moved.

Prints one JSON object per line; run on the GPU machine:

    PYTHONPATH=python GPUSPANS_LIB=out/python/libgpuspans.so \\
        GPUSPANS_HOT=out/python/_hot.abi3.so python3 bench/cupti/gpu_time.py
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import gpuspans

LAYERS = 32
MOVE = 20  # a layer of the second graph


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Model:
    def __init__(self, torch, d, batch):
        self.t = torch
        F = torch.nn.functional
        self.F = F
        g = torch.Generator(device="cuda").manual_seed(0)
        dt = torch.bfloat16

        def w(*shape):
            return (torch.randn(*shape, generator=g, device="cuda", dtype=dt) * 0.02)

        self.d = d
        self.w1 = [w(d, d) for _ in range(LAYERS)]
        self.w2 = [w(d, d) for _ in range(LAYERS)]
        self.deep = w(2 * d, d)  # the moved matmul's weight: twice as deep
        self.wide_in = w(batch, 2 * d)
        self.x = w(batch, d)
        self.graphs = {}

    def layers(self, lo, hi, slow=False):
        F, x = self.F, self.x
        for i in range(lo, hi):
            h = F.layer_norm(x, (self.d,))
            if slow and i == MOVE:
                h = self.wide_in @ self.deep  # same output shape, twice the weight bytes
            else:
                h = h @ self.w1[i]
            h = F.gelu(h) @ self.w2[i]
            x = x + h
        self.x.copy_(x)

    def capture(self, name, lo, hi, slow=False):
        t = self.t
        s = t.cuda.Stream()
        s.wait_stream(t.cuda.current_stream())
        with t.inference_mode(), t.cuda.stream(s):
            for _ in range(3):
                self.layers(lo, hi, slow)
        t.cuda.current_stream().wait_stream(s)
        g = t.cuda.CUDAGraph()
        with t.inference_mode(), t.cuda.graph(g):
            self.layers(lo, hi, slow)
        self.graphs[name] = g


def step(m, host, second="b", lane=None, hub=None):
    if hub is not None:
        hub.step()
    if lane is not None:
        lane.begin()
    m.graphs["a"].replay()
    if host:
        spin(host)
    m.graphs[second].replay()
    if lane is not None:
        lane.end()
    m.t.cuda.synchronize()


def merge(ivs):
    runs = []
    for s, e, n in sorted(ivs):
        if runs and s <= runs[-1][1]:
            if e > runs[-1][1]:
                runs[-1][1], runs[-1][3] = e, n
            continue
        runs.append([s, e, n, n])
    return runs


def profile(torch, m, host, steps):
    """Per step from torch.profiler: busy, extent, idle, largest gap (us)."""
    from torch.profiler import ProfilerActivity, profile as tprof, record_function

    with tprof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(steps):
            with record_function(f"gs_step_{i}"):
                step(m, host)
    path = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        ev = json.load(f)["traceEvents"]
    os.unlink(path)
    steps_cpu = {}
    for e in ev:
        if e.get("cat") == "user_annotation" and e.get("name", "").startswith("gs_step_"):
            steps_cpu[int(e["name"][8:])] = (e["ts"], e["ts"] + e["dur"])
    corr_step = {}
    for e in ev:
        if e.get("cat") == "cuda_runtime" and "Launch" in e.get("name", ""):
            for i, (a, b) in steps_cpu.items():
                if a <= e["ts"] <= b:
                    corr_step[e["args"]["correlation"]] = i
    kern = {}
    for e in ev:
        if e.get("cat") == "kernel":
            i = corr_step.get(e["args"].get("correlation"))
            if i is not None:
                kern.setdefault(i, []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
    out = []
    for i in sorted(kern)[2:]:  # past the first steps' warmup
        runs = merge(kern[i])
        busy = sum(e - s for s, e, _, _ in runs)
        extent = runs[-1][1] - runs[0][0]
        gaps = [(runs[j + 1][0] - runs[j][1], runs[j][3], runs[j + 1][2]) for j in range(len(runs) - 1)]
        big = max(gaps) if gaps else (0, "", "")
        out.append({"kernels": len(kern[i]), "busy": busy, "extent": extent, "idle": extent - busy,
                    "gaps_sum": sum(g for g, _, _ in gaps), "largest": big[0], "before": big[1][:60], "after": big[2][:60]})
    return out


def med(xs, k):
    return statistics.median(x[k] for x in xs)


def windows(torch, m, host, seconds, every, second="b"):
    hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", kernel_window_every=every, quiet=True)
    hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
    lane = hub.lane("decode")
    try:
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            step(m, host, second, lane, hub)
            n += 1
        hub.level = "step"
        hub.step()
        hub.drain(2.0)
        for _ in range(3):
            hub.harvest()
        return n, hub.gpu_time(), hub.snapshot()
    finally:
        hub.close()


def lane_of(g):
    for l in (g or {}).get("lanes", []):
        if l["lane"] == "decode":
            return l
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=60, help="profiled steps per host delay")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--every", type=float, default=0.05)
    ap.add_argument("--hosts", default="0,0.0002,0.0005,0.001")
    ap.add_argument("--baseline", type=float, default=20)
    ap.add_argument("--moved", type=float, default=40)
    ap.add_argument("--cost-seconds", type=float, default=4)
    args = ap.parse_args()
    import torch

    m = Model(torch, args.d, args.batch)
    m.capture("a", 0, LAYERS // 2)
    m.capture("b", LAYERS // 2, LAYERS)
    m.capture("slow", LAYERS // 2, LAYERS, slow=True)
    for _ in range(20):
        step(m, 0)
    print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "layers": LAYERS, "d": args.d,
                      "batch": args.batch}), flush=True)

    for host in [float(x) for x in args.hosts.split(",")]:
        p = profile(torch, m, host, args.steps)
        n, g, snap = windows(torch, m, host, args.seconds, args.every)
        ln = lane_of(g)
        rec = {"case": "host", "host_us": host * 1e6, "profiler_steps": len(p),
               "profiler": {"kernels": med(p, "kernels"), "extent_us": med(p, "extent"), "busy_us": med(p, "busy"),
                            "idle_us": med(p, "idle"), "gaps_us": med(p, "gaps_sum"),
                            "busy_fraction": med(p, "busy") / med(p, "extent"),
                            "largest_gap_us": med(p, "largest"), "largest_between": [p[-1]["before"], p[-1]["after"]]},
               "steps": n, "windows": (g or {}).get("windows"), "analysis_ns_per_window": None}
        if ln:
            spans = ln["spans"]
            rec["gpuspans"] = {"spans": spans, "time_us": ln["time_ns"] / spans / 1e3, "busy_us": ln["busy_ns"] / spans / 1e3,
                               "idle_us": ln["idle_ns"] / spans / 1e3, "busy_fraction": ln["busy_ns"] / ln["time_ns"],
                               "gaps_us": ln["gaps_ns"] / spans / 1e3,
                               "busy_fraction_of_kernel_extent": ln["busy_ns"] / (ln["busy_ns"] + ln["gaps_ns"]),
                               "kernels": ln["kernels"][:3]}
            gaps = g.get("largest_gaps", [])
            if gaps:
                rec["gpuspans"]["largest_gap_us"] = gaps[0]["duration_ns"] / 1e3
                rec["gpuspans"]["largest_between"] = [gaps[0]["before"][:60], gaps[0]["after"][:60]]
            st = g.get("steps", [])
            if st:
                rec["gpuspans"]["last_step"] = {"extent_us": st[-1]["extent_ns"] / 1e3, "busy_us": st[-1]["busy_ns"] / 1e3,
                                                "kernels": st[-1]["kernels"]}
            rec["analysis_ns_per_window"] = g["analysis_ns"] / max(g["windows"], 1)
            rec["late"], rec["unplaced"], rec["skipped"] = g["late"], g["unplaced"], g["skipped"]
            gh = g.get("gaps", [])
            if gh:
                rec["gpuspans"]["gap_p50_us"] = gh[0]["p50_ns"] / 1e3
                rec["gpuspans"]["gap_p99_us"] = gh[0]["p99_ns"] / 1e3
        rec["kernel_timing"] = snap["kernel_timing"]["reason"] if snap["kernel_timing"].get("reason") else "ok"
        print(json.dumps(rec), flush=True)

    # Step time between windows: events against auto, alternating.
    for rnd in range(2):
        for timing in ("events", "auto"):
            hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing=timing, kernel_window_every=1.0,
                               kernel_span_every=1000000, quiet=True)
            hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
            lane = hub.lane("decode")
            ts, tw = [], []
            end = time.perf_counter() + args.cost_seconds
            i = 0
            while time.perf_counter() < end:
                a = time.perf_counter()
                hub.step()
                lane.begin()
                m.graphs["a"].replay()
                m.graphs["b"].replay()
                lane.end()
                torch.cuda.synchronize()
                dt = (time.perf_counter() - a) * 1e6
                if i > 20:
                    (tw if hub.armed else ts).append(dt)
                i += 1
            snap = hub.snapshot()
            hub.level = "step"
            hub.step()
            hub.close()
            w = snap["kernel_timing"]["windows"]
            print(json.dumps({"case": "cost", "round": rnd, "timing": timing, "steps_between": len(ts),
                              "p50_between_us": statistics.median(ts) if ts else None,
                              "steps_in_windows": len(tw), "p50_in_windows_us": statistics.median(tw) if tw else None,
                              "open_ns": w["open_ns"], "close_ns": w["close_ns"],
                              "analysis_ns": (snap.get("gpu_time") or {}).get("analysis_ns"),
                              "windows": (snap.get("gpu_time") or {}).get("windows")}), flush=True)

    # The kernel that moved: baseline, then the slow second graph.
    hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", kernel_window_every=args.every, quiet=True)
    hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
    lane = hub.lane("decode")
    try:
        for phase, secs, second in (("baseline", args.baseline, "b"), ("slow", args.moved, "slow")):
            end = time.perf_counter() + secs
            while time.perf_counter() < end:
                step(m, 0, second, lane, hub)
            for _ in range(3):
                hub.harvest()
            g = hub.gpu_time() or {}
            print(json.dumps({"case": "moved", "phase": phase, "windows": g.get("windows"),
                              "moved": [{"kernel": x["kernel"][:80], "launch": x["launch"], "recent_us": x["recent_ns"] / 1e3,
                                         "baseline_us": x["baseline_ns"] / 1e3}
                                        for x in g.get("moved", [])]}), flush=True)
    finally:
        hub.level = "step"
        hub.step()
        hub.close()
    # Profiler per-kernel times for the slow layer's matmul against the normal one.
    from torch.profiler import ProfilerActivity, profile as tprof
    res = {}
    for second in ("b", "slow"):
        with tprof(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                step(m, 0, second)
        agg = {}
        for e in prof.key_averages():
            if e.device_type.name == "CUDA" or getattr(e, "device_time_total", 0) > 0:
                agg[e.key[:80]] = getattr(e, "device_time_total", 0) / 20
        res[second] = agg
    diff = sorted(((res["slow"].get(k, 0) - res["b"].get(k, 0), k) for k in set(res["b"]) | set(res["slow"])), reverse=True)[:5]
    print(json.dumps({"case": "moved-profiler", "grew_us_per_step": [[round(d, 1), k] for d, k in diff]}), flush=True)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Issue 50's GPU workloads: the busy ratio gpuspans reports for a lane
against the truth, what a kernel window costs, and tokens/s between windows.

The decoder: --layers layers of layer norm, matmul, gelu, matmul, add (7
kernels a layer with torch 2.11's bf16 matmuls) over a [batch, d] bf16
activation, captured as two CUDA graphs (the first half of the layers,
then the rest; 324 kernels a step at 46 layers) replayed in one "decode" lane, or run eagerly
(323 launches). A step is: the lane
begins, [host stall], graph a, [host stall | a device-to-host copy], graph
b, the lane ends, a sync (an engine reading its sampled tokens).

Workloads (--workloads): graph (no stall), graph_between_{0.5,1}ms (host
work between the replays), graph_before_{0.5,1}ms (host work inside the
lane before the first replay), eager, graph_varying (the stall between the
replays drawn per step from 0/0.25/0.5/1 ms), graph_copy (a pageable
device-to-host copy between the replays, which syncs: into a new tensor
each step; graph_copy_into: into one kept; graph_copy_pinned: into
pinned memory), and graph_step
(no stall for --phase s, then 1 ms between the replays: how fast the
reported ratio follows).

Each role runs in its own process, so that the truth's lane time comes from
a process that never initialised CUPTI:
- bare: the lane's time from torch.cuda.Event pairs at the lane's bounds;
- profiler: busy per step (union of the step's kernel intervals) and its
  copies from torch.profiler;
- gpuspans: a hub at kernel timing auto, one window every --every s, per
  workload: the lane's fields from hub.gpu_time() as they are (whatever
  this build reports: busy, time, served, causes, window cost), and the
  host time of steps inside and outside windows. Run once per library
  given (--libs NAME=PATH,...): e.g. the tree before and after a change;
- tokens: steps/s of the graph decode (no stall) in --block s blocks,
  interleaved over --rounds, at none, events, auto (the default window
  period) and none with torch's replays through the launch guard, as auto
  wraps them.
The parent prints one JSON line per workload and library: truth, what
gpuspans reports, and the error in points; then the tokens/s lines.

On the GPU machine (the library and _hot built here, see bench/results/
h100-served/README.md), about 4 minutes:

    L=out/python/libgpuspans.so
    PYTHONPATH=python GPUSPANS_LIB=$L GPUSPANS_HOT=out/python/_hot.abi3.so \\
        python3 bench/gputime/served.py \\
        --libs callbacks=$L,records=$L+GPUSPANS_LAUNCH_WATCH=records
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

STALLS = (0.0, 0.00025, 0.0005, 0.001)  # graph_varying's choices, seconds

WORKLOADS = {
    "graph": {},
    "graph_between_0.5ms": {"between": 0.0005},
    "graph_between_1ms": {"between": 0.001},
    "graph_before_0.5ms": {"before": 0.0005},
    "graph_before_1ms": {"before": 0.001},
    "eager": {"eager": True},
    "graph_varying": {"varying": True},
    "graph_copy": {"copy": "new"},
    "graph_copy_into": {"copy": "into"},
    "graph_copy_pinned": {"copy": "pinned"},
    "graph_step": {"step": True},
}


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


class Decoder:
    """deep: the layer whose first matmul is twice as wide and second twice
    as deep (its hidden 2d, not d): a build that changed one layer."""

    def __init__(self, torch, d, batch, copy_mb, layers, deep=-1):
        self.t = torch
        self.F = torch.nn.functional
        g = torch.Generator(device="cuda").manual_seed(0)
        dt = torch.bfloat16

        def w(*shape):
            return torch.randn(*shape, generator=g, device="cuda", dtype=dt) * 0.02

        self.d = d
        self.n = layers
        self.w1 = [w(d, 2 * d if i == deep else d) for i in range(layers)]
        self.w2 = [w(2 * d if i == deep else d, d) for i in range(layers)]
        self.x = w(batch, d)
        self.src = w(copy_mb << 19)  # bf16: copy_mb MiB to copy back
        self.into = torch.empty(self.src.shape, dtype=dt)
        self.pinned = torch.empty(self.src.shape, dtype=dt, pin_memory=True)
        self.a = self.capture(0, layers // 2)
        self.b = self.capture(layers // 2, layers)

    def layers(self, lo, hi):
        F, x = self.F, self.x
        for i in range(lo, hi):
            h = F.layer_norm(x, (self.d,)) @ self.w1[i]
            x = x + F.gelu(h) @ self.w2[i]
        self.x.copy_(x)

    def capture(self, lo, hi):
        t = self.t
        s = t.cuda.Stream()
        s.wait_stream(t.cuda.current_stream())
        with t.inference_mode(), t.cuda.stream(s):
            for _ in range(3):
                self.layers(lo, hi)
        t.cuda.current_stream().wait_stream(s)
        g = t.cuda.CUDAGraph()
        with t.inference_mode(), t.cuda.graph(g):
            self.layers(lo, hi)
        return g

    def eager(self):
        with self.t.inference_mode():
            self.layers(0, self.n)


class Steps:
    """The step of a workload; begin and end mark the lane's bounds."""

    def __init__(self, m, wl):
        self.m, self.wl = m, wl
        self.rng = random.Random(50)
        self.stall_now = None  # graph_step: set by the caller
        self.launch_ns = []  # host time of the first launch call (graph a's replay)

    def between(self):
        wl = self.wl
        if wl.get("varying"):
            return self.rng.choice(STALLS)
        if wl.get("step"):
            return self.stall_now or 0.0
        return wl.get("between", 0.0)

    def run(self, begin=None, end=None):
        m, wl = self.m, self.wl
        stall = self.between()
        if begin:
            begin()
        if wl.get("before"):
            spin(wl["before"])
        if wl.get("eager"):
            m.eager()
        else:
            t0 = time.perf_counter_ns()
            m.a.replay()
            self.launch_ns.append(time.perf_counter_ns() - t0)
            if stall:
                spin(stall)
            if wl.get("copy") == "new":
                m.src.cpu()  # pageable: the copy waits for graph a, and the host for the copy
            elif wl.get("copy") == "into":
                m.into.copy_(m.src)  # pageable, one tensor kept: no new pages to fault in
            elif wl.get("copy") == "pinned":
                m.pinned.copy_(m.src)  # pinned: no staging
            m.b.replay()
        if end:
            end()
        m.t.cuda.synchronize()
        return stall


def emit(obj):
    print(json.dumps(obj), flush=True)


def clocks():
    """The GPU's clocks and throttle reasons now (nvidia-smi), to tell a
    slower GPU from a slower step."""
    try:
        q = "clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active"
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=5).stdout.strip()
        return out.splitlines()[0] if out else None
    except Exception:
        return None


# --- roles, each in its own process -------------------------------------------------------------


def role_bare(torch, m, args, names):
    """The lane's time from bare event pairs; CUPTI never initialised here.
    Two passes over the workloads, the second in reverse order: the GPU's
    state drifts over a process's life, and the truth averages both."""
    for pas, name in [(0, n) for n in names] + [(1, n) for n in reversed(names)]:
        wl = WORKLOADS[name]
        st = Steps(m, wl)
        # Warm until the step settles: an eager loop's host time fell by a
        # fifth over a process's first seconds (run 5's two passes).
        warm, k = time.perf_counter() + args.bare_warm, 0
        while k < 30 or time.perf_counter() < warm:
            st.run()
            k += 1
        phases = [("", None)] if not wl.get("step") else [("0ms", 0.0), ("1ms", 0.001)]
        for tag, stall in phases:
            st.stall_now = stall
            n = args.bare_steps
            ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
            stalls = []
            for i in range(n):
                stalls.append(st.run(ev[i][0].record, ev[i][1].record))
            lane = [a.elapsed_time(b) * 1e3 for a, b in ev]
            emit({"role": "bare", "pass": pas, "workload": name + ("@" + tag if tag else ""), "steps": n,
                  "lane_us_mean": statistics.fmean(lane), "lane_us_p50": statistics.median(lane),
                  "lane_us_p10": sorted(lane)[n // 10], "lane_us_p90": sorted(lane)[n * 9 // 10],
                  "stall_us_mean": statistics.fmean(stalls) * 1e6,
                  "launch_us_p50": statistics.median(st.launch_ns[-n:]) / 1e3 if st.launch_ns else None,
                  "clocks": clocks()})


def union(ivs):
    out = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def profiled_steps(torch, st, steps, warm=0.0, warm_steps=20):
    """torch.profiler's records of a workload's steps: per step kept (the
    first two dropped), its kernels and its copies and memsets launched
    inside it, each as (start, end, name) in us. With warm > 0 the steps
    are those of a running loop: warm s of steps, then warm_steps more with
    the profiler on, then the kept ones (after an idle second, a trace's
    export, the same kernels ran 1% longer on an H100:
    bench/gputime/busy_probe.py); with warm 0, 10 steps, then the kept
    ones at once."""
    import bisect
    from torch.profiler import ProfilerActivity, profile as tprof, record_function, schedule

    kw = {}
    if warm > 0:
        end = time.perf_counter() + warm
        while time.perf_counter() < end:
            st.run()
        kw["schedule"] = schedule(wait=0, warmup=warm_steps, active=steps, repeat=1)
    else:
        for _ in range(10):
            st.run()
        warm_steps = 0
    with tprof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], **kw) as prof:
        for i in range(warm_steps + steps):
            with record_function(f"gs_step_{i}"):
                st.run()
            if kw:
                prof.step()
    path = tempfile.mktemp(suffix=".json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        ev = json.load(f)["traceEvents"]
    os.unlink(path)
    spans = sorted((e["ts"], e["ts"] + e["dur"], int(e["name"][8:])) for e in ev
                   if e.get("cat") == "user_annotation" and e.get("name", "").startswith("gs_step_"))
    starts = [s for s, _, _ in spans]
    corr = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            j = bisect.bisect_right(starts, e["ts"]) - 1
            if j >= 0 and e["ts"] <= spans[j][1]:
                corr[e["args"]["correlation"]] = spans[j][2]
    out = {}
    for e in ev:
        c = e.get("cat")
        if c in ("kernel", "gpu_memcpy", "gpu_memset"):
            i = corr.get(e.get("args", {}).get("correlation"))
            if i is not None:
                step = out.setdefault(i, {"kernels": [], "copies": []})
                step["kernels" if c == "kernel" else "copies"].append((e["ts"], e["ts"] + e["dur"], e.get("name", "")))
    return [out[i] for i in sorted(out)[2:] if out[i]["kernels"]]


def role_profiler(torch, m, args, names):
    """Busy per step from torch.profiler, the steps of a running loop: the
    union of the kernels launched inside the step, and the copies' time
    outside any kernel. The process's first --profiler-discard sessions (of
    the first workload) are emitted apart and not used: on an H100 the first
    session read the same running loop's kernels 2% longer than every later
    one and than the windows (bench/results/h100-served/README.md, run 10)."""
    def session(st):
        busy, cp, nk = [], [], []
        for step in profiled_steps(torch, st, args.profiler_steps, warm=args.profiler_warm):
            ku = union([(s, e) for s, e, _ in step["kernels"]])
            busy.append(sum(e - s for s, e in ku))
            nk.append(len(step["kernels"]))
            # Copy time no kernel of the step covers.
            cu = union([(s, e) for s, e, _ in step["copies"]])
            over = sum(max(0.0, min(e, ke) - max(s, ks)) for s, e in cu for ks, ke in ku)
            cp.append(sum(e - s for s, e in cu) - over)
        half = len(busy) // 2
        return {"steps": len(busy), "kernels_per_step": statistics.median(nk),
                "busy_us_mean": statistics.fmean(busy), "busy_us_p50": statistics.median(busy),
                "busy_us_first_half": statistics.fmean(busy[:half]) if half else None,
                "busy_us_second_half": statistics.fmean(busy[half:]) if half else None,
                "copy_us_mean": statistics.fmean(cp) if cp else 0.0, "clocks": clocks()}

    for i, name in enumerate(names):
        wl = WORKLOADS[name]
        st = Steps(m, wl)
        st.stall_now = 0.001 if wl.get("step") else None
        for k in range(args.profiler_discard if i == 0 else 0):
            emit(dict(session(st), role="profiler", discarded=name, session=k))
        emit(dict(session(st), role="profiler", workload=name))


def lane_of(g, lane="decode"):
    for ln in (g or {}).get("lanes", []) or []:
        if ln.get("lane") == lane:
            return ln
    return None


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def reported(ln):
    """Whatever the lane's GPU time holds, lists left out, and the ratios
    this build can give: busy over the window's own lane time, and busy
    over the served (outside windows) time where it reports one."""
    if not ln:
        return None
    out = {k: v for k, v in ln.items() if not isinstance(v, list)}
    rb, rt = num(ln.get("recent_busy_ns")), num(ln.get("recent_time_ns"))
    served = None
    for k in ("recent_served_ns", "served_ns", "recent_served"):
        if num(ln.get(k)):
            served = num(ln.get(k))
            break
    if rb is not None and rt:
        out["ratio_window"] = rb / rt
    if rb is not None and served:
        out["ratio_served"] = rb / served
    for k in ("busy_ratio", "served_busy_ratio", "recent_busy_ratio"):
        if num(ln.get(k)) is not None:
            out["ratio_" + k] = num(ln.get(k))
    # Idle by cause, as shares of the idle it splits (the targets: host
    # over 90% of a stall's idle, copies read as copy).
    for k, v in ln.items():
        if "cause" in k and isinstance(v, dict):
            vals = {c: num(x) for c, x in v.items() if num(x) is not None}
            tot = sum(vals.values())
            if tot > 0:
                out["shares_" + k] = {c: round(x / tot, 4) for c, x in vals.items()}
    return out


def settle(hub):
    """Stops the windows and lets the last ones' analyses land; returns
    hub.gpu_time()."""
    hub.level = "step"
    hub.step()
    hub.drain(2.0)
    for _ in range(3):
        hub.harvest()
    return hub.gpu_time()


class Between:
    """The lane's event time on the steps outside windows, over the last
    phase (the served time of the same seconds: an eager loop's step moves
    by a fifth from one second to the next, CUPTI or not), read from the
    hub's ring of recent spans."""

    def __init__(self, hub):
        self.hub, self.seq, self.armed, self.spans = hub, 0, set(), []
        self.first, self.skip, self.last_poll = 0, 0, 0.0

    def phase(self, skip):
        self.poll()
        self.first, self.skip, self.spans = self.hub.step_number + 1, skip, []

    def step(self, armed):
        if armed:
            self.armed.add(self.hub.step_number)
        if time.perf_counter() - self.last_poll > 0.1:
            self.poll()

    def poll(self):
        self.last_poll = time.perf_counter()
        for sp in self.hub.recent_spans(after_seq=self.seq):
            self.seq = sp.seq
            if sp.kind == "lane" and sp.step >= self.first + self.skip and sp.step not in self.armed:
                self.spans.append(sp.duration_ns / 1e3)

    def mean_us(self):
        return statistics.fmean(self.spans) if self.spans else None


def role_gpuspans(torch, m, args, names):
    import gpuspans

    for name in names:
        wl = WORKLOADS[name]
        st = Steps(m, wl)
        hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", kernel_window_every=args.every,
                           quiet=True)
        hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
        lane = hub.lane("decode")
        inw, outw, series = [], [], []
        between = Between(hub)
        try:
            phases = [(None, args.seconds)] if not wl.get("step") else [(0.0, args.phase), (0.001, args.phase)]
            t0 = time.perf_counter()
            nxt = t0
            i = 0
            for stall, secs in phases:
                st.stall_now = stall
                between.phase(skip=50 if stall is None else 0)
                end = time.perf_counter() + secs
                while time.perf_counter() < end:
                    hub.step()  # a window's open and close happen here, timed apart
                    armed = hub.armed
                    between.step(armed)
                    a = time.perf_counter()
                    st.run(lane.begin, lane.end)
                    dt = (time.perf_counter() - a) * 1e6
                    if i > 50:
                        (inw if armed else outw).append(dt)
                    i += 1
                    if wl.get("step") and time.perf_counter() >= nxt:
                        r = reported(lane_of(hub.gpu_time()))
                        series.append({"t": round(time.perf_counter() - t0, 3), "stall_us": (stall or 0) * 1e6,
                                       **({k: r[k] for k in r if k.startswith("ratio")} if r else {})})
                        nxt += args.sample
            g = settle(hub)
            snap = hub.snapshot()
            between.poll()
        finally:
            hub.close()
        w = (snap.get("kernel_timing") or {}).get("windows") or {}
        ln = lane_of(g)
        rec = {"role": "gpuspans", "workload": name, "lib": os.environ.get("GPUSPANS_LIB", ""), "steps": i,
               "windows": (g or {}).get("windows"), "late": (g or {}).get("late"), "unplaced": (g or {}).get("unplaced"),
               "skipped": (g or {}).get("skipped"), "analysis_ns": (g or {}).get("analysis_ns"),
               "open_ns": w.get("open_ns"), "close_ns": w.get("close_ns"),
               "kernel_timing": (snap.get("kernel_timing") or {}).get("reason") or "ok",
               "host_step_us_p50_between": statistics.median(outw) if outw else None,
               "host_step_us_p50_in_windows": statistics.median(inw) if inw else None,
               "steps_in_windows": len(inw), "lane": reported(ln), "clocks": clocks(),
               "lane_us_between": between.mean_us(),
               "launch_us_p50": statistics.median(st.launch_ns) / 1e3 if st.launch_ns else None}
        if ln and num(ln.get("spans")):
            rec["window_lane_us"] = num(ln.get("time_ns")) / num(ln.get("spans")) / 1e3
            rec["window_busy_us"] = num(ln.get("busy_ns")) / num(ln.get("spans")) / 1e3
        if series:
            rec["series"] = series
        emit(rec)


def role_tokens(torch, m, args, names):
    """Steps/s of the graph decode in long blocks, modes interleaved."""
    import gpuspans

    orig = torch.cuda.CUDAGraph.replay
    h = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", quiet=True)
    guarded = torch.cuda.CUDAGraph.replay  # the package's launch guard around torch's replay
    h.close()
    torch.cuda.CUDAGraph.replay = orig
    # The guard's own cost per replay, host side, no hub stepping.
    st = Steps(m, {})
    for _ in range(50):
        st.run()
    micro = {}
    for label, fn in (("plain", orig), ("guarded", guarded), ("plain2", orig), ("guarded2", guarded)):
        torch.cuda.CUDAGraph.replay = fn
        ts = []
        for _ in range(300):
            a = time.perf_counter_ns()
            m.a.replay()
            ts.append(time.perf_counter_ns() - a)
            torch.cuda.synchronize()
        micro[label] = statistics.median(ts) / 1e3
    torch.cuda.CUDAGraph.replay = orig
    emit({"role": "tokens", "case": "replay_host_us", **micro})
    modes = args.modes.split(",")
    for rnd in range(args.rounds):
        order = modes if rnd % 2 == 0 else modes[::-1]
        for mode in order:
            torch.cuda.CUDAGraph.replay = guarded if mode in ("none+guard", "events+guard") else orig
            hub = lane = None
            if mode.startswith("events"):
                hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="events", quiet=True)
            elif mode == "auto":
                hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", quiet=True)
            if hub:
                hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
                lane = hub.lane("decode")
            ts, armed, since = [], [], []
            last_window = -1
            n = 0
            end = time.perf_counter() + args.block
            start = time.perf_counter()
            while time.perf_counter() < end:
                a = time.perf_counter()
                if hub:
                    hub.step()
                    arm = hub.armed
                    st.run(lane.begin, lane.end)
                else:
                    arm = False
                    st.run()
                dt = (time.perf_counter() - a) * 1e6
                if arm:
                    last_window = n
                ts.append(dt)
                armed.append(arm)
                since.append(n - last_window if last_window >= 0 else -1)
                n += 1
            wall = time.perf_counter() - start
            snap = hub.snapshot() if hub else {}
            if hub:
                hub.level = "step"
                hub.step()
                hub.close()
            torch.cuda.CUDAGraph.replay = orig
            out = [t for t, a in zip(ts, armed) if not a]
            after = [t for t, s in zip(ts, since) if 0 < s <= 500]
            far = [t for t, s in zip(ts, since) if s > 500 or s == -1]
            w = (snap.get("kernel_timing") or {}).get("windows") or {}
            emit({"role": "tokens", "round": rnd, "mode": mode, "steps": n, "steps_per_s": n / wall,
                  "p50_us": statistics.median(ts), "p50_between_us": statistics.median(out) if out else None,
                  "p50_first500_after_window_us": statistics.median(after) if after else None,
                  "p50_later_us": statistics.median(far) if far else None,
                  "window_steps": sum(armed), "window_steps_us": sum(t for t, a in zip(ts, armed) if a),
                  "open_ns": w.get("open_ns"), "close_ns": w.get("close_ns")})


ROLES = {"bare": role_bare, "profiler": role_profiler, "gpuspans": role_gpuspans, "tokens": role_tokens}


def child(args):
    import torch

    m = Decoder(torch, args.d, args.batch, args.copy_mb, args.layers)
    for _ in range(20):
        Steps(m, {}).run()
    names = [n for n in args.workloads.split(",") if n]
    emit({"role": args.role, "case": "device", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
          "layers": args.layers, "d": args.d, "batch": args.batch})
    ROLES[args.role](torch, m, args, names)


def run_child(role, args, env_extra=None, extra=()):
    cmd = [sys.executable, os.path.abspath(__file__), "--role", role] + [a for a in sys.argv[1:] if a != "--all"] + list(extra)
    env = dict(os.environ, **(env_extra or {}))
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = []
    for line in p.stdout.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    sys.stderr.write(f"served.py: role {role} rc={p.returncode} in {time.time() - t0:.0f}s\n")
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-3000:])
    if args.log:
        with open(args.log, "a") as f:
            for o in out:
                f.write(json.dumps(o) + "\n")
            f.write(json.dumps({"role": role, "rc": p.returncode, "stderr_tail": p.stderr[-1500:]}) + "\n")
    return out


def parent(args):
    # NAME=PATH[+VAR=VALUE...]: a library, and environment for its process.
    libs = [x.split("=", 1) for x in args.libs.split(",") if x] if args.libs else [["lib", os.environ.get("GPUSPANS_LIB", "")]]
    bare = {}
    for proc in range(args.bare_procs):  # a process's lane moves with it: several, for the truth's spread
        for o in run_child("bare", args):
            if o.get("role") == "bare" and "workload" in o:
                bare.setdefault(o["workload"], []).append(dict(o, proc=proc))
    for k, v in bare.items():  # the passes' mean, and their spread
        lanes = [x["lane_us_mean"] for x in v]
        procs = [statistics.fmean(x["lane_us_mean"] for x in v if x["proc"] == i) for i in sorted({x["proc"] for x in v})]
        bare[k] = dict(v[0], lane_us_mean=statistics.fmean(lanes), lane_us_passes=lanes, lane_us_procs=procs,
                       lane_us_p50=statistics.fmean(x["lane_us_p50"] for x in v))
    prof, discarded = {}, {}
    for o in run_child("profiler", args):
        if o.get("role") == "profiler" and "workload" in o:
            prof[o["workload"]] = o
        elif o.get("role") == "profiler" and "discarded" in o:
            discarded.setdefault(o["discarded"], []).append(o["busy_us_mean"])
    for k, v in discarded.items():  # kept beside the truth, for the record
        if k in prof:
            prof[k]["busy_us_discarded"] = v
    for i, (tag, path) in enumerate(libs):
        if i == 1 and args.tokens:  # before the second library: the first is the one to judge
            tokens(args)
        path, *envs = path.split("+")
        env = dict(e.split("=", 1) for e in envs)
        if path:
            env["GPUSPANS_LIB"] = path
        for o in run_child("gpuspans", args, env):
            if o.get("role") != "gpuspans" or "workload" not in o:
                continue
            try:
                emit(joined(o, bare, prof, tag))
            except Exception as e:  # the children's lines are in --log: join them again offline
                emit({"workload": o["workload"], "lib": tag, "error": repr(e)})
    if args.tokens and len(libs) < 2:
        tokens(args)


def tokens(args):
    for o in run_child("tokens", args):
        if o.get("role") == "tokens":
            emit(o)


def joined(o, bare, prof, tag):
    """One workload's line: the truth, what gpuspans reported, the error."""
    name = o["workload"]
    key = name + "@1ms" if name == "graph_step" else name
    b, p = bare.get(key), prof.get(name)
    rec = {"workload": name, "lib": tag, "truth": None, "gpuspans": o}
    if b and p:
        truth = p["busy_us_mean"] / b["lane_us_mean"]
        rec["truth"] = {"busy_ratio": truth, "lane_us_bare": b["lane_us_mean"], "lane_us_bare_p50": b["lane_us_p50"],
                        "lane_us_bare_passes": b.get("lane_us_passes"), "lane_us_bare_procs": b.get("lane_us_procs"),
                        "busy_us_profiler": p["busy_us_mean"], "copy_us_profiler": p["copy_us_mean"],
                        "kernels_per_step": p["kernels_per_step"]}
        if len(b.get("lane_us_procs") or []) > 1:  # each bare process's truth: how far a process moves it
            rec["truth"]["busy_ratio_procs"] = [p["busy_us_mean"] / x for x in b["lane_us_procs"]]
        if p.get("busy_us_discarded"):
            rec["truth"]["busy_us_profiler_discarded"] = p["busy_us_discarded"]
        ln = o.get("lane") or {}
        for k in [k for k in ln if k.startswith("ratio")]:
            rec["error_points_" + k[6:]] = round((ln[k] - truth) * 100, 2)
        if o.get("window_lane_us"):
            rec["window_lane_over_bare"] = o["window_lane_us"] / b["lane_us_mean"] - 1
        if o.get("lane_us_between") and ln.get("ratio_served") is not None:
            # The same busy over the lane's event time between windows in the
            # hub's own process: the served time of the same seconds.
            same = p["busy_us_mean"] / o["lane_us_between"]
            rec["truth"]["busy_ratio_same_seconds"] = same
            rec["error_points_served_same_seconds"] = round((ln["ratio_served"] - same) * 100, 2)
        if name == "graph_step" and o.get("series"):
            b0 = bare.get("graph_step@0ms")
            t1 = p["busy_us_mean"] / b["lane_us_mean"]
            t0 = p["busy_us_mean"] / b0["lane_us_mean"] if b0 else None
            rec["truth"]["busy_ratio_phase0"] = t0
            switch = min((s["t"] for s in o["series"] if s["stall_us"] > 0), default=None)
            for k in ("ratio_served", "ratio_window"):
                hit = [s["t"] for s in o["series"] if s["stall_us"] > 0 and k in s and abs(s[k] - t1) <= 0.02]
                if switch is not None:
                    rec["follow_s_" + k] = round(hit[0] - switch, 2) if hit else None
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--role", choices=sorted(ROLES), help="run one role in this process (the parent runs them all)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--libs", default="", help="NAME=PATH[+VAR=VALUE...],... libraries (and environment) to run the "
                    "gpuspans role with, one process each (default: $GPUSPANS_LIB)")
    ap.add_argument("--layers", type=int, default=46)
    ap.add_argument("--d", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--copy-mb", type=int, default=4)
    ap.add_argument("--bare-steps", type=int, default=600)
    ap.add_argument("--bare-procs", type=int, default=1, help="bare: processes (the truth's lane is their mean)")
    ap.add_argument("--bare-warm", type=float, default=1, help="bare: seconds of a workload's steps before its events")
    ap.add_argument("--profiler-steps", type=int, default=40)
    ap.add_argument("--profiler-discard", type=int, default=1, help="profiler: the process's first sessions, not used")
    ap.add_argument("--profiler-warm", type=float, default=2, help="profiler: seconds of a workload's steps first")
    ap.add_argument("--seconds", type=float, default=4, help="gpuspans: seconds per workload")
    ap.add_argument("--every", type=float, default=0.25, help="gpuspans: window period, s")
    ap.add_argument("--phase", type=float, default=4, help="graph_step: seconds per phase")
    ap.add_argument("--sample", type=float, default=0.25, help="graph_step: reads of the ratio, s")
    ap.add_argument("--tokens", type=int, default=1, help="run the tokens/s blocks (0: not)")
    ap.add_argument("--modes", default="none,events,none+guard,auto")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--block", type=float, default=12, help="tokens: seconds per block")
    ap.add_argument("--log", default="", help="append every child's lines here")
    args = ap.parse_args()
    if args.role:
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A decode loop as serving engines run it: CUDA-graph decode, eager prefill.

The decoder of torch_decode.py (random weights, KV cache) decodes through
one CUDA graph, captured once for the batch shape and replayed every step;
a new batch's prefill runs eagerly every --prefill-every steps. Nobody wraps
a kernel by hand: with kernel_timing "auto" gpuspans takes every kernel of
kernel windows (one step every 10 s by default; "auto@S" opens one every S
seconds) from CUPTI, graph replays included, with CUPTI detached between
windows; "attached" keeps CUPTI attached and collects 1 step in
--kernel-span-every. It reports, as markdown:

- tokens/s with no telemetry, at Off, and at Kernel with each kernel_timing
  (median of interleaved rounds, with each round), the first --warmup steps
  of each run left out (the pool's opening, and auto's first window);
- the steps inside and outside windows, and what a window costs the
  stepping thread (open, close) from the hub's own histograms;
- per window: the kernels that landed against the kernels of the graph and
  the prefill, and their names;
- torch.profiler and windows in both orders in one process.

Run on a GPU machine with the library built here:

    PYTHONPATH=python GPUSPANS_LIB=out/python/libgpuspans.so \\
        python3 python/examples/torch_graph_decode.py [--rounds 7] [--steps 400]
"""

import argparse
import os
import statistics
import sys
import time

import gpuspans

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_decode import TorchModel  # noqa: E402  (the same decoder)

# "kernel/attached" leaves CUPTI attached for the rest of the process, and
# windows off: give it a process of its own (--variants none,off,kernel/attached).
VARIANTS = ("none", "off", "kernel/events", "kernel/auto", "kernel/auto@1", "kernel/auto@0.25")


class GraphDecoder:
    """TorchModel's decode as one capturable step: fixed shapes, the
    position in a device tensor, attention over the whole cache masked."""

    def __init__(self, torch, model):
        self.torch, self.m = torch, model
        self.tok = model.tok.clone()
        self.pos = torch.zeros(1, dtype=torch.long, device="cuda")
        self.arange = torch.arange(model.max_len, device="cuda")
        self.graph = None

    def _step(self):
        t, m, F = self.torch, self.m, self.m.F
        x = m.emb[self.tok]
        mask = (self.arange <= self.pos).view(1, 1, 1, -1)
        for i, w in enumerate(m.w):
            q, k, v = m._split(F.layer_norm(x, (m.d,)), w)
            m.k[i].index_copy_(2, self.pos, k)
            m.v[i].index_copy_(2, self.pos, v)
            a = F.scaled_dot_product_attention(q, m.k[i], m.v[i], attn_mask=mask)
            x = x + a.transpose(1, 2).reshape(x.shape) @ w["o"]
            x = m._mlp(x, w)
        self.tok.copy_((F.layer_norm(x, (m.d,)) @ m.lm).argmax(-1))
        self.pos.add_(1)

    def capture(self):
        t = self.torch
        s = t.cuda.Stream()
        s.wait_stream(t.cuda.current_stream())
        with t.inference_mode(), t.cuda.stream(s):
            for _ in range(3):  # warm up outside the graph, as torch asks
                self._step()
        t.cuda.current_stream().wait_stream(s)
        self.graph = t.cuda.CUDAGraph()
        with t.inference_mode(), t.cuda.graph(self.graph):
            self._step()

    def start_batch(self):
        """Eager prefill of a new batch, then the graph's inputs from it."""
        self.m.prefill(None, None)
        self.tok.copy_(self.m.tok)
        self.pos.fill_(self.m.pos)
        self.host_pos = self.m.pos

    def decode(self):
        if self.host_pos + 1 >= self.m.max_len:
            self.pos.fill_(self.m.prompt)  # keep decoding over the prompt's cache
            self.host_pos = self.m.prompt
        self.graph.replay()
        self.host_pos += 1


def run(args, torch, dec, variant):
    """tokens/s of one run, its step times in us split into armed and
    unarmed steps, and the hub's snapshot (None without a hub)."""
    hub = None
    if variant != "none":
        level, _, timing = variant.partition("/")
        timing, _, every = timing.partition("@")
        hub = gpuspans.Hub(lanes=["prefill", "decode"], level=level, kernel_span_every=args.kernel_span_every,
                           kernel_timing=timing or "events", kernel_window_every=float(every or 0), quiet=True)
        hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
    prefill, decode = (hub.lane("prefill"), hub.lane("decode")) if hub else (None, None)
    try:
        tokens = 0
        times = {"armed": [], "unarmed": []}
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(args.steps):
            if i == args.warmup:
                tokens, t0 = 0, time.perf_counter()
            ts = time.perf_counter()
            armed = False
            if hub:
                hub.step()
                armed = hub.armed
            if i % args.prefill_every == 0:
                if hub:
                    with prefill:
                        dec.start_batch()
                else:
                    dec.start_batch()
            if hub:
                with decode:
                    dec.decode()
            else:
                dec.decode()
            if args.sync:
                dec.tok.cpu()  # the sampled tokens, as an engine reads them every step
            tokens += dec.m.batch
            if i >= args.warmup:
                times["armed" if armed else "unarmed"].append((time.perf_counter() - ts) * 1e6)
        torch.cuda.synchronize()
        rate = tokens / (time.perf_counter() - t0)
        snap = None
        if hub:
            tracing = hub.tracing_kernels
            hub.level = "step"
            hub.step()  # closes a window still open, here: on the launching thread
            hub.drain(2.0)
            snap = hub.snapshot()
            snap["tracing"] = tracing
        return rate, times, snap
    finally:
        if hub:
            hub.close()


def call_costs(args, torch, dec):
    """Host time per call in the loop, us (p50, p90): step() with and without
    the background harvester, a lane's begin and end, and torch.cuda.Event
    records at the same points. Returns lines of markdown."""
    t = time.perf_counter_ns
    out = ["| call | harvester | p50 us | p90 us |", "| --- | --- | ---: | ---: |"]

    def q(xs, f):
        xs = sorted(xs)
        return xs[int(f * (len(xs) - 1))] / 1e3

    for bg in (False, True):
        with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_span_every=args.kernel_span_every,
                          quiet=True) as hub:
            hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
            if bg:
                hub.start_harvester(0.001)
            decode = hub.lane("decode")
            step, begin, end, ev0, ev1 = [], [], [], [], []
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for i in range(args.steps):
                a = t()
                hub.step()
                b = t()
                decode.begin()
                c = t()
                e0.record()
                d = t()
                dec.decode()
                e = t()
                e1.record()
                f = t()
                decode.end()
                g = t()
                dec.tok.cpu()
                if i >= 16:  # past the pool's opening
                    step.append(b - a)
                    begin.append(c - b)
                    ev0.append(d - c)
                    ev1.append(f - e)
                    end.append(g - f)
            for name, xs in (("hub.step()", step), ("lane begin", begin), ("lane end", end),
                             ("torch.cuda.Event.record before the replay", ev0),
                             ("torch.cuda.Event.record after the replay", ev1)):
                out.append(f"| {name} | {'on' if bg else 'off'} | {q(xs, 0.5):.2f} | {q(xs, 0.9):.2f} |")
    return out


def coexistence(torch, dec):
    """torch.profiler beside the tracer: released first, as the docs say,
    and not released. Returns lines of markdown."""
    from torch.profiler import ProfilerActivity, profile

    def profiled():
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                dec.decode()
            torch.cuda.synchronize()
        return sum(1 for e in prof.events() if e.device_type.name == "CUDA")

    out = []

    def windows(hub, n):
        before = hub.snapshot()["kernel_timing"]["windows"]
        for _ in range(n):
            hub.request_kernel_window()
            hub.step()
            dec.decode()
            dec.tok.cpu()
            hub.step()  # closes the window
        hub.drain(2.0)
        after = hub.snapshot()["kernel_timing"]["windows"]
        return after["opened"] - before["opened"], after["kernels"] - before["kernels"], after["skipped"] - before["skipped"]

    out.append(f"- torch.profiler before any window: {profiled()} CUDA events")
    with gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", quiet=True) as hub:
        hub.install(torch.cuda.current_device(), torch.cuda.current_stream())

        def line(what):
            opened, kernels, skipped = windows(hub, 5)
            out.append(f"- {what}: 5 windows asked, {opened} opened, {skipped} skipped, {kernels} kernels landed")

        line("a hub made with kernel_timing=\"auto\" after it")
        for r in range(2):
            out.append(f"- torch.profiler: {profiled()} CUDA events")
            line("windows after it, kernel timing untouched")
            hub.kernel_timing = "auto"  # the profiler is done: take CUPTI back
            line("after `hub.kernel_timing = \"auto\"`")
        s = hub.snapshot()["kernel_timing"]
        out.append(f"- at the end: tracing {s['tracing']}, fallbacks {s['fallbacks']}, reason {s.get('reason', '') or '-'}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds per variant (after one warm-up)")
    ap.add_argument("--steps", type=int, default=400, help="engine steps per run")
    ap.add_argument("--prefill-every", type=int, default=64, help="a new batch (eager prefill) every this many steps")
    ap.add_argument("--kernel-span-every", type=int, default=16, help="arm kernel spans on 1 step in this many")
    ap.add_argument("--no-sync", dest="sync", action="store_false",
                    help="let the host run ahead of the GPU (by default each step reads its tokens back, as engines do)")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=64, help="steps of each run left out of its rate and step times")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated variants to run")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    if args.warmup < 0 or args.warmup >= args.steps:
        ap.error("--warmup must be 0..steps-1")
    variants = tuple(v for v in args.variants.split(",") if v)
    bad = [v for v in variants if v.split("@")[0] not in ("none", "off", "kernel/events", "kernel/auto", "kernel/cupti", "kernel/attached")]
    if bad or "none" not in variants or "off" not in variants:
        ap.error(f"--variants: {bad or 'none and off are needed'}")
    for name in ("rounds", "steps", "prefill_every", "kernel_span_every", "layers", "d_model", "batch"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    import torch  # only here: argument errors need no GPU

    if not torch.cuda.is_available():
        sys.exit("torch_graph_decode: no CUDA device visible to torch")
    model = TorchModel(torch, torch.cuda.current_stream(), layers=args.layers, d_model=args.d_model, batch=args.batch)
    dec = GraphDecoder(torch, model)
    dec.start_batch()
    dec.capture()

    rates = {v: [] for v in variants}
    steps = {v: {"armed": [], "unarmed": []} for v in variants}
    snaps = {}
    for r in range(args.rounds + 1):  # round 0 warms up
        for v in variants:
            rate, times, snap = run(args, torch, dec, v)
            if r > 0:
                rates[v].append(rate)
                for k, xs in times.items():
                    steps[v][k].extend(xs)
            if snap is not None:
                snaps[v] = snap
    med = {v: statistics.median(x) for v, x in rates.items()}

    w = sys.stdout.write
    w(f"# CUDA-graph decode with gpuspans\n\n{torch.cuda.get_device_name(0)}, torch {torch.__version__}; "
      f"{model.describe()}; {args.steps} steps per run, {args.rounds} rounds, "
      f"kernel_span_every={args.kernel_span_every}, prefill every {args.prefill_every} steps, "
      f"first {args.warmup} steps of each run left out\n\n")
    w(f"command: `{' '.join([os.path.basename(sys.executable)] + sys.argv)}`\n\n")
    w("| variant | tokens/s (median) | vs none | vs off | rounds (tokens/s) | spread (max/min - 1) |\n")
    w("| --- | ---: | ---: | ---: | --- | ---: |\n")
    for v in variants:
        xs = rates[v]
        w(f"| {v} | {med[v]:,.0f} | {med[v] / med['none'] - 1:+.2%} | {med[v] / med['off'] - 1:+.2%} | "
          f"{', '.join(f'{x:,.0f}' for x in xs)} | {max(xs) / min(xs) - 1:.1%} |\n")
    w("\nArmed steps are a window's steps with auto, 1 in kernel_span_every otherwise.\n\n")
    w("Host time per step, us (each step reads its tokens back: the GPU's step time plus the host's overhead):\n\n")
    w("| variant | unarmed steps p50 | armed steps p50 | armed steps p90 |\n| --- | ---: | ---: | ---: |\n")

    def q(xs, f):
        return f"{sorted(xs)[int(f * (len(xs) - 1))]:.1f}" if xs else "-"

    for v in variants:
        w(f"| {v} | {q(steps[v]['unarmed'], 0.5)} | {q(steps[v]['armed'], 0.5)} | {q(steps[v]['armed'], 0.9)} |\n")
    w("\n")

    w("Kernel windows (the last run of each variant; costs on the stepping thread, ms, from the hub's histograms):\n\n")
    w("| variant | windows | skipped | kernels landed | per window | open p50 / p99 / max | close p50 / p99 / max |\n")
    w("| --- | ---: | ---: | ---: | ---: | --- | --- |\n")
    for v in variants:
        kw = snaps.get(v, {}).get("kernel_timing", {}).get("windows")
        if not kw or not kw["opened"]:
            continue
        o, c = kw["open_ns"], kw["close_ns"]
        w(f"| {v} | {kw['opened']} | {kw['skipped']} | {kw['kernels']} | {kw['last']['kernels']} (last) | "
          f"{o[0] / 1e6:.2f} / {o[1] / 1e6:.2f} / {o[2] / 1e6:.2f} | {c[0] / 1e6:.2f} / {c[1] / 1e6:.2f} / {c[2] / 1e6:.2f} |\n")
    w("\n")

    for v in [v for v in ("kernel/events", "kernel/auto", "kernel/attached") if v in snaps]:
        s = snaps[v]
        kernels = [a for a in s["kernels"] if a["count"]]
        total = sum(a["count"] for a in kernels)
        other = sum(a["count"] for a in kernels if a["name"] in ("other", "?"))
        dropped = {k: n for k, n in s["counters"].items() if k.startswith("dropped_") and n}
        armed = s.get("armed_steps", 0)
        w(f"## {v}\n\nkernel spans from CUPTI: {s['tracing']}; armed steps {armed}; kernel spans {total} "
          f"({total / armed if armed else 0:.1f} per armed step); unnamed (other or ?) {other}; dropped {dropped or 0}; "
          f"begun {s['counters']['begun']}, landed {s['counters']['landed']}\n\n")
        if kernels:
            w("| kernel | spans | min us | p50 us | p99 us | max us |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
            for a in sorted(kernels, key=lambda a: -a["sum_ns"]):
                w(f"| `{a['name']}` | {a['count']} | {a['min_ns'] / 1e3:.1f} | {a.get('p50_ns', 0) / 1e3:.1f} | "
                  f"{a.get('p99_ns', 0) / 1e3:.1f} | {a['max_ns'] / 1e3:.1f} |\n")
            w("\n")
    w("## Host time per call\n\n" + "\n".join(call_costs(args, torch, dec)) + "\n\n")
    if "kernel/attached" in variants:
        return  # windows are off in this process
    try:
        lines = coexistence(torch, dec)
    except Exception as e:  # report it; the tables above stand
        lines = [f"- failed: {type(e).__name__}: {e}"]
    w("## torch.profiler beside the tracer\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Whose GPU time on a GPU: a torch decoder serving two tenants.

Question: does the GPU time gpuspans attributes to each tenant match what
each tenant's requests cost the GPU, measured without gpuspans?

Eight slots of continuous batching over an eager bf16 decoder (batched
projections and MLP, attention per request over its own KV cache). Tenant
A's requests have long prompts and contexts, tenant B's short ones; a
slot's request prefills its prompt in one step, then decodes one token a
step, then the slot takes the next request of its tenant (the same
sequence in every run: each slot draws from its own seeded generator).

  solo A   8 slots of A's requests, no gpuspans: the truth's A_solo is the
           sum of each step's bare torch.cuda.Event time
  solo B   the same with B's requests: B_solo
  mixed    4 slots of A and 4 of B through a hub (lane spans every step,
           ServeRequests with each request's tokens and context,
           EndRequest when it finishes), kernel timing events

With equal request counts per step, A's share of the mixed run's GPU time
should be A_solo / (A_solo + B_solo) (docs/design.md, whose GPU time: the
step's fixed cost is shared equally). The line reports A's attributed
share from the hub's class counters over the measured steps, beside the
truth and a split by token counts; the records against /metrics'
counters and histograms; tokens/s with attribution on and off (same
process, interleaved blocks); and, in a process of its own with kernel
windows (CUPTI), each tenant's busy share.

    PYTHONPATH=python GPUSPANS_LIB=... GPUSPANS_HOT=... python3 bench/attribution/two_tenants.py
"""

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

TENANTS = {"A": ((2048, 4096), (24, 48)), "B": ((64, 256), (24, 48))}


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=4096)
    p.add_argument("--ffn", type=int, default=14336)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--slots", type=int, default=8)
    p.add_argument("--warmup", type=int, default=60, help="steps before measuring, each run")
    p.add_argument("--steps", type=int, default=800, help="steps measured, each run")
    p.add_argument("--rounds", type=int, default=2, help="solo A, solo B, mixed: this many times")
    p.add_argument("--block", type=float, default=2.0, help="seconds a tokens/s block runs")
    p.add_argument("--blocks", type=int, default=8, help="rounds of tokens/s blocks, attribution on and off")
    p.add_argument("--window-seconds", type=float, default=8.0, help="the kernel window run's length; 0: none")
    p.add_argument("--cpu", action="store_true", help="a dry run on the CPU, the hub on a simulated GPU")
    p.add_argument("--prompt-scale", type=float, default=1.0, help="prompts this many times as long (a dry run's are short)")
    p.add_argument("--part", default="main", choices=["main", "windows"], help=argparse.SUPPRESS)
    return p.parse_args()


class CPUEvent:
    """torch.cuda.Event's part used here, on the host clock (--cpu)."""

    def __init__(self, **_):
        self.t = 0.0

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def query(self):
        return True

    def elapsed_time(self, end):
        return 1e3 * (end.t - self.t)


class Machine:
    """The GPU, or with --cpu the CPU and a simulated GPU for the hub."""

    def __init__(self, args, torch):
        self.torch, self.cpu = torch, args.cpu
        self.dev = torch.device("cpu" if args.cpu else "cuda")
        self.dtype = torch.float32 if args.cpu else torch.bfloat16
        self.sim = None

    def event(self):
        return CPUEvent() if self.cpu else self.torch.cuda.Event(enable_timing=True)

    def synchronize(self):
        if not self.cpu:
            self.torch.cuda.synchronize()

    def name(self):
        return "cpu (dry run)" if self.cpu else self.torch.cuda.get_device_name()

    def install(self, hub):
        if self.cpu:
            self.sim = hub.install(0, sim=True)
        else:
            hub.install(self.torch.cuda.current_device(), self.torch.cuda.current_stream())


class Decoder:
    """An eager bf16 decoder: per layer a QKV projection, attention per
    request over its KV cache (torch's SDPA), an output projection and an
    MLP, the projections batched over the step's tokens."""

    def __init__(self, args, torch, mach):
        self.torch, self.F = torch, torch.nn.functional
        dev, dt = mach.dev, mach.dtype
        g = torch.Generator(device=dev).manual_seed(0)
        d, f = args.dim, args.ffn
        self.d, self.h, self.hd = d, args.heads, d // args.heads
        w = lambda *s: (torch.randn(*s, device=dev, dtype=dt, generator=g) * 0.02)
        self.layers = [(w(d, 3 * d), w(d, d), w(d, f), w(f, d)) for _ in range(args.layers)]
        self.maxctx = TENANTS["A"][0][1] + TENANTS["A"][1][1] + 8
        self.cache = torch.zeros(args.slots, args.layers, 2, self.h, self.maxctx, self.hd, device=dev, dtype=dt)
        self.x = torch.randn(self.maxctx * args.slots, d, device=dev, dtype=dt, generator=g) * 0.1
        self.params = sum(x.numel() for l in self.layers for x in l)
        self.sdpa = getattr(self.F, "scaled_dot_product_attention", None) or self.attention

    def attention(self, q, k, v, is_causal):
        """SDPA's arithmetic, for a torch without it (a --cpu dry run)."""
        a = (q @ k.transpose(-1, -2)) / self.hd ** 0.5
        if is_causal:
            t = q.shape[-2]
            a = a.masked_fill(self.torch.ones(t, t, dtype=self.torch.bool).triu(1), float("-inf"))
        return a.softmax(-1) @ v

    def flops(self, work):
        """The step's floating-point operations: its projections and MLP,
        2 a parameter a token, and attention, 4 a head dimension a pair."""
        tokens = sum(t for _, t, _ in work)
        pairs = sum(t * p + t * (t + 1) / 2 for _, t, p in work)
        return 2 * self.params * tokens + 4 * self.d * pairs * len(self.layers)

    def step(self, work):
        """work: (slot, new tokens, position of the first)."""
        torch, F = self.torch, self.F
        T = sum(t for _, t, _ in work)
        x = self.x[:T]
        for li, (wqkv, wo, wup, wdown) in enumerate(self.layers):
            q, k, v = (x @ wqkv).split(self.d, dim=1)
            outs = []
            off = 0
            for slot, t, p in work:
                kc, vc = self.cache[slot, li, 0], self.cache[slot, li, 1]
                kc[:, p:p + t] = k[off:off + t].view(t, self.h, self.hd).transpose(0, 1)
                vc[:, p:p + t] = v[off:off + t].view(t, self.h, self.hd).transpose(0, 1)
                qh = q[off:off + t].view(t, self.h, self.hd).transpose(0, 1).unsqueeze(0)
                o = self.sdpa(qh, kc[:, :p + t].unsqueeze(0), vc[:, :p + t].unsqueeze(0), is_causal=t > 1)
                outs.append(o[0].transpose(0, 1).reshape(t, self.d))
                off += t
            a = torch.cat(outs) @ wo
            x = F.gelu(a @ wup) @ wdown
        return x


class Slot:
    """A batch slot serving one tenant's requests in turn."""

    def __init__(self, tenant, index, scale):
        self.tenant, self.rng, self.scale = tenant, random.Random(f"{tenant}-{index}"), scale
        self.req = None

    def work(self, ids):
        """This step's (request id, new tokens, decoded tokens, position),
        starting the next request (id from ids) if the last one finished."""
        if self.req is None:
            (plo, phi), (dlo, dhi) = TENANTS[self.tenant]
            prompt = max(1, round(self.scale * self.rng.randint(plo, phi)))
            self.req = {"id": next(ids), "prompt": prompt, "left": self.rng.randint(dlo, dhi), "pos": 0}
        r = self.req
        if r["pos"] == 0:
            return r["id"], r["prompt"], 0, 0
        return r["id"], 0, 1, r["pos"]

    def advance(self, tokens):
        """After the step; the request's id when it finished, else None."""
        r = self.req
        if r["pos"] > 0:
            r["left"] -= 1
        r["pos"] += tokens
        if r["left"] == 0:
            self.req = None
            return r["id"]
        return None


def slots_of(mix, n, scale):
    if mix == "mixed":
        return [Slot("A" if i < n // 2 else "B", i if i < n // 2 else i - n // 2, scale) for i in range(n)]
    return [Slot(mix, i, scale) for i in range(n)]


_ids = iter(range(1, 1 << 62))


def run(args, mach, model, mix, hub=None, attribute=True, steps=None, seconds=None):
    """Runs mix for warmup steps, then steps steps (or seconds of them),
    and returns what the measured steps took: their bare event time, wall
    time and tokens, and with a hub that attributes, each tenant's GPU
    time from the hub's class counters over them. A hub without attribute
    records lane spans only."""
    slots = slots_of(mix, args.slots, args.prompt_scale)
    attribute = attribute and hub is not None
    lane = hub.lane("decode") if hub is not None else None
    classes = {t: hub.request_class(model="decoder", tenant=t) for t in TENANTS} if attribute else {}
    ev = [(mach.event(), mach.event()) for _ in range(64)]
    pending, live = [], set()
    gpu_ms, tokens, by_tenant = 0.0, 0, {t: 0 for t in TENANTS}
    serve_s, serve_calls, start = 0.0, 0, {}
    step, measured, t0 = 0, 0, None
    while True:
        if steps is not None and step >= args.warmup + steps:
            break
        if seconds is not None and t0 is not None and time.perf_counter() - t0 >= seconds:
            break
        if step == args.warmup:
            mach.synchronize()
            if attribute:
                hub.drain(5.0)
                hub.step()
                start = classes_gpu(hub)
            t0 = time.perf_counter()
        work, reqs = [], []
        for i, s in enumerate(slots):
            rid, new, dec, pos = s.work(_ids)
            t = new + dec
            work.append((i, t, pos))
            reqs.append((rid, new, dec, pos + t, classes.get(s.tenant, 0)))
        e0, e1 = ev[step % len(ev)]
        if hub is not None:
            hub.step()
            if attribute:
                c0 = time.perf_counter()
                hub.serve_requests(lane, reqs)
                hub.lane_work(lane, model.flops(work))
                serve_s += time.perf_counter() - c0
                serve_calls += 1
                live.update(r[0] for r in reqs)
            hub.lane_begin(lane)
        e0.record()
        model.step(work)
        e1.record()
        if mach.sim is not None and hub is not None:
            mach.sim.launch(e0.elapsed_time(e1) / 1e3)  # the lane span times the step
        if hub is not None:
            hub.lane_end(lane)
        if step >= args.warmup:
            pending.append((e0, e1))
            for s, (_, t, _) in zip(slots, work):
                tokens += t
                by_tenant[s.tenant] += t
            measured += 1
        for s, (_, t, _) in zip(slots, work):
            done = s.advance(t)
            if done is not None and attribute:
                hub.end_request(done)
                live.discard(done)
        if len(pending) >= len(ev) // 2:
            pending[0][1].synchronize()
            while pending and pending[0][1].query():
                a, b = pending.pop(0)
                gpu_ms += a.elapsed_time(b)
        step += 1
    mach.synchronize()
    wall = time.perf_counter() - t0
    for a, b in pending:
        gpu_ms += a.elapsed_time(b)
    out = {"mix": mix, "steps": measured, "gpu_ms": gpu_ms, "wall_s": wall, "tokens": tokens,
           "tokens_per_s": tokens / wall, "tokens_by_tenant": by_tenant}
    if attribute:
        hub.drain(5.0)
        hub.step()
        end = classes_gpu(hub)
        out["attributed_ns"] = {t: end.get(t, 0) - start.get(t, 0) for t in TENANTS}
        out["serve_us_per_call"] = 1e6 * serve_s / max(serve_calls, 1)
        out["serve_ns_per_request"] = 1e9 * serve_s / max(serve_calls * args.slots, 1)
        for rid in live:
            hub.end_request(rid)
    return out


def classes_gpu(hub):
    """Each tenant's GPU time so far, ns, from the hub's class counters."""
    out = {}
    for c in hub.attribution().get("classes", []):
        out[c["tenant"]] = out.get(c["tenant"], 0) + sum(l["gpu_ns"] for l in c["lanes"])
    return out


def metrics_by_tenant(text):
    """/metrics' request counters and histograms per tenant."""
    out = {}
    pat = re.compile(r'^(gpuspans_request_gpu_seconds_total|gpuspans_requests_finished_total|gpuspans_request_gpu_time_seconds_(?:sum|count))\{([^}]*)\} (\S+)$')
    for line in text.splitlines():
        m = pat.match(line)
        if not m:
            continue
        labels = dict(kv.split("=", 1) for kv in re.findall(r'(\w+="[^"]*")', m.group(2)))
        tenant = labels.get("tenant", '""').strip('"')
        d = out.setdefault(tenant, {})
        d[m.group(1)] = d.get(m.group(1), 0.0) + float(m.group(3))
    return out


def main_part(args):
    import torch
    mach = Machine(args, torch)
    model = Decoder(args, torch, mach)
    emit({"machine": mach.name(), "torch": torch.__version__, "params": model.params, "args": vars(args)})
    # Solo runs first, gpuspans not loaded: the truth.
    rounds = []
    import gpuspans  # loaded now: the solo runs above and below never touch it
    for rnd in range(args.rounds):
        a = run(args, mach, model, "A", steps=args.steps)
        b = run(args, mach, model, "B", steps=args.steps)
        hub = gpuspans.Hub(lanes=["decode"], level="kernel", quiet=True)
        mach.install(hub)
        m = run(args, mach, model, "mixed", hub=hub, steps=args.steps)
        truth = a["gpu_ms"] / (a["gpu_ms"] + b["gpu_ms"])
        att = m["attributed_ns"]
        share = att["A"] / max(att["A"] + att["B"], 1)
        tok = m["tokens_by_tenant"]
        line = {"round": rnd, "A_solo_ms": a["gpu_ms"], "B_solo_ms": b["gpu_ms"], "mixed_ms": m["gpu_ms"],
                "attributed_ms": {t: v / 1e6 for t, v in att.items()},
                "attributed_vs_mixed_events": (att["A"] + att["B"]) / 1e6 / m["gpu_ms"],
                "A_share_truth": truth, "A_share_attributed": share,
                "A_share_by_tokens": tok["A"] / (tok["A"] + tok["B"]),
                "points_off": 100 * (share - truth), "token_split_points_off": 100 * (tok["A"] / (tok["A"] + tok["B"]) - truth),
                "serve_us_per_call": m["serve_us_per_call"], "serve_ns_per_request": m["serve_ns_per_request"],
                "lane_model": hub.attribution()["lanes"][0]["model"]}
        emit(line)
        rounds.append(line)
        if args.cpu:
            emit({"debug": hub.attribution()})
        # The records against /metrics, every request ended and landed.
        hub.drain(5.0)
        hub.step()
        recs = hub.finished_requests()
        rec = {}
        for r in recs:
            d = rec.setdefault(r["tenant"], {"gpu_s": 0.0, "n": 0})
            d["gpu_s"] += r["gpu_ns"] / 1e9
            d["n"] += 1
        met = metrics_by_tenant(hub.metrics_text())
        agree = {t: {"records_gpu_s": rec[t]["gpu_s"], "metrics_gpu_s": met[t]["gpuspans_request_gpu_seconds_total"],
                     "records": rec[t]["n"], "metrics_finished": met[t]["gpuspans_requests_finished_total"],
                     "histogram_count": met[t]["gpuspans_request_gpu_time_seconds_count"],
                     "histogram_sum_s": met[t]["gpuspans_request_gpu_time_seconds_sum"]} for t in rec}
        emit({"round": rnd, "records_vs_metrics": agree,
              "agree": all(abs(v["records_gpu_s"] - v["metrics_gpu_s"]) < 1e-6 and v["records"] == v["metrics_finished"] == v["histogram_count"]
                           and abs(v["histogram_sum_s"] - v["records_gpu_s"]) < 1e-6 for v in agree.values())})
        hub.close()
    emit({"summary": "shares", "points_off": [r["points_off"] for r in rounds],
          "token_split_points_off": [r["token_split_points_off"] for r in rounds]})
    # Tokens/s with attribution on and off, interleaved in one process:
    # the same hub at kernel level, lane spans every step either way.
    hub = gpuspans.Hub(lanes=["decode"], level="kernel", quiet=True)
    mach.install(hub)
    ratios = []
    for rnd in range(args.blocks):
        order = ["on", "off"] if rnd % 2 == 0 else ["off", "on"]
        tps = {}
        for mode in order:
            r = run(args, mach, model, "mixed", hub=hub, attribute=mode == "on", seconds=args.block)
            tps[mode] = r["tokens_per_s"]
        ratios.append(tps["on"] / tps["off"])
        emit({"block": rnd, "tokens_per_s": tps, "on_over_off": ratios[-1]})
    emit({"summary": "tokens_per_s", "on_over_off_median": statistics.median(ratios), "on_over_off": ratios})
    hub.close()


def windows_part(args):
    """Kernel windows (CUPTI) on the mixed run: each tenant's busy share."""
    import torch
    import gpuspans
    mach = Machine(args, torch)
    model = Decoder(args, torch, mach)
    timing = "events" if args.cpu else "auto"
    hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing=timing, kernel_window_every=0.25, quiet=True)
    mach.install(hub)
    r = run(args, mach, model, "mixed", hub=hub, seconds=args.window_seconds)
    hub.drain(5.0)
    hub.step()
    recs = hub.finished_requests()
    out = {}
    for x in recs:
        d = out.setdefault(x["tenant"], {"gpu_ns": 0, "busy_ns": 0, "busy_time_ns": 0, "n": 0})
        for k in ("gpu_ns", "busy_ns", "busy_time_ns"):
            d[k] += x[k]
        d["n"] += 1
    att = hub.attribution()
    emit({"part": "windows", "tenants": out, "lanes": att["lanes"], "windows": hub.snapshot()["kernel_timing"]["windows"].get("opened"),
          "busy_le_gpu": all(x["busy_ns"] <= x["busy_time_ns"] <= x["gpu_ns"] for x in recs),
          "tokens_per_s": r["tokens_per_s"]})
    hub.close()


def emit(obj):
    print(json.dumps(obj), flush=True)


def main():
    args = parse()
    if args.part == "windows":
        windows_part(args)
        return
    main_part(args)
    if args.window_seconds > 0:
        cmd = [sys.executable, __file__, "--part", "windows", "--window-seconds", str(args.window_seconds),
               "--layers", str(args.layers), "--dim", str(args.dim), "--ffn", str(args.ffn), "--heads", str(args.heads),
               "--slots", str(args.slots), "--warmup", str(args.warmup), "--prompt-scale", str(args.prompt_scale)] + (["--cpu"] if args.cpu else [])
        subprocess.run(cmd, check=False)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A transformer decode loop in torch, timed by gpuspans at each level.

A small decoder with random weights serves batches: a prefill lane when a
batch starts, a decode lane every step, and kernel spans around each
layer's attention and MLP on armed steps (1 in 16 by default). It reports,
as markdown:

- tokens/s with no telemetry calls at all, and with gpuspans at Off, Step
  and Kernel (median of interleaved rounds);
- lane spans against torch.cuda.Event pairs recorded at the same points of
  the same steps (max |diff|, max relative diff; the target is 5 us or 1%);
- the cost per span of the Python binding (lane begin + end, harvest
  included), of torch.cuda.Event pairs (create, 2 records, elapsed_time),
  and of the driver's event pair through ctypes (the floor, plus ctypes'
  own cost), and of a disabled call.

Run on a GPU machine (no Go needed: carry the library built here):

    PYTHONPATH=python GPUSPANS_LIB=out/python/libgpuspans.so \
        python3 python/examples/torch_decode.py [--rounds 5] [--steps 200]

It exits non-zero only on errors; misses against the targets are reported
in the tables. The measurement logic takes its runtime and model as
arguments, so python/tests/test_torch_decode.py runs it without torch on
the simulated GPU.
"""

import argparse
import ctypes
import math
import os
import platform
import statistics
import sys
import time

import gpuspans

LEVELS = ("none", "off", "step", "kernel")


# The measurement harness: no torch in here.


class Lanes:
    """The engine's lanes, with optional event pairs at the same points."""

    def __init__(self, hub):
        self.hub = hub
        self.prefill = hub.lane("prefill").index if hub else 0
        self.decode = hub.lane("decode").index if hub else 1


def engine_step(hub, lanes, model, dev, step, prefill_every, events=None):
    """One engine step: a prefill when a batch starts, then one decode.
    events, when given, is a dict lane -> (begin, end) event pair, recorded
    just inside the lane's gpuspans begin and end."""
    if hub is not None:
        hub.step()
    for lane, work in ((lanes.prefill, model.prefill), (lanes.decode, model.decode)):
        if lane == lanes.prefill and step % prefill_every:
            continue
        if hub is not None:
            hub.lane_begin(lane)
        if events is not None:
            events[lane][0].record()
        work(hub, dev)
        if events is not None:
            events[lane][1].record()
        if hub is not None:
            hub.lane_end(lane)


def new_hub(args, level):
    return gpuspans.Hub(
        lanes=["prefill", "decode"], level=level, kernel_span_every=args.kernel_span_every, quiet=True
    )


def throughput(args, rt, model, install):
    """tokens/s per level: interleaved rounds, the median of each."""
    rates = {lv: [] for lv in LEVELS}
    spans = {}
    for r in range(args.rounds + 1):  # round 0 warms up
        for lv in LEVELS:
            hub = None if lv == "none" else new_hub(args, lv)
            try:
                dev = install(hub) if hub else install(None)
                lanes = Lanes(hub)
                model.reset()
                for i in range(args.warmup):
                    engine_step(hub, lanes, model, dev, i, args.prefill_every)
                rt.synchronize()
                tokens = 0
                t0 = time.perf_counter()
                for i in range(args.steps):
                    engine_step(hub, lanes, model, dev, i, args.prefill_every)
                    tokens += model.batch
                rt.synchronize()
                dt = time.perf_counter() - t0
                if r > 0:
                    rates[lv].append(tokens / dt)
                if hub is not None:
                    hub.drain(2.0)
                    snap = hub.snapshot()
                    spans[lv] = (
                        sum(a["count"] for a in snap["lanes"]),
                        sum(a["count"] for a in snap["kernels"]),
                        {k[len("dropped_"):]: v for k, v in snap["counters"].items() if k.startswith("dropped_")},
                        snap["devices"][0]["state"] if snap["devices"] else "none",
                    )
            finally:
                if hub is not None:
                    hub.close()
    return {lv: statistics.median(v) for lv, v in rates.items()}, rates, spans


def agreement(args, rt, model, install):
    """Lane spans against event pairs at the same points, span by span: one
    step at a time, synchronised, so each lane's sum grows by one span."""
    hub = new_hub(args, "kernel")
    try:
        dev = install(hub)
        lanes = Lanes(hub)
        model.reset()
        diffs = {lanes.prefill: [], lanes.decode: []}
        missing = 0
        prev = None
        for i in range(args.agree_steps + 1):
            events = {ln: (rt.event(), rt.event()) for ln in diffs}
            # Keep the GPU behind the host for the whole step, as a busy
            # engine's is: both pairs' events are then stamped where the
            # work is. On an idle GPU each event is stamped when the host
            # records it, and the pairs differ by the host's time between
            # the two record calls (tens of us from Python).
            rt.busy(args.agree_lead_us)
            engine_step(hub, lanes, model, dev, i, args.prefill_every, events)
            rt.synchronize()
            hub.harvest()
            if hub.drain(1.0):
                missing += 1
            snap = hub.snapshot()
            cur = {i: (a["count"], a["sum_ns"]) for i, a in enumerate(snap["lanes"])}
            if prev is not None:  # step 0 opened the pool: its spans may not exist
                for ln in diffs:
                    if ln == lanes.prefill and i % args.prefill_every:
                        continue
                    n = cur[ln][0] - prev[ln][0]
                    if n != 1:
                        missing += 1
                        continue
                    g = (cur[ln][1] - prev[ln][1]) / 1e3  # us
                    t = events[ln][0].elapsed_ms(events[ln][1]) * 1e3
                    diffs[ln].append((g, t))
            prev = cur
        return {("prefill" if ln == lanes.prefill else "decode"): d for ln, d in diffs.items()}, missing
    finally:
        hub.close()


def span_costs(args, rt, install):
    """Host cost per span, us: gpuspans lane spans (begin, end, harvest),
    event pairs through the runtime, the driver floor, a disabled call."""
    n, batch = args.cost_spans, 1024
    out = {}
    hub = new_hub(args, "kernel")
    try:
        install(hub)
        hub.step()  # opens the pool
        lane = hub.lane("decode").index
        rec = harv = 0.0
        before = sum(a["count"] for a in hub.snapshot()["lanes"])
        for _ in range(max(n // batch, 1)):
            t0 = time.perf_counter()
            for _ in range(batch):
                hub.lane_begin(lane)
                hub.lane_end(lane)
            t1 = time.perf_counter()
            rt.synchronize()
            t2 = time.perf_counter()
            hub.harvest()
            t3 = time.perf_counter()
            rec += t1 - t0
            harv += t3 - t2
        total = max(n // batch, 1) * batch
        hub.drain(2.0)
        landed = sum(a["count"] for a in hub.snapshot()["lanes"]) - before
        out["gpuspans lane span (Python: begin + end + harvest)"] = ((rec + harv) / total * 1e6, f"{landed} of {total} landed")
    finally:
        hub.close()

    out[f"{rt.event_name} pair (create, 2 records, elapsed)"] = (rt.event_pair_cost(n), "")

    floor = rt.driver_floor(n)
    if floor is not None:
        out["driver event pair via ctypes (2 records, query, elapsed): floor + ctypes"] = (floor, "")

    off = new_hub(args, "off")
    try:
        install(off)
        t0 = time.perf_counter()
        for _ in range(n):
            off.lane_begin(0)
        t1 = time.perf_counter()
        for _ in range(n):
            pass
        t2 = time.perf_counter()
        out["gpuspans disabled call (level Off), minus an empty loop"] = (((t1 - t0) - (t2 - t1)) / n * 1e6, "no call into the library")
    finally:
        off.close()
    return out


def report(args, rt, model, install, out=sys.stdout):
    """Runs everything and prints the markdown tables; returns the results."""
    w = out.write
    w(f"# torch decode loop with gpuspans\n\n{rt.describe()}; {model.describe()}; "
      f"{args.steps} steps per run, {args.rounds} rounds, kernel_span_every={args.kernel_span_every}, "
      f"prefill every {args.prefill_every} steps\n\n")
    w(f"command: `{' '.join([os.path.basename(sys.executable)] + sys.argv)}`\n\n")

    med, rates, spans = throughput(args, rt, model, install)
    w("## Throughput\n\n| level | tokens/s (median) | vs none | vs off | rounds (tokens/s) | lane spans | kernel spans | dropped | device |\n")
    w("| --- | ---: | ---: | ---: | --- | ---: | ---: | --- | --- |\n")
    for lv in LEVELS:
        lanes_n, kernels_n, dropped, state = spans.get(lv, ("-", "-", "-", "-"))
        if isinstance(dropped, dict):
            dropped = ", ".join(f"{k} {v}" for k, v in dropped.items() if v) or "0"
        w(f"| {lv} | {med[lv]:,.0f} | {med[lv] / med['none'] - 1:+.2%} | {med[lv] / med['off'] - 1:+.2%} | "
          f"{', '.join(f'{x:,.0f}' for x in rates[lv])} | {lanes_n} | {kernels_n} | {dropped} | {state} |\n")
    w("\nTargets: Kernel within 3% of Off at the default arming; Step within noise.\n\n")

    diffs, missing = agreement(args, rt, model, install)
    w("## Lane spans against event pairs at the same points\n\n")
    w(f"Each compared step runs behind {args.agree_lead_us} us of GPU sleep queued ahead, so the GPU is busy when the events are recorded.\n\n")
    w("| lane | spans | mean gpuspans us | mean events us | max abs diff us | max rel diff | within 5 us or 1% |\n")
    w("| --- | ---: | ---: | ---: | ---: | ---: | --- |\n")
    agree = {}
    for lane, d in diffs.items():
        if not d:
            w(f"| {lane} | 0 | - | - | - | - | - |\n")
            continue
        absd = [abs(g - t) for g, t in d]
        rel = [abs(g - t) / t if t > 0 else math.inf for g, t in d]
        ok = all(a <= 5.0 or r <= 0.01 for a, r in zip(absd, rel))
        agree[lane] = (max(absd), max(rel), ok)
        w(f"| {lane} | {len(d)} | {statistics.mean(g for g, _ in d):.1f} | {statistics.mean(t for _, t in d):.1f} | "
          f"{max(absd):.2f} | {max(rel):.3%} | {'yes' if ok else 'NO'} |\n")
    if missing:
        w(f"\n{missing} lane spans did not land or were not found one per step (not compared).\n")
    w("\n")

    costs = span_costs(args, rt, install)
    w("## Cost per span, host side\n\n| what | us per span | note |\n| --- | ---: | --- |\n")
    for what, (us, note) in costs.items():
        w(f"| {what} | {us:.2f} | {note} |\n")
    w("\n")
    return {"throughput": med, "agreement": agree, "costs": costs, "missing": missing}


# torch: the runtime and the model.


class TorchRuntime:
    """Events, synchronisation and the floor on the current CUDA stream."""

    def __init__(self, torch):
        self.torch = torch
        self.stream = torch.cuda.current_stream()
        self.event_name = "torch.cuda.Event"

    def event(self):
        return _TorchEvent(self.torch.cuda.Event(enable_timing=True))

    def event_pair_cost(self, n):
        """us per torch.cuda.Event pair as engines use them: two new events,
        two records, and elapsed_time once complete (the wait excluded)."""
        Event, batch, spent = self.torch.cuda.Event, 1024, 0.0
        rounds = max(n // batch, 1)
        for _ in range(rounds):
            t0 = time.perf_counter()
            pairs = []
            for _ in range(batch):
                b, e = Event(enable_timing=True), Event(enable_timing=True)
                b.record()
                e.record()
                pairs.append((b, e))
            t1 = time.perf_counter()
            self.synchronize()
            t2 = time.perf_counter()
            for b, e in pairs:
                b.elapsed_time(e)
            t3 = time.perf_counter()
            spent += (t1 - t0) + (t3 - t2)
        return spent / (rounds * batch) * 1e6

    def synchronize(self):
        self.torch.cuda.synchronize()

    def busy(self, us):
        """Queues about us microseconds of GPU sleep on the current stream."""
        if us <= 0:
            return
        if getattr(self, "_cycles_per_us", None) is None:
            cycles = 1 << 22
            b, e = self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)
            b.record()
            self.torch.cuda._sleep(cycles)
            e.record()
            e.synchronize()
            self._cycles_per_us = cycles / max(b.elapsed_time(e) * 1e3, 1.0)
        self.torch.cuda._sleep(int(us * self._cycles_per_us))

    def describe(self):
        t = self.torch
        return (f"{t.cuda.get_device_name(0)}, torch {t.__version__}, CUDA {t.version.cuda}, "
                f"Python {platform.python_version()}, gpuspans {gpuspans.__version__}")

    def driver_floor(self, n):
        """us per event pair through the driver API (ctypes), as the Go
        benchmarks' floor measures it: record, record, query, elapsed."""
        try:
            cu = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return None
        ev_t = ctypes.c_void_p
        batch = 1024
        pairs = []
        for _ in range(batch):
            b, e = ev_t(), ev_t()
            if cu.cuEventCreate(ctypes.byref(b), 0) or cu.cuEventCreate(ctypes.byref(e), 0):
                return None
            pairs.append((b, e))
        stream = ctypes.c_void_p(self.stream.cuda_stream)
        ms = ctypes.c_float()
        spent = 0.0
        rounds = max(n // batch, 1)
        try:
            for _ in range(rounds):
                t0 = time.perf_counter()
                for b, e in pairs:
                    cu.cuEventRecord(b, stream)
                    cu.cuEventRecord(e, stream)
                t1 = time.perf_counter()
                self.synchronize()
                t2 = time.perf_counter()
                for b, e in pairs:
                    cu.cuEventQuery(e)
                    cu.cuEventElapsedTime(ctypes.byref(ms), b, e)
                t3 = time.perf_counter()
                spent += (t1 - t0) + (t3 - t2)
        finally:
            for b, e in pairs:
                cu.cuEventDestroy_v2(b)
                cu.cuEventDestroy_v2(e)
        return spent / (rounds * batch) * 1e6


class _TorchEvent:
    """A torch.cuda.Event with the harness's method names."""

    __slots__ = ("ev",)

    def __init__(self, ev):
        self.ev = ev

    def record(self):
        self.ev.record()

    def elapsed_ms(self, end):
        return self.ev.elapsed_time(end.ev)


class TorchModel:
    """A decoder with random weights and a KV cache; decode's attention and
    MLP of each layer are bracketed by kernel spans on armed steps."""

    def __init__(self, torch, stream, layers=8, d_model=1024, heads=16, vocab=32000, batch=8,
                 prompt=128, max_len=1024, dtype="bfloat16"):
        self.torch, self.stream = torch, stream
        self.F = torch.nn.functional
        self.layers, self.d, self.h, self.hd = layers, d_model, heads, d_model // heads
        self.batch, self.prompt, self.max_len, self.vocab = batch, prompt, max_len, vocab
        dt = getattr(torch, dtype)
        dev = "cuda"
        g = torch.Generator(device=dev)
        g.manual_seed(0)
        s = d_model ** -0.5

        def rnd(*shape, scale=s):
            return (torch.randn(*shape, generator=g, device=dev) * scale).to(dt)

        self.w = [dict(qkv=rnd(d_model, 3 * d_model), o=rnd(d_model, d_model),
                       up=rnd(d_model, 4 * d_model), down=rnd(4 * d_model, d_model, scale=(4 * d_model) ** -0.5))
                  for _ in range(layers)]
        self.emb = rnd(vocab, d_model, scale=1.0)
        self.lm = rnd(d_model, vocab)
        self.k = torch.zeros(layers, batch, heads, max_len, self.hd, device=dev, dtype=dt)
        self.v = torch.zeros_like(self.k)
        self.gen = g
        self.reset()

    def describe(self):
        return (f"decoder of {self.layers} layers, d_model {self.d}, {self.h} heads, vocab {self.vocab}, "
                f"batch {self.batch}, prompt {self.prompt}, {self.k.dtype}")

    def reset(self):
        self.pos = 0
        self.tok = self.torch.zeros(self.batch, 1, dtype=self.torch.long, device="cuda")

    def _split(self, x, w):
        b, t, _ = x.shape
        q, k, v = (x @ w["qkv"]).split(self.d, dim=-1)
        return [y.view(b, t, self.h, self.hd).transpose(1, 2) for y in (q, k, v)]

    def _mlp(self, x, w):
        return x + self.F.gelu(self.F.layer_norm(x, (self.d,)) @ w["up"]) @ w["down"]

    @staticmethod
    def _span(hub, name, stream):
        return hub.kernel(name, stream) if hub is not None else _NULL

    def prefill(self, hub, dev):
        t = self.torch
        with t.inference_mode():
            # A new batch: its prompts replace the old batch's cache.
            prompt = t.randint(0, self.vocab, (self.batch, self.prompt), device="cuda", generator=self.gen)
            x = self.emb[prompt]
            p1 = self.prompt
            for i, w in enumerate(self.w):
                q, k, v = self._split(self.F.layer_norm(x, (self.d,)), w)
                self.k[i, :, :, :p1] = k
                self.v[i, :, :, :p1] = v
                a = self.F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + a.transpose(1, 2).reshape(x.shape) @ w["o"]
                x = self._mlp(x, w)
            self.tok = (self.F.layer_norm(x[:, -1:], (self.d,)) @ self.lm).argmax(-1)
            self.pos = p1

    def decode(self, hub, dev):
        t = self.torch
        with t.inference_mode():
            if self.pos + 1 >= self.max_len:
                self.pos = self.prompt  # keep decoding over the prompt's cache
            x = self.emb[self.tok]  # (batch, 1, d)
            p = self.pos
            for i, w in enumerate(self.w):
                with self._span(hub, "attention", self.stream):
                    q, k, v = self._split(self.F.layer_norm(x, (self.d,)), w)
                    self.k[i, :, :, p:p + 1] = k
                    self.v[i, :, :, p:p + 1] = v
                    a = self.F.scaled_dot_product_attention(q, self.k[i, :, :, :p + 1], self.v[i, :, :, :p + 1])
                    x = x + a.transpose(1, 2).reshape(x.shape) @ w["o"]
                with self._span(hub, "mlp", self.stream):
                    x = self._mlp(x, w)
            self.tok = (self.F.layer_norm(x, (self.d,)) @ self.lm).argmax(-1)
            self.pos = p + 1


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NULL = _Null()


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per level (after one warm-up round)")
    ap.add_argument("--steps", type=int, default=200, help="engine steps per measured run")
    ap.add_argument("--warmup", type=int, default=20, help="steps before each measured run")
    ap.add_argument("--prefill-every", type=int, default=64, help="a new batch (prefill) every this many steps")
    ap.add_argument("--kernel-span-every", type=int, default=16, help="arm kernel spans on 1 step in this many")
    ap.add_argument("--agree-steps", type=int, default=200, help="steps compared span by span with event pairs")
    ap.add_argument("--agree-lead-us", type=int, default=5000, help="GPU sleep queued before each compared step (0: none)")
    ap.add_argument("--cost-spans", type=int, default=8192, help="spans per cost measurement")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--dtype", default="bfloat16")
    args = ap.parse_args(argv)
    for name in ("rounds", "steps", "prefill_every", "kernel_span_every", "agree_steps", "cost_spans", "layers", "d_model", "batch"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    import torch  # only here: the harness above runs without it

    if not torch.cuda.is_available():
        sys.exit("torch_decode: no CUDA device visible to torch")
    rt = TorchRuntime(torch)
    model = TorchModel(torch, rt.stream, layers=args.layers, d_model=args.d_model, batch=args.batch, dtype=args.dtype)
    device = torch.cuda.current_device()

    def install(hub):
        if hub is not None:
            hub.install(device, rt.stream)
        return None

    report(args, rt, model, install)


if __name__ == "__main__":
    main()

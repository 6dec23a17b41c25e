#!/usr/bin/env python3
"""What lane spans every step cost a Python engine: the CUDA-graph decode
loop of torch_graph_decode.py with three lanes a step (prefill when a new
batch comes, the graph replay, the token read-back), each variant in its
own process, rounds interleaved across the processes.

Variants: none (no gpuspans); torch-events (torch.cuda.Event records where
the lanes' boundaries are, as an engine timing itself would); off (a hub at
level Off, every call made); lanes (level Kernel, lane_begin/lane_end, the
compiled calls); lanes/ctypes (the same through ctypes, GPUSPANS_HOT=off);
lanes/shared (next_lane and next_step: one event per boundary);
lanes/no-harvester, lanes/shared/no-harvester (step() lands the spans); and
lanes/go, lanes/shared/go (GPUSPANS_SPAN_PATH=go: every lane call crosses
into Go, as before the C span path); and records, records/shared (no hub:
the driver's own cuEventRecord, from C, where lanes and shared lanes
record: the floor, needs --evrecord). Every other hub variant runs the
background harvester. It reports, as markdown:

- tokens/s per variant (median of rounds) and against none, as the median
  of each round's ratio (the processes run one at a time, in an order that
  rotates each round);
- host time per step, and per call at its place in the loop, beside the
  driver's own cuEventRecord there (timed in C: evrecord.c) and
  torch.cuda.Event.record;
- per step inside each process, steps with the variant's calls against
  steps without any, alternating (none: the same steps both ways, the
  comparison's own spread): what the calls cost a step, free of the
  round-to-round noise between processes; and the same in blocks of 25
  steps, the hub's background harvester running only in the blocks with
  calls, so that its cost counts too;
- what landed: spans per lane, drops, and for shared boundaries that the
  lanes tile the step.

Run on a GPU machine with the library and the extension built here:

    PYTHONPATH=python GPUSPANS_LIB=out/python/libgpuspans.so GPUSPANS_HOT=out/python/_hot.abi3.so \\
        python3 python/examples/torch_lane_costs.py --evrecord out/evrecord.so [--rounds 15] [--steps 600]
"""

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = ("none", "torch-events", "off", "lanes/ctypes", "lanes", "lanes/no-harvester", "lanes/shared",
            "lanes/shared/no-harvester", "lanes/go", "lanes/shared/go", "records", "records/shared")
LANES = ["prefill", "decode", "sample"]


# --- the child: one variant, driven over stdin -------------------------------


def graph_decoder(torch, args):
    """torch_graph_decode.py's decoder, captured: one CUDA graph a step."""
    sys.path.insert(0, HERE)
    from torch_decode import TorchModel
    from torch_graph_decode import GraphDecoder

    model = TorchModel(torch, torch.cuda.current_stream(), layers=args.layers, d_model=args.d_model, batch=args.batch)
    dec = GraphDecoder(torch, model)
    dec.start_batch()
    dec.capture()
    return dec


class Engine:
    """One variant's engine: the decoder, and the hub or events it times
    itself with. torch, the decoder and install (hub -> None) are
    parameters for the tests' fakes."""

    def __init__(self, args, variant, torch, dec, install=None):
        self.torch, self.args, self.variant, self.dec = torch, args, variant, dec
        self.describe = f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, Python {sys.version.split()[0]}; {dec.m.describe()}"
        self.hub = None
        if variant not in ("none", "torch-events"):
            import gpuspans

            level = "off" if variant == "off" else "kernel"
            self.hub = gpuspans.Hub(lanes=LANES, level=level, quiet=True)
            if install:
                install(self.hub)
            else:
                self.hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
            if not variant.endswith("no-harvester"):
                self.hub.start_harvester(getattr(args, "harvest_every", 0.001))
            if variant == "lanes/ctypes":
                assert not self.hub.compiled, "lanes/ctypes wants GPUSPANS_HOT=off"
            elif not self.hub.compiled:
                raise SystemExit(f"{variant}: the compiled span calls did not load (GPUSPANS_HOT)")
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(6)]
        self.evrec = None
        if args.evrecord:
            self.evrec = ctypes.CDLL(args.evrecord)
            for fn in (self.evrec.evrecord_timed, self.evrec.evrecord_checked_timed):
                fn.restype = ctypes.c_int64
                fn.argtypes = [ctypes.c_uint64]
            torch.cuda.synchronize()
            st = self.evrec.evrecord_init()
            if st:
                raise SystemExit(f"evrecord_init: {st}")
        self.stream = torch.cuda.current_stream().cuda_stream
        self.i = 0
        self.body = {
            "none": self.step_none,
            "torch-events": self.step_events,
            "off": self.step_lanes,
            "lanes": self.step_lanes,
            "lanes/ctypes": self.step_lanes,
            "lanes/no-harvester": self.step_lanes,
            "lanes/shared": self.step_shared,
            "lanes/shared/no-harvester": self.step_shared,
            "lanes/go": self.step_lanes,
            "lanes/shared/go": self.step_shared,
            "records": self.step_records,
            "records/shared": self.step_records_shared,
        }[variant]
        if variant.startswith("records") and not self.evrec:
            raise SystemExit(f"{variant} needs --evrecord")

    # One engine step each; the same work, the telemetry at the same places.

    def step_none(self):
        d = self.dec
        if self.i % self.args.prefill_every == 0:
            d.start_batch()
        d.decode()
        d.tok.cpu()
        self.i += 1

    def step_events(self):
        d, e = self.dec, self.events
        if self.i % self.args.prefill_every == 0:
            e[0].record()
            d.start_batch()
            e[1].record()
        e[2].record()
        d.decode()
        e[3].record()
        e[4].record()
        d.tok.cpu()
        e[5].record()
        self.i += 1

    def step_lanes(self):
        d, h = self.dec, self.hub
        h.step()
        if self.i % self.args.prefill_every == 0:
            h.lane_begin(0)
            d.start_batch()
            h.lane_end(0)
        h.lane_begin(1)
        d.decode()
        h.lane_end(1)
        h.lane_begin(2)
        d.tok.cpu()
        h.lane_end(2)
        self.i += 1

    def step_shared(self):
        # The read-back of one step runs into the next step's first lane:
        # one event at each boundary.
        d, h = self.dec, self.hub
        if self.i % self.args.prefill_every == 0:
            h.next_step(2, 0)
            d.start_batch()
            h.next_lane(0, 1)
        else:
            h.next_step(2, 1)
        d.decode()
        h.next_lane(1, 2)
        d.tok.cpu()
        self.i += 1

    def step_records(self):
        # The driver's records alone, where step_lanes' boundaries are.
        d, rec, s = self.dec, self.evrec.evrecord_timed, self.stream
        if self.i % self.args.prefill_every == 0:
            rec(s)
            d.start_batch()
            rec(s)
        rec(s)
        d.decode()
        rec(s)
        rec(s)
        d.tok.cpu()
        rec(s)
        self.i += 1

    def step_records_shared(self):
        # The driver's records alone, where step_shared's boundaries are.
        d, rec, s = self.dec, self.evrec.evrecord_timed, self.stream
        rec(s)
        if self.i % self.args.prefill_every == 0:
            d.start_batch()
            rec(s)
        d.decode()
        rec(s)
        d.tok.cpu()
        self.i += 1

    def lane_ns(self):
        """The lanes' landed time so far, ns (all in flight landed first)."""
        self.hub.drain(2.0)
        return sum(a["sum_ns"] for a in self.hub.snapshot()["lanes"])

    def run(self, steps):
        """tokens/s over steps, each step's host time in us, and for lane
        variants the lanes' GPU time over the run's wall time."""
        t = time.perf_counter
        body, times = self.body, []
        lanes = self.hub is not None and self.variant != "off"
        before = self.lane_ns() if lanes else 0
        self.torch.cuda.synchronize()
        t0 = t()
        for _ in range(steps):
            a = t()
            body()
            times.append((t() - a) * 1e6)
        wall = t() - t0
        out = {"rate": steps * self.dec.m.batch / wall, "step_p50_us": statistics.median(times)}
        if lanes:
            if self.variant.startswith("lanes/shared"):
                self.hub.lane_end(2)  # idle between rounds: the last lane ends with its work
            out["lane_share"] = (self.lane_ns() - before) / 1e9 / wall
        return out

    def alternate(self, steps):
        """Host time of steps with the variant's calls and of steps without
        (step_none), alternating, in us: the p50 of each and the median of
        the pairs' differences."""
        t = time.perf_counter
        with_calls, without, diffs = [], [], []
        self.torch.cuda.synchronize()
        for _ in range(steps // 2):
            a = t()
            self.body()
            b = t()
            self.step_none()
            c = t()
            with_calls.append((b - a) * 1e6)
            without.append((c - b) * 1e6)
            diffs.append(with_calls[-1] - without[-1])
        return {"with": statistics.median(with_calls), "without": statistics.median(without),
                "diff": statistics.median(diffs), "diff_q": [q(diffs, 0.25), q(diffs, 0.75)], "pairs": len(diffs)}

    def blocks(self, steps, block=25):
        """As alternate, in blocks of steps, the hub's background harvester
        running in the blocks with calls and stopped in those without: what
        the variant costs a step against no gpuspans at work, inside one
        process. Per pair of blocks, the difference of their medians; us."""
        t = time.perf_counter
        harvester = self.hub is not None and not self.variant.endswith("no-harvester")
        every = getattr(self.args, "harvest_every", 0.001)
        diffs, with_calls, without = [], [], []
        if harvester:
            self.hub.stop_harvester()
        self.torch.cuda.synchronize()
        for _ in range(max(1, steps // (2 * block))):
            if harvester:
                self.hub.start_harvester(every)
            a_times = []
            for _ in range(block):
                a = t()
                self.body()
                a_times.append((t() - a) * 1e6)
            if harvester:
                self.hub.stop_harvester()
            b_times = []
            for _ in range(block):
                a = t()
                self.step_none()
                b_times.append((t() - a) * 1e6)
            with_calls.append(statistics.median(a_times))
            without.append(statistics.median(b_times))
            diffs.append(with_calls[-1] - without[-1])
        if harvester:
            self.hub.start_harvester(every)
        return {"with": statistics.median(with_calls), "without": statistics.median(without),
                "diff": statistics.median(diffs), "diff_q": [q(diffs, 0.25), q(diffs, 0.75)], "pairs": len(diffs)}

    def calls(self, steps):
        """Host time per call at its place in the loop, ns, each call timed
        alone; with the timer's own cost."""
        t = time.perf_counter_ns
        d, h, e, v = self.dec, self.hub, self.events, self.variant
        out = {}
        if h:
            h.keep_start_times()  # for landed()'s check of the calls phase's spans

        def add(name, ns):
            out.setdefault(name, []).append(ns)

        for i in range(steps):
            a = t()
            b = t()
            add("timer", b - a)
            prefill = i % self.args.prefill_every == 0
            if v == "none" or v.startswith("records"):
                if prefill:
                    d.start_batch()
                if self.evrec:
                    add("cuEventRecord before the replay (C)", self.evrec.evrecord_timed(self.stream))
                d.decode()
                if self.evrec:
                    if i % 2:
                        add("cuEventRecord after the replay (C)", self.evrec.evrecord_timed(self.stream))
                    else:
                        add("the core's checks and cuEventRecord after the replay (C)", self.evrec.evrecord_checked_timed(self.stream))
                d.tok.cpu()
                if self.evrec:
                    add("cuEventRecord after the read-back (C)", self.evrec.evrecord_timed(self.stream))
            elif v == "torch-events":
                if prefill:
                    d.start_batch()
                a = t(); e[2].record(); b = t(); add("Event.record before the replay", b - a)
                d.decode()
                a = t(); e[3].record(); b = t(); add("Event.record after the replay", b - a)
                d.tok.cpu()
            elif v.startswith("lanes/shared"):
                if prefill:
                    h.next_step(2, 0)
                    d.start_batch()
                    h.next_lane(0, 1)
                else:
                    a = t(); h.next_step(2, 1); b = t(); add("next_step(sample, decode)", b - a)
                d.decode()
                # In turn: the shared boundary; a crossing that records
                # nothing (sample is not open, decode is) first, so the first
                # call after the replay is measured apart; the boundary as
                # two calls, so the two forms compare in one process; and
                # the driver's own record there, in this process.
                k = i % 5
                if k == 3 and self.evrec:
                    add("cuEventRecord after the replay (C), in this process", self.evrec.evrecord_timed(self.stream))
                    h.next_lane(1, 2)
                elif k == 4 and self.evrec:
                    add("the core's checks and cuEventRecord after the replay (C), in this process",
                        self.evrec.evrecord_checked_timed(self.stream))
                    h.next_lane(1, 2)
                elif k == 1:
                    a = t(); h.lane_end(2); b = t(); add("lane_end(sample), not open: the crossing alone", b - a)
                    a = t(); h.next_lane(1, 2); b = t(); add("next_lane(decode, sample), after that crossing", b - a)
                elif k == 2:
                    a = t(); h.lane_end(1); b = t(); h.lane_begin(2); c = t()
                    add("lane_end(decode) after the replay, in this process", b - a)
                    add("lane_begin(sample), in this process", c - b)
                else:
                    a = t(); h.next_lane(1, 2); b = t(); add("next_lane(decode, sample) after the replay", b - a)
                d.tok.cpu()
            else:
                a = t(); h.step(); b = t(); add("step()", b - a)
                if prefill:
                    h.lane_begin(0)
                    d.start_batch()
                    h.lane_end(0)
                a = t(); h.lane_begin(1); b = t(); add("lane_begin(decode) before the replay", b - a)
                d.decode()
                # As above, in turn: prefill is not open (decode is).
                k = i % 4
                if k == 2 and self.evrec:
                    add("cuEventRecord after the replay (C), in this process", self.evrec.evrecord_timed(self.stream))
                    h.lane_end(1)
                elif k == 3 and self.evrec:
                    add("the core's checks and cuEventRecord after the replay (C), in this process",
                        self.evrec.evrecord_checked_timed(self.stream))
                    h.lane_end(1)
                elif k == 1:
                    a = t(); h.lane_end(0); b = t(); add("lane_end(prefill), not open: the crossing alone", b - a)
                    a = t(); h.lane_end(1); b = t(); add("lane_end(decode), after that crossing", b - a)
                else:
                    a = t(); h.lane_end(1); b = t(); add("lane_end(decode) after the replay", b - a)
                a = t(); h.lane_begin(2); b = t(); add("lane_begin(sample)", b - a)
                d.tok.cpu()
                a = t(); h.lane_end(2); b = t(); add("lane_end(sample) after the read-back", b - a)
        skip = min(16, steps // 4)  # past the pool's opening
        return {k: [q(xs[skip:], f) for f in (0.5, 0.9)] for k, xs in out.items()}

    def landed(self):
        """What the hub landed, for the report's checks."""
        if not self.hub:
            return None
        h = self.hub
        if self.variant.startswith("lanes/shared"):
            h.lane_end(2)
        h.drain(20.0)  # returns once nothing is in flight: the bound is for a loaded machine
        snap = h.snapshot()
        lanes = {a["name"]: {"count": a["count"], "p50_us": a.get("p50_ns", 0) / 1e3} for a in snap["lanes"]}
        c = snap["counters"]
        out = {"lanes": lanes, "steps": h.step_number, "begun": c["begun"], "landed": c["landed"],
               "dropped": {k: n for k, n in c.items() if k.startswith("dropped_") and n}}
        # Shared boundaries: consecutive lane spans on the stream touch, up
        # to the host-clock placement's error.
        spans = sorted((s for s in h.recent_spans() if s.kind == "lane" and s.start_ns), key=lambda s: s.start_ns)
        if spans and self.variant.startswith("lanes/shared"):
            gaps = sorted((abs(b.start_ns - (a.start_ns + a.duration_ns)), a, b) for a, b in zip(spans, spans[1:]))
            out["gaps_ns"] = [gaps[len(gaps) // 2][0], gaps[int(0.99 * (len(gaps) - 1))][0], gaps[-1][0]] if gaps else [0, 0, 0]
            out["spans_checked"] = len(spans)
            if gaps and gaps[-1][0] > 1000:
                _, a, b = gaps[-1]
                out["worst"] = f"{a.name}@{a.step} {a.start_ns}+{a.duration_ns}, {b.name}@{b.step} {b.start_ns}"
        h.close()
        return out


def q(xs, f):
    xs = sorted(xs)
    return xs[int(f * (len(xs) - 1))] if xs else 0


def child(args):
    # Every variant's process on the same cores, so none gets faster ones;
    # eight, as two left the Go runtime's threads contending with the loop
    # (every call cost 1.5 to 2.5 times as much).
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cores) >= 12:
        os.sched_setaffinity(0, cores[2:10])
    import torch

    eng = Engine(args, args.child, torch, graph_decoder(torch, args))
    print(json.dumps({"ready": eng.describe}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if cmd[0] == "run":
            r = eng.run(int(cmd[1]))
        elif cmd[0] == "alternate":
            r = eng.alternate(int(cmd[1]))
        elif cmd[0] == "blocks":
            r = eng.blocks(int(cmd[1]))
        elif cmd[0] == "calls":
            r = eng.calls(int(cmd[1]))
        elif cmd[0] == "landed":
            r = eng.landed()
        else:
            break
        print(json.dumps(r), flush=True)


# --- the parent: the processes, the rounds, the report -----------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds (after one warm-up)")
    ap.add_argument("--steps", type=int, default=600, help="engine steps per round")
    ap.add_argument("--call-steps", type=int, default=2000, help="steps of the per-call timing")
    ap.add_argument("--prefill-every", type=int, default=64, help="a new batch (eager prefill) every this many steps")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--d-model", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--evrecord", help="evrecord.so (evrecord.c built): the driver's cuEventRecord timed in C")
    ap.add_argument("--harvest-every", type=float, default=0.001, help="the background harvester's interval, seconds")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    for name in ("rounds", "steps", "call_steps", "prefill_every", "layers", "d_model", "batch"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.child:
        return child(args)
    variants = [v for v in args.variants.split(",") if v]
    bad = [v for v in variants if v not in VARIANTS]
    if bad or "none" not in variants:
        ap.error(f"--variants: {bad or 'none is needed'}; want of {', '.join(VARIANTS)}")

    base = [sys.executable, os.path.abspath(__file__), "--child"]
    opts = ["--harvest-every", str(args.harvest_every), "--prefill-every", str(args.prefill_every), "--layers", str(args.layers), "--d-model", str(args.d_model),
            "--batch", str(args.batch)] + (["--evrecord", args.evrecord] if args.evrecord else [])
    procs = {}
    for v in variants:
        env = dict(os.environ)
        if v == "lanes/ctypes":
            env["GPUSPANS_HOT"] = "off"
        if v.endswith("/go"):
            env["GPUSPANS_SPAN_PATH"] = "go"
        procs[v] = subprocess.Popen(base + [v] + opts, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def ask(v, cmd):
        p = procs[v]
        p.stdin.write(cmd + "\n")
        p.stdin.flush()
        line = p.stdout.readline()
        if not line:
            raise SystemExit(f"{v}: the process ended (exit {p.wait()})")
        return json.loads(line)

    describe = ""
    for v, p in procs.items():
        line = p.stdout.readline()
        if not line:
            raise SystemExit(f"{v}: the process ended before it was ready (exit {p.wait()})")
        describe = json.loads(line)["ready"]
    rates = {v: [] for v in variants}
    steps = {v: [] for v in variants}
    shares = {v: [] for v in variants}
    for r in range(args.rounds + 1):  # round 0 warms up
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for v in order:
            res = ask(v, f"run {args.steps}")
            if r:
                rates[v].append(res["rate"])
                steps[v].append(res["step_p50_us"])
                if "lane_share" in res:
                    shares[v].append(res["lane_share"])
    alt = {v: ask(v, f"alternate {args.call_steps}") for v in variants}
    blk = {v: ask(v, f"blocks {args.call_steps}") for v in variants}
    calls = {v: ask(v, f"calls {args.call_steps}") for v in variants}
    landed = {v: ask(v, "landed") for v in variants}
    for p in procs.values():
        p.stdin.write("quit\n")
        p.stdin.close()
        p.wait()

    sys.stdout.write(report(args, describe, variants, rates, steps, calls, landed, shares, alt, blk))


def report(args, describe, variants, rates, steps, calls, landed, shares=None, alt=None, blk=None):
    """The markdown report of the rounds' rates and step times, the calls'
    costs and what landed, per variant."""
    out = []
    w = out.append
    w(f"# Lane spans every step in a CUDA-graph decode loop\n\n{describe}; {args.steps} steps per round, "
      f"{args.rounds} rounds interleaved across one process per variant, prefill every {args.prefill_every} steps, "
      f"tokens read back every step, the harvester every {getattr(args, 'harvest_every', 0.001) * 1e3:g} ms\n\n")
    w(f"command: `{' '.join([os.path.basename(sys.executable)] + sys.argv)}`\n\n")
    w("| variant | tokens/s (median) | vs none (median of per-round ratios) | middle half of ratios | step p50 us | vs none us | lanes' GPU time / wall |\n")
    w("| --- | ---: | ---: | --- | ---: | ---: | ---: |\n")
    none_step = statistics.median(steps["none"])
    for v in variants:
        ratios = sorted(a / b - 1 for a, b in zip(rates[v], rates["none"]))
        sp = statistics.median(steps[v])
        sh = (shares or {}).get(v)
        w(f"| {v} | {statistics.median(rates[v]):,.0f} | {statistics.median(ratios):+.2%} | "
          f"{q(ratios, 0.25):+.2%} .. {q(ratios, 0.75):+.2%} | {sp:.1f} | {sp - none_step:+.1f} | "
          f"{f'{statistics.median(sh):.1%}' if sh else '-'} |\n")
    paired = (
        (alt, "alternate steps with the variant's calls and without any ({n} pairs; none: the same steps both ways, "
              "the comparison's own spread)", "pair"),
        (blk, "alternate blocks of 25 steps: with the variant's calls and the hub's background harvester running, and "
              "without calls with the harvester stopped ({n} pairs of blocks; the difference of each pair's medians)", "block"),
    )
    for table, what, unit in paired:
        if not table:
            continue
        w(f"\nPer step inside each process, {what.format(n=table[variants[0]]['pairs'])}, host us:\n\n")
        w(f"| variant | step p50 with | step p50 without | median of {unit} differences | middle half | share of a step |\n")
        w("| --- | ---: | ---: | ---: | --- | ---: |\n")
        for v in variants:
            a = table[v]
            w(f"| {v} | {a['with']:.1f} | {a['without']:.1f} | {a['diff']:+.2f} | {a['diff_q'][0]:+.2f} .. {a['diff_q'][1]:+.2f} | "
              f"{a['diff'] / a['without']:+.3%} |\n")
    w("\nHost time per call at its place in the loop, us (p50 / p90), each call timed alone "
      "(the timer's own cost, row `timer`, included in each):\n\n")
    w("| variant | call | p50 | p90 |\n| --- | --- | ---: | ---: |\n")
    for v in variants:
        for name, (p50, p90) in calls[v].items():
            if name == "timer" and v != "none":
                continue
            w(f"| {v} | {name} | {p50 / 1e3:.2f} | {p90 / 1e3:.2f} |\n")
    w("\nWhat landed (the calls phase included):\n\n")
    for v in variants:
        s = landed[v]
        if not s:
            continue
        lanes = ", ".join(f"{n} {a['count']} (p50 {a['p50_us']:.1f} us)" for n, a in s["lanes"].items() if n in LANES)
        extra = ""
        if "gaps_ns" in s:
            g = s["gaps_ns"]
            extra = (f"; {s['spans_checked']} recent lane spans placed on the host clock, |start - end of the one before|: "
                     f"p50 {g[0]} ns, p99 {g[1]} ns, max {g[2]} ns" + (f" ({s['worst']})" if "worst" in s else ""))
        w(f"- {v}: {s['steps']} steps; {lanes}; begun {s['begun']}, landed {s['landed']}, dropped {s['dropped'] or 0}{extra}\n")
    return "".join(out)


if __name__ == "__main__":
    main()

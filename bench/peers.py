#!/usr/bin/env python3
"""peers.py: what the peers of gpuspans cost per span on this GPU.

Measures, around the same tiny kernel (torch's own x.add_(1) on a 1-element
CUDA tensor), on the host:
  - launches alone (the baseline);
  - torch.cuda.Event pairs: record, launch, record, then query + elapsed_time
    per pair once done (what a span costs done the torch way);
  - torch.profiler with ProfilerActivity.CUDA (Kineto over CUPTI activity
    tracing): host time per launch while tracing, and the loop's time to
    finish on the GPU with and without it.
Writes one JSON file (--out), rewritten after each part, so a crash or a
timeout still leaves what was measured. Every part is independent: one that
fails records why and the others still run. Without torch or a GPU the file
says so. Standard library only, besides torch.
"""

import argparse
import glob
import json
import os
import platform
import statistics
import sys
import time
import traceback

NS = time.perf_counter_ns


def write(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def summary(values):
    """min and median of per-repeat figures."""
    return {"min": min(values), "median": statistics.median(values), "reps": values}


def find_cupti():
    """libcupti files in the usual places (no search of the whole disk)."""
    patterns = [
        "/usr/local/cuda*/extras/CUPTI/lib64/libcupti.so*",
        "/usr/local/cuda*/targets/*/lib/libcupti.so*",
        "/usr/lib/x86_64-linux-gnu/libcupti.so*",
    ]
    for p in sys.path:
        if p and os.path.isdir(p):
            patterns += [
                os.path.join(p, "nvidia", "*", "lib", "libcupti.so*"),
                os.path.join(p, "nvidia", "*", "*", "lib", "libcupti.so*"),
                os.path.join(p, "torch", "lib", "libcupti*.so*"),
            ]
    found = []
    for pat in patterns:
        for f in glob.glob(pat):
            if f not in found:
                found.append(f)
    return sorted(found)


def loaded_cupti():
    """libcupti files mapped into this process (after the profiler ran)."""
    try:
        with open("/proc/self/maps") as f:
            return sorted({line.split()[-1] for line in f if "cupti" in line.lower() and "/" in line})
    except OSError:
        return []


def part(doc, path, name, fn):
    """Runs one part; its result or its failure goes under doc[name]."""
    t0 = time.time()
    try:
        doc[name] = {"ok": True, **fn()}
    except Exception as e:  # noqa: BLE001: a part must never stop the others
        doc[name] = {"ok": False, "error": "%s: %s" % (type(e).__name__, e),
                     "traceback": traceback.format_exc(limit=4)}
    doc[name]["elapsed_s"] = round(time.time() - t0, 3)
    write(path, doc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--n", type=int, default=4096, help="launches per timed loop")
    ap.add_argument("--profiler-n", type=int, default=2048, help="launches per profiled loop")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    doc = {"tool": "peers.py", "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
           "python": platform.python_version(), "n": args.n, "repeats": args.repeats,
           "kernel": "x.add_(1) on a 1-element float32 CUDA tensor (one tiny elementwise kernel)",
           "method": "host time per launch, best and median of repeats; the GPU is synchronized, untimed, "
                     "before every timed loop"}
    write(args.out, doc)
    try:
        doc["cupti_files"] = find_cupti()
    except Exception as e:  # noqa: BLE001
        doc["cupti_files"] = ["search failed: %s" % e]
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        doc["available"] = False
        doc["reason"] = "torch not importable: %s" % e
        write(args.out, doc)
        return 0
    doc["torch"] = torch.__version__
    doc["torch_cuda"] = getattr(torch.version, "cuda", None)
    if not torch.cuda.is_available():
        doc["available"] = False
        doc["reason"] = "torch.cuda.is_available() is False"
        write(args.out, doc)
        return 0
    try:
        doc["device"] = torch.cuda.get_device_name(0)
        x = torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        doc["available"] = False
        doc["reason"] = "CUDA through torch failed: %s: %s" % (type(e).__name__, e)
        write(args.out, doc)
        return 0
    doc["available"] = True
    n, reps = args.n, args.repeats

    def launches(count):
        torch.cuda.synchronize()
        t0 = NS()
        for _ in range(count):
            x.add_(1)
        t1 = NS()
        torch.cuda.synchronize()
        t2 = NS()
        return (t1 - t0) / count, (t2 - t0) / count

    def events():
        launches(256)  # warm up: the kernel, the caching allocator
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        base, spans, harvest, recs = [], [], [], []
        for b, e in pairs[:64]:  # warm up the pairs' first records
            b.record()
            x.add_(1)
            e.record()
        torch.cuda.synchronize()
        for _ in range(reps):
            base.append(launches(n)[0])
            torch.cuda.synchronize()
            t0 = NS()
            for b, e in pairs:
                b.record()
                x.add_(1)
                e.record()
            t1 = NS()
            torch.cuda.synchronize()
            t2 = NS()
            for b, e in pairs:
                if e.query():
                    b.elapsed_time(e)
            t3 = NS()
            spans.append((t1 - t0) / n)
            harvest.append((t3 - t2) / n)
            torch.cuda.synchronize()
            t0 = NS()
            for b, e in pairs:
                b.record()
                e.record()
            t1 = NS()
            recs.append((t1 - t0) / n)
        ms = pairs[-1][0].elapsed_time(pairs[-1][1])
        base_s, span_s, harv_s = summary(base), summary(spans), summary(harvest)
        return {
            "launch_ns": base_s,
            "launch_in_pair_ns": span_s,
            "record_pair_alone_ns": summary(recs),
            "query_elapsed_ns": harv_s,
            # What a span adds to a launch, harvest included.
            "overhead_ns_per_span": span_s["min"] - base_s["min"] + harv_s["min"],
            "overhead_ns_per_span_median": span_s["median"] - base_s["median"] + harv_s["median"],
            "last_pair_ms": ms,
        }

    part(doc, args.out, "events", events)

    def profiler():
        from torch.profiler import ProfilerActivity, profile
        pn = args.profiler_n
        with profile(activities=[ProfilerActivity.CUDA]):  # warm up: CUPTI starts once per process
            launches(64)
        base_host, base_wall, prof_host, prof_wall, exits = [], [], [], [], []
        kernels = None
        for r in range(reps):
            h, w = launches(pn)
            base_host.append(h)
            base_wall.append(w)
            p = profile(activities=[ProfilerActivity.CUDA])
            p.__enter__()
            try:
                h, w = launches(pn)
            finally:
                t0 = NS()
                p.__exit__(None, None, None)
                exits.append((NS() - t0) / 1e6)
            prof_host.append(h)
            prof_wall.append(w)
            if r == 0:  # evidence that the trace holds the kernels: two ways to count
                kernels = {}
                try:
                    kernels["function_events_on_cuda"] = sum(
                        1 for ev in p.events() if "cuda" in str(getattr(ev, "device_type", "")).lower())
                except Exception as e:  # noqa: BLE001
                    kernels["function_events_on_cuda"] = "could not count: %s" % e
                try:
                    kernels["kineto_events_on_cuda"] = sum(
                        1 for ev in p.profiler.kineto_results.events() if "cuda" in str(ev.device_type()).lower())
                except Exception as e:  # noqa: BLE001
                    kernels["kineto_events_on_cuda"] = "could not count: %s" % e
        bh, bw, ph, pw = summary(base_host), summary(base_wall), summary(prof_host), summary(prof_wall)
        return {
            "n": pn,
            "activities": "ProfilerActivity.CUDA (Kineto over CUPTI activity tracing)",
            "launch_ns": bh,
            "launch_profiled_ns": ph,
            "loop_wall_ns_per_kernel": bw,  # launch to GPU done, per kernel
            "loop_wall_profiled_ns_per_kernel": pw,
            "overhead_ns_per_kernel": ph["min"] - bh["min"],
            "overhead_ns_per_kernel_median": ph["median"] - bh["median"],
            "wall_ratio": pw["min"] / bw["min"] if bw["min"] else 0,
            "profile_exit_ms": exits,  # trace processing when the profile ends, not in the loop
            "kernels_recorded_first_rep": kernels,
            "cupti_loaded": loaded_cupti(),
        }

    part(doc, args.out, "profiler", profiler)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Why a kernel window slows a copy into new pageable memory: page faults.

served.py's graph_copy (a 4 MiB device-to-host copy into a new pageable
tensor each step) ran 1.0-3.4 ms longer in a window's step, and not with
glibc's malloc thresholds fixed (bench/results/h100-served, run 10). This
probe counts, per step, the process's minor page faults (getrusage) and
glibc's heap (mallinfo2: the main arena's size, the mmapped bytes), with
a hub at auto and one window every --every s, in one process per copy:

  new     src.cpu(): a new pageable tensor each step
  into    into one pageable tensor kept

A step is a window's when hub.step() armed it.
One line per process: faults, heap and the copy's host time, at p50, in
window steps, the step after them and the rest.

    PYTHONPATH=python GPUSPANS_LIB=... GPUSPANS_HOT=... python3 bench/gputime/heap_probe.py
"""

import argparse
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import time


class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def heap():
    """The main arena's bytes and the mmapped bytes, or None."""
    try:
        f = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return None
    f.restype = MallInfo2
    m = f()
    return m.arena, m.hblkhd


def child(args):
    import torch
    import gpuspans

    dev = torch.device("cuda")
    src = torch.randn(args.mb << 18, device=dev)
    x = torch.zeros(1 << 20, device=dev)
    into = torch.empty(src.shape, dtype=src.dtype)
    copy = (lambda: src.cpu()) if args.copy == "new" else (lambda: into.copy_(src))
    hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", kernel_window_every=args.every,
                       quiet=True)
    hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
    lane = hub.lane("decode")
    rows = []
    try:
        end = time.perf_counter() + args.seconds
        while time.perf_counter() < end:
            hub.step()
            opened = hub.armed
            f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            lane.begin()
            for _ in range(20):
                x.mul_(1.0001)
            t1 = time.perf_counter()
            copy()
            host = (time.perf_counter() - t1) * 1e6
            lane.end()
            torch.cuda.synchronize()
            f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            rows.append((opened, f1 - f0, host, heap()))
    finally:
        hub.close()
    kinds = {"window": [], "after": [], "rest": []}
    for i, r in enumerate(rows[50:], 50):
        k = "window" if r[0] else "after" if rows[i - 1][0] else "rest"
        kinds[k].append(r)
    out = {"copy": args.copy, "tunables": os.environ.get("GLIBC_TUNABLES", ""), "steps": len(rows)}
    for k, v in kinds.items():
        if not v:
            continue
        out[k] = {"n": len(v), "faults_p50": statistics.median(r[1] for r in v),
                  "faults_max": max(r[1] for r in v), "copy_us_p50": round(statistics.median(r[2] for r in v), 1)}
        if v[0][3]:
            out[k]["arena_mib_p50"] = round(statistics.median(r[3][0] for r in v) / 2**20, 1)
            out[k]["mmapped_mib_p50"] = round(statistics.median(r[3][1] for r in v) / 2**20, 1)
    print(json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copy", choices=("new", "into"), help="run one process (the parent runs them all)")
    ap.add_argument("--mb", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--every", type=float, default=0.25)
    ap.add_argument("--tunables", default="glibc.malloc.mmap_threshold=67108864:glibc.malloc.trim_threshold=1073741824")
    args = ap.parse_args()
    if args.copy:
        return child(args)
    for copy, tun in (("new", ""), ("into", ""), ("new", args.tunables)):
        env = dict(os.environ)
        if tun:
            env["GLIBC_TUNABLES"] = tun
        cmd = [sys.executable, __file__, "--copy", copy, "--mb", str(args.mb), "--seconds", str(args.seconds),
               "--every", str(args.every)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        sys.stdout.write(r.stdout)
        if r.returncode:
            print(json.dumps({"copy": copy, "tunables": tun, "rc": r.returncode, "stderr": r.stderr[-2000:]}), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Kernel windows beside another thread's launches, on a GPU: the probe of
the reliability issue's mapping (docs/design.md, kernel windows).

Each case runs in a process of its own: the stepping thread replays a CUDA
graph (a chain of matmuls) every step with a hub at kernel timing "auto",
one window every --every seconds; a second thread, in a tight loop on its
own stream, does the case's work:

- graphs:           replays its own small graph through torch's
                    CUDAGraph.replay, which gpuspans routes through the
                    launch guard (auto does it at the hub's creation);
- graphs-unguarded: replays it past the guard (torch._C._CUDAGraph.replay),
                    as a C++ extension would: the window that sees it must be
                    left attached, and windows stay off;
- eager:            launches small kernels;
- copies:           copies device to host and synchronises;
- none:             nothing.

It prints one JSON line per case: windows opened, left attached, abandoned,
the kernels of the last window, and any CUDA error on either thread (a lost
context shows as one). Run where the library was built (tools/gpu/stage.sh
carries it):

    PYTHONPATH=python GPUSPANS_LIB=out/python/libgpuspans.so \\
        python3 bench/cupti/concurrent_launches.py [--seconds 60] [--every 0.05]
"""

import argparse
import json
import subprocess
import sys
import threading
import time

CASES = ("none", "eager", "copies", "graphs", "graphs-unguarded")


def chain(torch, x, w, n):
    for _ in range(n):
        x = torch.tanh(x @ w)
    return x


def capture(torch, fn, stream):
    """A CUDA graph of fn, captured on stream after torch's warm-up."""
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream):
        fn()
    return g


def run_case(case, seconds, every):
    import torch

    import gpuspans

    torch.cuda.init()
    main_w = torch.randn(1024, 1024, device="cuda") / 32
    main_x = torch.randn(64, 1024, device="cuda")
    main = capture(torch, lambda: chain(torch, main_x, main_w, 48), torch.cuda.Stream())
    side_stream = torch.cuda.Stream()
    side_w = torch.randn(256, 256, device="cuda") / 16
    side_x = torch.randn(16, 256, device="cuda")
    side = capture(torch, lambda: chain(torch, side_x, side_w, 8), side_stream)
    host = torch.empty(16, 256, pin_memory=True)
    hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", kernel_window_every=every, quiet=True)
    hub.install(0, torch.cuda.current_stream())
    stop = threading.Event()
    errors = []

    def other():
        try:
            with torch.cuda.stream(side_stream):
                while not stop.is_set():
                    if case == "graphs":
                        side.replay()
                    elif case == "graphs-unguarded":
                        torch._C._CUDAGraph.replay(side)
                    elif case == "eager":
                        chain(torch, side_x, side_w, 8)
                    elif case == "copies":
                        host.copy_(side_x, non_blocking=True)
                    else:
                        time.sleep(0.001)
                    side_stream.synchronize()
        except Exception as e:  # noqa: BLE001: a CUDA error is the result
            errors.append(f"other thread: {e}")

    t = threading.Thread(target=other, daemon=True)
    t.start()
    steps = 0
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            hub.step()
            with hub.lane("decode"):
                main.replay()
            torch.cuda.current_stream().synchronize()
            steps += 1
    except Exception as e:  # noqa: BLE001
        errors.append(f"stepping thread: {e}")
    stop.set()
    t.join(10)
    try:
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        errors.append(f"synchronize: {e}")
    snap = hub.snapshot()
    w = snap["kernel_timing"]["windows"]
    out = {
        "case": case,
        "steps": steps,
        "windows": w["opened"],
        "left_attached": w["left_attached"],
        "abandoned": w["abandoned"],
        "last_window_kernels": w["last"]["kernels"],
        "open_ns_p50_p99_max": w["open_ns"],
        "close_ns_p50_p99_max": w["close_ns"],
        "reason": snap["kernel_timing"].get("reason", ""),
        "errors": errors,
    }
    hub.close()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--every", type=float, default=0.05, help="window period, seconds")
    p.add_argument("--case", choices=CASES, help="run one case here (the parent runs each in a child)")
    a = p.parse_args()
    if a.case:
        print(json.dumps(run_case(a.case, a.seconds, a.every)), flush=True)
        return 0
    failed = 0
    for case in CASES:
        r = subprocess.run([sys.executable, __file__, "--case", case, "--seconds", str(a.seconds),
                            "--every", str(a.every)], capture_output=True, text=True, timeout=a.seconds + 120)
        line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else json.dumps(
            {"case": case, "exit": r.returncode, "stderr": r.stderr[-2000:]})
        print(line, flush=True)
        try:
            res = json.loads(line)
        except ValueError:
            res = {"errors": ["no result"]}
        failed += bool(res.get("errors")) or r.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

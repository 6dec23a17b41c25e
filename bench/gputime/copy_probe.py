#!/usr/bin/env python3
"""What of a kernel window slows a device-to-host copy.

served.py's graph_copy decode (a 4 MiB pageable copy between two graph
replays) ran its window step 2.8-3.3 ms longer than its steps between
windows (run 10), where the same decode without the copy ran 0.34 ms
longer. This probe drives CUPTI itself through ctypes (no gpuspans, no
torch.profiler) in one process and times the same copy, a step at a time
(a small kernel, the copy, a sync), under each part of what a window
turns on:

  none            nothing enabled (before and after the rest: drift)
  kernel          CONCURRENT_KERNEL records
  memcpy          MEMCPY and MEMSET records
  kernel+memcpy   both: a window's records, without its launch watch
  cycle           both, enabled for one step and finalized after it, as a
                  window attaches at its open and detaches at its close
  gap             cycle, with --gap s of steps without CUPTI between (a
                  window every --gap s, as served.py's)
  gap_warm        gap, with a 4-byte pageable copy after the enable, before
                  the step: does the first copy after an attach pay for all?

Copies: pageable (src.cpu(), a new pageable tensor each step, as
served.py), pageable_into (into one pageable tensor kept), pinned (into
pinned memory), and graph_pageable (pageable after a CUDA graph of 64
kernels replayed first in the step, as served.py's graph_copy). Per copy
and mode one line: the copy's host time (the call to its return) first
and at p50, its CUDA-event time at p50, and CUPTI's copy records' own
time at p50 where it collects them.

On an H100 none of these slowed the copy by more than 100 us (run 10):
what did was the C heap, shown by served.py's copy workloads and glibc's
malloc thresholds (bench/results/h100-served/README.md, run 10).

    /opt/torch/.venv/bin/python3 bench/gputime/copy_probe.py
"""

import argparse
import ctypes
import json
import os
import statistics
import time

KERNEL, MEMCPY, MEMSET = 10, 1, 2
BUF = 8 << 20


class Cupti:
    """The activity API through ctypes: buffers from Python, records read
    as CUpti_CopyRecordPrefix (kind, bytes, start, end)."""

    def __init__(self, path):
        try:
            self.lib = ctypes.CDLL(path)
        except OSError:  # the toolkit's, where the loader's path lacks it
            self.lib = ctypes.CDLL("/usr/local/cuda/targets/x86_64-linux/lib/" + os.path.basename(path))
        self.keep, self.free = {}, [ctypes.create_string_buffer(BUF) for _ in range(4)]
        self.copies = []  # (bytes, ns) of the MEMCPY records read
        self.records = 0
        req_t = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                                 ctypes.POINTER(ctypes.c_size_t))
        done_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                                  ctypes.c_size_t)
        self.req, self.done = req_t(self._request), done_t(self._complete)
        self.lib.cuptiActivityGetNextRecord.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                                        ctypes.POINTER(ctypes.c_void_p)]

    def _request(self, buf, size, maxrec):
        # Reused: a new 8 MiB buffer would cost the copy it lands in.
        b = self.free.pop() if self.free else ctypes.create_string_buffer(BUF)
        addr = ctypes.addressof(b)
        self.keep[addr] = b
        buf[0], size[0], maxrec[0] = addr, BUF, 0

    def _complete(self, ctx, stream, buf, size, valid):
        rec = ctypes.c_void_p(None)
        while self.lib.cuptiActivityGetNextRecord(buf, valid, ctypes.byref(rec)) == 0:
            self.records += 1
            kind = ctypes.c_uint32.from_address(rec.value).value
            if kind == MEMCPY:
                nbytes, start, end = (ctypes.c_uint64.from_address(rec.value + o).value for o in (8, 16, 24))
                self.copies.append((nbytes, end - start))
        b = self.keep.pop(buf, None)
        if b is not None:
            self.free.append(b)

    def check(self, r, what):
        if r != 0:
            raise RuntimeError(f"{what}: CUPTI error {r}")

    def register(self):
        self.check(self.lib.cuptiActivityRegisterCallbacks(self.req, self.done), "cuptiActivityRegisterCallbacks")

    def enable(self, kinds, on=True):
        for k in kinds:
            self.check((self.lib.cuptiActivityEnable if on else self.lib.cuptiActivityDisable)(k),
                       f"cuptiActivity{'Enable' if on else 'Disable'}({k})")

    def flush(self):
        self.check(self.lib.cuptiActivityFlushAll(1), "cuptiActivityFlushAll")

    def finalize(self):
        self.check(self.lib.cuptiFinalize(), "cuptiFinalize")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cupti", default=os.environ.get("GPUSPANS_CUPTI", "libcupti.so.13"))
    ap.add_argument("--mb", type=int, default=4)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--gap", type=float, default=0.25)
    args = ap.parse_args()
    import torch

    dev = torch.device("cuda")
    src = torch.randn(args.mb << 18, device=dev)  # fp32: mb MiB
    x = torch.zeros(1 << 20, device=dev)
    into = torch.empty(src.shape, dtype=src.dtype)
    pinned = torch.empty(src.shape, dtype=src.dtype, pin_memory=True)
    tiny = torch.zeros(1, device=dev)
    y = torch.randn(1 << 20, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3 * 64):
            y.mul_(1.0001)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(64):
            y.mul_(1.0001)
    copies = {
        "pageable": lambda: src.cpu(),
        "pageable_into": lambda: into.copy_(src),
        "pinned": lambda: pinned.copy_(src),
        "graph_pageable": lambda: src.cpu(),
    }
    before = {"graph_pageable": graph.replay}
    cu = Cupti(args.cupti)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]

    def step(copy, pre=None):
        x.add_(1.0)
        if pre:
            pre()
        ev[0].record()
        t0 = time.perf_counter()
        copy()
        host = time.perf_counter() - t0
        ev[1].record()
        torch.cuda.synchronize()
        return host * 1e6, ev[0].elapsed_time(ev[1]) * 1e3

    for name, copy in copies.items():
        for _ in range(20):
            step(copy, before.get(name))
        torch.cuda.synchronize()
        for mode in ("none", "kernel", "memcpy", "kernel+memcpy", "cycle", "gap", "gap_warm", "none_after"):
            both = [KERNEL, MEMCPY, MEMSET]
            kinds = {"kernel": [KERNEL], "memcpy": [MEMCPY, MEMSET], "kernel+memcpy": both, "cycle": both,
                     "gap": both, "gap_warm": both}.get(mode, [])
            cu.copies.clear()
            got = []
            try:
                if mode in ("cycle", "gap", "gap_warm"):
                    for _ in range(args.cycles):
                        cu.register()
                        cu.enable(kinds)
                        if mode == "gap_warm":
                            tiny.cpu()
                        got.append(step(copy, before.get(name)))
                        cu.enable(kinds, on=False)
                        cu.flush()
                        cu.finalize()
                        end = time.perf_counter() + (args.gap if mode != "cycle" else 0)
                        while time.perf_counter() < end:
                            step(copy, before.get(name))
                elif kinds:
                    cu.register()
                    cu.enable(kinds)
                    got = [step(copy, before.get(name)) for _ in range(args.steps)]
                    cu.enable(kinds, on=False)
                    cu.flush()
                    cu.finalize()
                else:
                    got = [step(copy, before.get(name)) for _ in range(args.steps)]
            except Exception as e:  # a refusal is a result: say it and go on
                print(json.dumps({"copy": name, "mode": mode, "error": repr(e)}), flush=True)
                continue
            host = [h for h, _ in got]
            line = {"copy": name, "mode": mode, "steps": len(got), "host_us_first": round(host[0], 1),
                    "host_us_p50": round(statistics.median(host), 1),
                    "host_us_p50_after_first": round(statistics.median(host[1:]), 1) if len(host) > 1 else None,
                    "event_us_p50": round(statistics.median(e for _, e in got), 1)}
            big = [ns / 1e3 for b, ns in cu.copies if b >= (args.mb << 20)]
            if big:
                line.update(cupti_copy_us_p50=round(statistics.median(big), 1), cupti_copy_us_first=round(big[0], 1),
                            cupti_copies=len(big))
            print(json.dumps(line), flush=True)
    print(json.dumps({"records": cu.records}), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Issue 51's GPU target: a torch CUDA-graph decode restarted across builds,
its GPU profile kept in one file (Hub.start_profile).

The decoder is bench/gputime/served.py's (--layers layers of layer norm,
matmul, gelu, matmul, add, captured as two CUDA graphs replayed in one
"decode" lane). Three runs, each its own process, one after the other, on
one profile file, each a hub at kernel timing auto with one window every
--every s (the default period: 10 s):

  1. build "v1": writes the profile at its stop;
  2. build "v1-again", the same code under another build identity: compared
     with v1's profile, it must name nothing;
  3. build "v2", layer --deep's matmuls twice as wide and deep (hidden 2d):
     compared with v1-again's, it must name the layer's matmul launches (or
     a kernel cuBLAS chose for the new shape), within 60 s of its start.

Each run polls hub.snapshot()["profile"] every second and stops --linger s
after the comparison came (or at --seconds). The parent prints one JSON
line a run (build, windows, seconds to the comparison, what it named, the
profile's status) and a verdict line.

On the GPU machine (the library and _hot built here, see
bench/results/h100-served/README.md), about 4 minutes:

    L=out/python/libgpuspans.so
    PYTHONPATH=python GPUSPANS_LIB=$L GPUSPANS_HOT=out/python/_hot.abi3.so \\
        python3 bench/gputime/profile_restart.py > restart.jsonl
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from served import Decoder, Steps, emit  # noqa: E402


def named(prof):
    """What the comparison named: lane verdict lines and kernel changes."""
    out = []
    for ln in (prof or {}).get("since") or []:
        for k in ln.get("kernels") or []:
            where = f" (launch {k['launch']})" if k.get("launch") else ""
            out.append(f"{k['name']}{where} {k['change']} {k.get('before_ns', 0) / 1e3:.1f} -> {k.get('after_ns', 0) / 1e3:.1f} us")
        for what in ("time", "busy"):
            if ln.get(f"{what}_moved"):
                out.append(f"lane {ln['lane']} {what} moved {ln[f'{what}_moved']:+d}: "
                           f"{ln[f'{what}_before_ns'] / 1e3:.1f} -> {ln[f'{what}_after_ns'] / 1e3:.1f} us")
    return out


def child(args):
    import torch
    import gpuspans

    m = Decoder(torch, args.d, args.batch, 1, args.layers, deep=args.deep)
    st = Steps(m, {})
    for _ in range(20):
        st.run()
    hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", kernel_window_every=args.every, quiet=True)
    hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
    hub.start_profile(args.profile, args.build, args.write_every)
    lane = hub.lane("decode")
    t0 = time.perf_counter()
    poll, compared, steps, prof = t0 + 1, None, 0, {}
    try:
        while time.perf_counter() - t0 < args.seconds:
            hub.step()
            st.run(lane.begin, lane.end)
            steps += 1
            now = time.perf_counter()
            if now >= poll:
                poll = now + 1
                prof = hub.snapshot().get("profile") or {}
                if compared is None and prof.get("since"):
                    compared = now - t0
                if compared is not None and now - t0 > compared + args.linger:
                    break
        hub.stop_profile()
        snap = hub.snapshot()
        prof = snap.get("profile") or {}
        windows = ((snap.get("kernel_timing") or {}).get("windows") or {})
    finally:
        hub.close()
    emit({"build": args.build, "deep": args.deep, "steps": steps, "seconds": round(time.perf_counter() - t0, 1),
          "compared_after_s": None if compared is None else round(compared, 1), "named": named(prof),
          "before": prof.get("before"), "ignored": prof.get("ignored"), "written": bool(prof.get("written_unix_ns")),
          "write_error": prof.get("write_error"), "profile_windows": prof.get("windows"),
          "not_compared": prof.get("not_compared"), "since": prof.get("since"),
          "kernel_timing": (snap.get("kernel_timing") or {}).get("reason") or "ok",
          "windows_opened": windows.get("opened"), "device": torch.cuda.get_device_name()})


def run(args, build, deep, path):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--build", build, "--deep", str(deep),
           "--profile", path] + [a for a in sys.argv[1:]]
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    sys.stderr.write(f"profile_restart.py: {build} rc={p.returncode} in {time.time() - t0:.0f}s\n")
    if p.returncode != 0 or not out:
        sys.stderr.write(p.stderr[-3000:])
        return {"build": build, "rc": p.returncode, "stderr_tail": p.stderr[-1500:]}
    return out[-1]


def parent(args):
    path = args.profile or os.path.join(tempfile.mkdtemp(), "decode.profile")
    if os.path.exists(path):
        sys.exit(f"{path} exists: give a new path (the runs must start without a profile)")
    first = run(args, "v1", -1, path)
    emit(first)
    again = run(args, "v1-again", -1, path)
    emit(again)
    deep = run(args, "v2", args.deep_layer, path)
    emit(deep)
    with open(path) as f:
        emit({"profile_bytes": len(f.read())})
    ok_same = again.get("compared_after_s") is not None and not again.get("named")
    ok_deep = bool(deep.get("named")) and (deep.get("compared_after_s") or 1e9) <= 60
    emit({"verdict": {"same_build_names_nothing": ok_same, "deep_named_within_60s": ok_deep,
                      "compared_after_s": [r.get("compared_after_s") for r in (again, deep)]}})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--build", default="v1", help=argparse.SUPPRESS)
    ap.add_argument("--deep", type=int, default=-1, help=argparse.SUPPRESS)
    ap.add_argument("--profile", default="", help="the profile file (default: a new one in a temporary directory)")
    ap.add_argument("--deep-layer", type=int, default=17, help="v2's layer made twice as deep")
    ap.add_argument("--layers", type=int, default=46)
    ap.add_argument("--d", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--every", type=float, default=10, help="window period, s (the hub's default: 10)")
    ap.add_argument("--write-every", type=float, default=0, help="profile write period, s (0: a minute)")
    ap.add_argument("--seconds", type=float, default=75, help="a run's most seconds")
    ap.add_argument("--linger", type=float, default=5, help="seconds a run goes on after its comparison came")
    args = ap.parse_args()
    if args.child:
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    sys.exit(main())

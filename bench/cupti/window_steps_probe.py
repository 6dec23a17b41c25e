import json, sys, time, statistics
sys.path.insert(0, "bench/cupti")
import gpu_time as G
import gpuspans, torch

m = G.Model(torch, 4096, 8)
m.capture("a", 0, G.LAYERS // 2)
m.capture("b", G.LAYERS // 2, G.LAYERS)
for _ in range(20):
    G.step(m, 0)
for host in (0.0, 0.001):
    for nsteps in (1, 4):
        hub = gpuspans.Hub(lanes=["decode"], level="kernel", kernel_timing="auto", kernel_window_every=0.05,
                           kernel_window_steps=nsteps, quiet=True)
        hub.install(torch.cuda.current_device(), torch.cuda.current_stream())
        lane = hub.lane("decode")
        per_pos = {}
        end = time.perf_counter() + 6
        last_win = None
        while time.perf_counter() < end:
            G.step(m, host, "b", lane, hub)
            g = hub.gpu_time()
            if g and g["windows"] != last_win and g["steps"]:
                last_win = g["windows"]
                st = sorted(g["steps"], key=lambda s: s["step"])
                tl = {t["step"]: t for t in g["timelines"]}
                for i, s in enumerate(st):
                    per_pos.setdefault(i, []).append((s["extent_ns"] / 1e3, s["busy_ns"] / 1e3))
        hub.level = "step"; hub.step(); hub.drain(2.0)
        g = hub.gpu_time()
        ln = [l for l in g["lanes"] if l["lane"] == "decode"][0]
        n = ln["spans"]
        out = {"host_us": host * 1e6, "window_steps": nsteps, "windows": g["windows"], "spans": n,
               "time_us": ln["time_ns"] / n / 1e3, "busy_us": ln["busy_ns"] / n / 1e3, "gaps_us": ln["gaps_ns"] / n / 1e3,
               "by_step_in_window": {i: {"n": len(v), "extent_us": statistics.median(x for x, _ in v), "busy_us": statistics.median(y for _, y in v)} for i, v in per_pos.items()}}
        print(json.dumps(out), flush=True)
        hub.close()

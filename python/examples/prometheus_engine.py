#!/usr/bin/env python3
"""An engine that serves its own /metrics with prometheus_client, and
gpuspans' families on it: one port, one scrape target.

A step loop on the simulated GPU (no GPU or torch needed): a prefill lane
every 10 steps and a decode lane every step, each running known GPU time, plus the engine's own request counter. tools/e2e/
python-prometheus.sh points a real Prometheus at it.

    PYTHONPATH=python GPUSPANS_LIB=out/python/libgpuspans.so \\
        python3 python/examples/prometheus_engine.py --port 8000

Prints "metrics: http://127.0.0.1:PORT/metrics" once serving, and runs
until SIGTERM or Ctrl-C.
"""

import argparse
import signal
import sys
import threading
import time

import prometheus_client

import gpuspans
import gpuspans.prometheus


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=8000, help="the engine's /metrics port (0 picks one, with prometheus_client 0.17 or later)")
    p.add_argument("--rate", type=float, default=100, help="steps a second")
    p.add_argument("--prefill_us", type=float, default=800, help="GPU time of a prefill lane")
    p.add_argument("--decode_us", type=float, default=200, help="GPU time of a decode lane")
    p.add_argument("--kernel_span_every", type=int, default=4)
    p.add_argument("--kernel_histograms", action="store_true", help="a histogram and recent quantiles per kernel too (32 series each)")
    p.add_argument("--classic_buckets", type=int, default=1, help="classic buckets per doubling of duration: 1, 2, 4 or 8")
    args = p.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    requests = prometheus_client.Counter("engine_requests", "Requests the engine served.")
    with gpuspans.Hub(lanes=["prefill", "decode"], level="kernel", kernel_span_every=args.kernel_span_every) as hub:
        gpu = hub.install(0, 0, sim=True)
        hub.start_harvester(0.001)
        hub.set_metrics(kernel_histograms=args.kernel_histograms, classic_buckets=args.classic_buckets)
        gpuspans.prometheus.register(hub)  # onto prometheus_client's REGISTRY, beside the engine's own
        server = prometheus_client.start_http_server(args.port, addr="127.0.0.1")
        # prometheus_client returns its server (and so a port 0 picked)
        # from 0.17 on; 0.16, Debian 12's, returns None.
        port = server[0].server_port if isinstance(server, tuple) else args.port
        print(f"metrics: http://127.0.0.1:{port}/metrics", flush=True)
        prefill, decode = hub.lane("prefill"), hub.lane("decode")
        period = 1.0 / args.rate
        next_step = time.monotonic()
        step = 0
        try:
            while not stop.is_set():
                hub.step()
                if step % 10 == 0:
                    with prefill:
                        gpu.launch(args.prefill_us * 1e-6)
                    requests.inc()
                with decode:
                    with hub.kernel("attention"):
                        gpu.launch(args.decode_us * 1e-6 / 2)
                    gpu.launch(args.decode_us * 1e-6 / 2)
                step += 1
                next_step += period
                stop.wait(max(0.0, next_step - time.monotonic()))
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

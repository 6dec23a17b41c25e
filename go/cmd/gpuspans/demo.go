package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpuspans/gpuspans/go/demo"
)

const demoDescription = `Runs a small serving engine loop with gpuspans at level kernel, as a serving
binary would: every step runs a "prefill" and a "decode" lane of a few kernels
each, with a lane span around each lane and, on one step in
kernel_span_every, a kernel span around each launch. With a CUDA driver the
kernels are real spin kernels of the given durations on a stream, plus a CUDA
graph captured at start (with kernel spans around its launches, which gpuspans
must refuse to record into the capture) and replayed every step; without one,
the simulated GPU runs them (the first output line says which).

While it runs it prints a status line and serves, on --listen:
  /debug/gpuspans                  live page: latency histograms, drops, devices
  /debug/gpuspans/snapshot.json    the same as JSON
  /metrics                         Prometheus metrics (gpuspans_* and Go runtime)
  /control/level                   GET; PUT or POST "off", "step" or "kernel"
  /control/kernel_span_every       GET; PUT or POST an integer N (arm 1 step in N)
Control bodies are plain text, or JSON ({"level":"step"}) with
Content-Type: application/json. Off loopback the control endpoints need a token
(--token, or better GPUSPANS_TOKEN, since flags show in ps), sent as
"Authorization: Bearer TOKEN"; without one the demo refuses to start.

On exit (Ctrl-C, SIGTERM, --steps or --duration) it writes the timeline trace
(--trace; open it in https://ui.perfetto.dev), closes the span file (--spans;
read it back with "gpuspans trace"), and prints the latency summary per lane
and kernel. A second Ctrl-C quits at once.

Kernel lists are name=duration pairs: --prefill=embed=60us,attn=450us.
`

func demoCmd(args []string, stdout, stderr io.Writer) int {
	cfg := demo.DefaultConfig()
	fs := newFlagSet("demo", "gpuspans demo [flags]", demoDescription)
	fs.StringVar(&cfg.Backend, "backend", cfg.Backend, "GPU backend: auto (CUDA if a driver and the device are there, else the simulator), sim or cuda")
	fs.IntVar(&cfg.Device, "device", cfg.Device, "GPU ordinal")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "HTTP address for the live page, /metrics and control; empty to serve nothing. Off loopback a token is required")
	token := fs.String("token", "", "bearer token for the control endpoints (default $GPUSPANS_TOKEN)")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "engine steps per second; 0 runs steps back to back")
	fs.IntVar(&cfg.Steps, "steps", cfg.Steps, "stop after this many steps; 0 runs until Ctrl-C")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "stop after this long (e.g. 30s); 0 runs until Ctrl-C")
	fs.TextVar(&cfg.Level, "level", cfg.Level, "telemetry `level` at start: off, step or kernel")
	fs.IntVar(&cfg.KernelSpanEvery, "kernel_span_every", cfg.KernelSpanEvery, "arm kernel spans on one step in this many")
	fs.Var(&cfg.Engine.Prefill, "prefill", "kernels of the prefill lane, a `list` of name=duration")
	fs.Var(&cfg.Engine.Decode, "decode", "kernels of the decode lane, a `list` of name=duration")
	fs.Var(&cfg.Engine.Graph, "graph", "kernels (a `list` of name=duration) captured once into a graph and replayed at the end of the decode lane every step; empty for no graph")
	fs.Float64Var(&cfg.Engine.Jitter, "jitter", cfg.Engine.Jitter, "vary each launch's duration by up to this fraction either way (0..0.9)")
	fs.Int64Var(&cfg.Engine.Seed, "seed", cfg.Engine.Seed, "seed of the jitter")
	fs.IntVar(&cfg.Slots, "slots", cfg.Slots, "span ring slots (event pairs) per device")
	fs.StringVar(&cfg.TracePath, "trace", cfg.TracePath, "timeline trace written on exit (Chrome trace JSON); empty for none")
	fs.IntVar(&cfg.TraceSpans, "trace_spans", cfg.TraceSpans, "the trace keeps the last this many spans")
	fs.StringVar(&cfg.SpansPath, "spans", cfg.SpansPath, "span file, written as spans land (protobuf, see proto/gpuspans/v1); empty for none")
	fs.DurationVar(&cfg.StatusEvery, "status_every", cfg.StatusEvery, "status line period; 0: 0.5s on a terminal (rewritten in place), 5s otherwise; negative: none")
	pos, code, ok := parseFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "demo: unexpected argument %q (see gpuspans demo --help)\n", pos[0])
		return 2
	}
	cfg.Token = os.Getenv("GPUSPANS_TOKEN")
	if *token != "" {
		cfg.Token = *token
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// Once the first signal has stopped the loop, a second one gets the
		// default behaviour: it ends the process at once.
		<-ctx.Done()
		stop()
	}()
	if _, err := demo.Run(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "gpuspans demo: %v\n", err)
		return 1
	}
	return 0
}

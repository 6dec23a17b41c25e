package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuspans/gpuspans/go/cmd/gpuspans/internal/demo"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
	"github.com/gpuspans/gpuspans/go/internal/smallfile"
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
  /metrics                         Prometheus metrics (gpuspans_* and Go runtime); lane
                                   histograms only unless --kernel_histograms
  /control/level                   GET; PUT or POST "off", "step" or "kernel"
  /control/kernel_span_every       GET; PUT or POST an integer N (arm 1 step in N)
  /control/kernel_timing           GET; PUT or POST "events", "auto" or "cupti"
                                   ("events" releases CUPTI for a profiler)
  /control/sim                     the demo's own: GET; POST "decode=1.2" makes that
                                   lane's kernels 1.2 times as long (0.1..10)
Control bodies are plain text, or JSON ({"level":"step"}) with
Content-Type: application/json. Without a token, a POST with a form's
Content-Type (curl --data sends one) is refused as what another site's page
could send: use PUT, or POST with -H 'Content-Type: application/octet-stream'
(/control/sim). Off loopback the control endpoints need a token,
sent as "Authorization: Bearer TOKEN"; without one the demo refuses to start.
The token comes from --token_file (its content, white space around it
ignored) or --token (which any user sees in ps), else $GPUSPANS_TOKEN; it
must be printable with no white space. --protect_reads requires it on
/metrics and the live page too (scrapers then send it as a bearer token).

On exit (Ctrl-C, SIGTERM, --steps or --duration) it writes the timeline trace
(--trace; open it in https://ui.perfetto.dev), closes the span file (--spans;
read it back with "gpuspans trace"), and prints the latency summary per lane
and kernel. A second Ctrl-C quits at once. Both files are written to a
temporary file next to their path (.NAME.*.tmp) and renamed onto it at exit,
so an existing file is only replaced by a complete one; a path holding
anything but a regular file (a device, a FIFO, a symbolic link) is refused,
and so are --trace and --spans naming the same file.

With --otlp, or with OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) set, it
also sends the spans of one step in --otlp_sample_every to an OpenTelemetry
collector over OTLP, gRPC or HTTP: one trace per step ("gpu step", its lane
spans, their kernel spans), each lane span linked to the spans of the
--requests simulated requests the step served, which it sends too. Flags beat
the standard variables, which set what has no flag: OTEL_EXPORTER_OTLP_PROTOCOL,
_HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE, _INSECURE (each also as
_TRACES_*), OTEL_SERVICE_NAME (default gpuspans-demo) and
OTEL_RESOURCE_ATTRIBUTES; the resource also carries host.name, process.pid and
a service.instance.id. --otlp=off sends nothing whatever they say. Drops are
counted on /metrics (gpuspans_otlp_*); a collector that is down costs nothing
else, and one that speaks the other protocol is named in the log with the fix.
The lane histograms on /metrics then carry exemplars (served as OpenMetrics to
a Prometheus that asks): the trace id of the latest lane span the collector
accepted.

Kernel lists are name=duration pairs: --prefill=embed=60us,attn=450us.
`

// demoToken picks the token: --token_file or --token (both at once is an
// error), else $GPUSPANS_TOKEN, and checks it (control.CheckToken).
func demoToken(flagTok, file, env string) (string, error) {
	if flagTok != "" && file != "" {
		return "", errors.New("--token and --token_file: give one")
	}
	tok, what := env, "GPUSPANS_TOKEN"
	switch {
	case file != "":
		b, err := readTokenFile(file)
		if err != nil {
			return "", err
		}
		tok, what = strings.TrimSpace(string(b)), "--token_file "+file
		if tok == "" {
			return "", fmt.Errorf("--token_file %s is empty", file)
		}
	case flagTok != "":
		tok, what = flagTok, "--token"
	}
	if err := control.CheckToken(tok); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return tok, nil
}

// maxTokenFile bounds --token_file: a token is a line, not a file's worth.
const maxTokenFile = 4 << 10

// readTokenFile reads --token_file: a regular file of at most
// maxTokenFile bytes (smallfile.Read: a FIFO or /dev/zero is refused by
// name).
func readTokenFile(file string) ([]byte, error) {
	b, err := smallfile.Read(file, maxTokenFile)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("--token_file: %w", err)
		}
		return nil, fmt.Errorf("--token_file %s %w: name a file holding the token", file, err)
	}
	return b, nil
}

// statusEvery is --status_every: a duration, or a bare number of seconds,
// so that "-1" means none as the help says (time.ParseDuration wants a
// unit).
type statusEvery time.Duration

func (s *statusEvery) String() string { return time.Duration(*s).String() }

func (s *statusEvery) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || math.IsNaN(f) || math.Abs(f) > 1e6 {
			return errors.New("want a duration (5s, 500ms) or seconds (5; negative: no status line)")
		}
		d = time.Duration(f * float64(time.Second))
	}
	*s = statusEvery(d)
	return nil
}

// demoFlags binds the demo's flags to cfg.
func demoFlags(cfg *demo.Config) (fs *flag.FlagSet, token, tokenFile *string) {
	fs = newFlagSet("demo", "gpuspans demo [flags]", demoDescription)
	fs.StringVar(&cfg.Backend, "backend", cfg.Backend, "GPU backend: auto (CUDA if a driver and the device are there, else the simulator), sim or cuda")
	fs.IntVar(&cfg.Device, "device", cfg.Device, "GPU ordinal")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "HTTP address for the live page, /metrics and control; empty to serve nothing. Off loopback a token is required")
	token = fs.String("token", "", "bearer token for the control endpoints; visible in ps: prefer --token_file or $GPUSPANS_TOKEN")
	tokenFile = fs.String("token_file", "", "file holding the bearer token (white space around it ignored)")
	fs.BoolVar(&cfg.ProtectReads, "protect_reads", false, "require the token on /metrics and the live page too")
	fs.BoolVar(&cfg.KernelHistograms, "kernel_histograms", cfg.KernelHistograms, "also export a latency histogram and recent quantiles per kernel on /metrics: 5 series per kernel with native histograms, 32 classic (see docs/operations.md's series budget)")
	fs.Var((*labelsFlag)(&cfg.MetricLabels), "metric_labels", "constant labels on every gpuspans series of /metrics, a `list` of name=value (model_name=llama-3-70b,region=eu); they add no series")
	fs.IntVar(&cfg.ClassicBuckets, "classic_buckets", cfg.ClassicBuckets, "classic histogram buckets per doubling of duration on /metrics: 1 (25 buckets, 1us..16s; histogram_quantile within a factor of 2), 2, 4 or 8 (193 buckets, within 9%)")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "engine steps per second (0.001..1e6); 0 runs steps back to back")
	fs.IntVar(&cfg.Steps, "steps", cfg.Steps, "stop after this many steps; 0 runs until Ctrl-C")
	fs.Var((*durationFlag)(&cfg.Duration), "duration", "stop after this long, with a unit (30s, 5m); 0 runs until Ctrl-C")
	fs.Var(&cfg.Engine.Prefill, "prefill", "kernels of the prefill lane, a `list` of name=duration")
	fs.Var(&cfg.Engine.Decode, "decode", "kernels of the decode lane, a `list` of name=duration")
	fs.Var(&cfg.Engine.Graph, "graph", "kernels (a `list` of name=duration) captured once into a graph and replayed at the end of the decode lane every step; empty for no graph")
	fs.Float64Var(&cfg.Engine.Jitter, "jitter", cfg.Engine.Jitter, "vary each launch's duration by up to this fraction either way (0..0.9)")
	fs.Int64Var(&cfg.Engine.Seed, "seed", cfg.Engine.Seed, "seed of the jitter")
	fs.Var((*durationFlag)(&cfg.Engine.HostGap), "host_gap", fmt.Sprintf("host work in the decode lane before the graph's replay (0..%v): the GPU idles through it, as kernel windows' GPU time shows", demo.MaxHostGap))
	fs.StringVar(&cfg.TracePath, "trace", cfg.TracePath, "timeline trace written on exit (Chrome trace JSON); empty for none. A * in the file name makes a new file each run (the default)")
	fs.IntVar(&cfg.TraceSpans, "trace_spans", cfg.TraceSpans, "the trace keeps the last this many spans")
	fs.StringVar(&cfg.SpansPath, "spans", cfg.SpansPath, "span file, written as spans land (protobuf, see proto/gpuspans/v1); empty for none")
	fs.StringVar(&cfg.OTLP, "otlp", cfg.OTLP, "OpenTelemetry collector `endpoint` to send GPU spans to, linked to simulated request spans: http://host:4318 (OTLP/HTTP), http://host:4317 with --otlp_protocol=grpc, https:// for TLS; empty: $OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, else none; off: none")
	fs.StringVar(&cfg.OTLPProtocol, "otlp_protocol", cfg.OTLPProtocol, "OTLP `protocol`: grpc or http/protobuf; empty: $OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL, else http/protobuf")
	fs.IntVar(&cfg.OTLPSampleEvery, "otlp_sample_every", cfg.OTLPSampleEvery, "with OTLP, send the spans of one step in this many (1..1048576)")
	fs.IntVar(&cfg.Requests, "requests", cfg.Requests, "with OTLP or --tenants, simulated requests in every step's batch, each a span the step's GPU spans link to (with OTLP)")
	fs.IntVar(&cfg.Tenants, "tenants", cfg.Tenants, fmt.Sprintf("simulated requests from this many tenants (0..%d), said to the hub every step: whose GPU time on the live page, /metrics, the span file and OTLP (tenant t1 with long prompts and contexts, the others short)", demo.MaxTenants))
	fs.StringVar(&cfg.Profile.Path, "profile", "", "GPU profile `file`: read at start (another build's is compared with this one's kernel windows, a line a lane), this build's written there every minute and at exit; only a profile is ever replaced (see gpuspans profile diff)")
	fs.StringVar(&cfg.Profile.Build, "build", "", "the engine's build `identity` its profile is tagged with (its version); empty: the metric label version or build, if given")
	fs.Var((*statusEvery)(&cfg.StatusEvery), "status_every", "status line `period` (5s, or seconds: 5); 0: 0.5s on a terminal (rewritten in place), 5s otherwise; negative (-1): none")
	hubFlags(fs, &cfg.Hub)
	return fs, token, tokenFile
}

// hubFlags binds a flag to each of the hub's options that the demo lets
// its user set, named as the C ABI and Python name the option
// (go/internal/optname); the demo sets the others itself.
func hubFlags(fs *flag.FlagSet, o *gpuspans.Options) {
	fs.TextVar(&o.Level, "level", o.Level, "telemetry `level` at start: off, step or kernel")
	fs.TextVar(&o.KernelTiming, "kernel_timing", o.KernelTiming, "where kernel spans come from: events (event pairs around the demo's launches), auto (every kernel of kernel windows from CUPTI where it loads, else events), cupti, or attached (CUPTI attached throughout)")
	fs.IntVar(&o.KernelSpanEvery, "kernel_span_every", o.KernelSpanEvery, fmt.Sprintf("arm kernel spans on one step in this many (0: %d)", gpuspans.DefaultKernelSpanEvery))
	fs.IntVar(&o.Slots, "slots", o.Slots, fmt.Sprintf("span ring slots (event pairs) per device (0: %d)", gpuspans.DefaultSlots))
	fs.Var((*durationFlag)(&o.KernelWindowEvery), "kernel_window_every", fmt.Sprintf("with kernel_timing auto or cupti, the `period` of kernel windows (%v..%v; 0: %v)",
		gpuspans.MinKernelWindowEvery, gpuspans.MaxKernelWindowEvery, gpuspans.DefaultKernelWindowEvery))
	fs.IntVar(&o.KernelWindowSteps, "kernel_window_steps", o.KernelWindowSteps, fmt.Sprintf("steps each kernel window collects (1..%d; 0: %d)", gpuspans.MaxKernelWindowSteps, gpuspans.DefaultKernelWindowSteps))
	fs.IntVar(&o.KernelLabels, "kernel_labels", o.KernelLabels, fmt.Sprintf("traced kernel names that get a label of their own, heaviest first; the rest are \"other\" (1..%d; 0: %d)", gpuspans.MaxKernels, gpuspans.DefaultKernelLabels))
	fs.IntVar(&o.MaxRequests, "max_requests", o.MaxRequests, fmt.Sprintf("requests held at once for whose GPU time: in flight, or ended with spans still to land (1..%d; 0: %d)", gpuspans.MaxRequests, gpuspans.DefaultMaxRequests))
	fs.IntVar(&o.RequestLabels, "request_labels", o.RequestLabels, fmt.Sprintf("request classes (model, adapter, tenant) with labels of their own on /metrics, first served first; the rest are \"other\" (1..%d; 0: %d)", gpuspans.MaxRequestClasses, gpuspans.DefaultRequestLabels))
	fs.Float64Var(&o.PeakFlops, "peak_flops", o.PeakFlops, "each device's peak FLOP/s, for utilisation (0: the device model's dense BF16 figure, where known)")
	fs.Float64Var(&o.PeakBandwidth, "peak_bandwidth", o.PeakBandwidth, "each device's peak memory bytes/s, for utilisation (0: the device model's, where known)")
	fs.TextVar(&o.StartTimes, "start_times", o.StartTimes, "`when` spans are placed on the host clock: auto (while a reader reads them), never or always")
	fs.BoolVar(&o.RawKernelSpans, "raw_kernel_spans", o.RawKernelSpans, "report kernel spans as their event pairs read them, the event offset not subtracted")
}

func demoCmd(args []string, stdout, stderr io.Writer) int {
	cfg := demo.DefaultConfig()
	fs, token, tokenFile := demoFlags(&cfg)
	pos, code, ok := parseFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "demo: unexpected argument %q (see %s demo --help)\n", pos[0], cmdName)
		return 2
	}
	tok, err := demoToken(*token, *tokenFile, os.Getenv("GPUSPANS_TOKEN"))
	if err != nil {
		fmt.Fprintf(stderr, "gpuspans demo: %v\n", err)
		return 2
	}
	cfg.Token = tok
	cfg.Command = cmdName
	if cfg.Profile.Path != "" && cfg.Profile.Build == "" {
		for _, k := range []string{"version", "build"} {
			if v := cfg.MetricLabels[k]; v != "" && cfg.Profile.Build == "" {
				cfg.Profile.Build = v
			}
		}
	}
	// A profile is made of kernel windows: --profile turns them on unless
	// --kernel_timing says otherwise, and then the demo says so at start.
	if cfg.Profile.Path != "" && cfg.Hub.KernelTiming == gpuspans.KernelTimingEvents {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "kernel_timing" })
		if !set {
			cfg.Hub.KernelTiming = gpuspans.KernelTimingAuto
			cfg.ProfileNote = "--profile: kernel timing auto, for the kernel windows a profile is made of (--kernel_timing events to keep event pairs: then no profile is written)"
		} else {
			cfg.ProfileNote = "--profile with --kernel_timing events: no kernel window opens, so no profile will be written; profiles need --kernel_timing auto or cupti"
		}
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

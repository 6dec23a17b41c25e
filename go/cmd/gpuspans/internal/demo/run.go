// Package demo is the gpuspans demo: a small serving engine loop that
// drives a hub exactly as a serving binary would, on a real GPU when there
// is one (spin kernels of chosen durations, and a CUDA graph captured at
// start and replayed each step) or on the simulated GPU, with the HTTP
// surface a serving binary would expose (/metrics, the live page, the
// control endpoints), a live status line, and a trace file, a span file and
// a summary table on exit.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cmd/gpuspans/internal/summary"
	"github.com/gpuspans/gpuspans/go/export/otlp"
	"github.com/gpuspans/gpuspans/go/export/outfile"
	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/export/trace"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
)

// Config configures Run: a plain value, which Run copies. DefaultConfig
// is a demo a newcomer can start without flags.
type Config struct {
	Backend string // BackendAuto, BackendSim or BackendCUDA
	Device  int    // the GPU ordinal
	Engine  EngineConfig

	Rate     float64       // engine steps per second; 0: as fast as the GPU allows
	Steps    int           // stop after this many steps; 0: no limit
	Duration time.Duration // stop after this long; 0: no limit

	Level           gpuspans.Level
	KernelTiming    gpuspans.KernelTiming // where kernel spans come from; CUPTI only with the CUDA backend
	KernelSpanEvery int
	Slots           int // the hub's span ring per device

	Listen string // HTTP address; "" serves nothing
	Token  string // bearer token of the control endpoints; required off loopback
	// ProtectReads requires Token on /metrics and the live page as well.
	ProtectReads bool
	// KernelHistograms adds a histogram per kernel to /metrics
	// (prom.WithKernelHistograms); ClassicBuckets is the classic buckets
	// per doubling of its histograms (prom.WithClassicBuckets).
	KernelHistograms bool
	ClassicBuckets   int

	// TracePath is the timeline trace written on exit; "" writes none. A
	// "*" in its last element makes a new file at start, the "*" replaced
	// by a random string (os.CreateTemp), and the trace goes there; the
	// same holds for SpansPath.
	TracePath  string
	TraceSpans int // the trace keeps the last this many spans
	// Command is how hints name the gpuspans command, as the user ran it
	// (tools/gpuspans.sh from a checkout); "" is "gpuspans".
	Command   string
	SpansPath string // the span file, written as spans land; "" writes none

	// OTLP is the OpenTelemetry collector to send GPU spans to, with
	// synthetic request spans they link to: its endpoint (http://host:4318,
	// or http://host:4317 with OTLPProtocol grpc); "" sends where the OTel
	// environment variables say (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT), or
	// nothing when they name no endpoint; OTLPOff sends nothing.
	OTLP string
	// OTLPProtocol is "grpc" or "http/protobuf"; "": the environment's
	// (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL), else http/protobuf.
	OTLPProtocol string
	// LookupEnv reads the OTel environment variables (nil: the process's).
	LookupEnv func(key string) (string, bool)
	// OTLPSampleEvery sends the spans of one step in this many.
	OTLPSampleEvery int
	// Requests is how many simulated requests each step serves (with OTLP).
	Requests int

	// StatusEvery is the status line's period (0: twice a second on a
	// terminal, every five seconds otherwise; < 0: no status line).
	StatusEvery time.Duration
	// OnListen, when set, is called with the bound address once the HTTP
	// server is up (the port, when Listen asked for port 0).
	OnListen func(net.Addr)
}

// Defaults of DefaultConfig.
const (
	DefaultListen     = "127.0.0.1:9464"
	DefaultRate       = 100
	DefaultTraceSpans = 100000
	// MinRate and MaxRate bound Config.Rate (but for 0): one step in
	// 1000 s to one a microsecond.
	MinRate       = 1e-3
	MaxRate       = 1e6
	DefaultJitter = 0.25
	// MaxOTLPSampleEvery bounds Config.OTLPSampleEvery.
	MaxOTLPSampleEvery = 1 << 20
	// OTLPOff as Config.OTLP sends no spans, whatever the environment says.
	OTLPOff = "off"
	// OTLPServiceName is the demo's service.name, unless the environment
	// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) names another.
	OTLPServiceName = "gpuspans-demo"
	// recentSpans sizes the hub's recent-span ring that the trace and the
	// span file are fed from: several seconds of spans at any sane rate,
	// between polls every pollEvery.
	recentSpans = 1 << 16
	pollEvery   = 200 * time.Millisecond
)

// DefaultTracePath is where the demo writes its trace unless told: in the
// system's temporary directory, so that a run from a checkout leaves no
// file in it, under a new name each run (the "*", see Config.TracePath), so
// that it never replaces a file someone else made, nor an earlier run's.
var DefaultTracePath = filepath.Join(os.TempDir(), "gpuspans-trace-*.json")

// DefaultKernels are the demo's kernels: a prefill lane of about 860 us and
// a decode lane of about 185 us plus a 35 us graph.
var (
	DefaultPrefill = Kernels{{"embed", 60 * time.Microsecond}, {"attn_prefill", 450 * time.Microsecond}, {"mlp_prefill", 350 * time.Microsecond}}
	DefaultDecode  = Kernels{{"attn_decode", 90 * time.Microsecond}, {"mlp_decode", 70 * time.Microsecond}, {"sample", 25 * time.Microsecond}}
	DefaultGraph   = Kernels{{"norm", 15 * time.Microsecond}, {"rope", 10 * time.Microsecond}, {"residual", 10 * time.Microsecond}}
)

// DefaultConfig returns the demo's defaults: auto backend, 100 steps a
// second until interrupted, level kernel with the library's kernel span
// period, the HTTP surface on 127.0.0.1:9464, and a trace on exit. Each
// call returns a new value; safe from any goroutine.
func DefaultConfig() Config {
	return Config{
		Backend: BackendAuto,
		Engine: EngineConfig{
			Prefill: append(Kernels(nil), DefaultPrefill...),
			Decode:  append(Kernels(nil), DefaultDecode...),
			Graph:   append(Kernels(nil), DefaultGraph...),
			Jitter:  DefaultJitter,
			Seed:    1,
		},
		Rate:            DefaultRate,
		Level:           gpuspans.LevelKernel,
		KernelSpanEvery: gpuspans.DefaultKernelSpanEvery,
		Slots:           gpuspans.DefaultSlots,
		Listen:          DefaultListen,
		ClassicBuckets:  prom.DefaultClassicBuckets,
		TracePath:       DefaultTracePath,
		TraceSpans:      DefaultTraceSpans,
		OTLPSampleEvery: otlp.DefaultSampleEvery,
		Requests:        DefaultRequests,
	}
}

func (c *Config) command() string {
	if c.Command == "" {
		return "gpuspans"
	}
	return c.Command
}

// Validate reports the first setting out of range. It reads c, and the
// OTel environment variables through c.LookupEnv.
func (c *Config) Validate() error {
	switch {
	case c.Rate != 0 && !(c.Rate >= MinRate && c.Rate <= MaxRate): // NaN fails both
		return fmt.Errorf("rate %v: want 0 (steps back to back) or %v..%v steps per second", c.Rate, MinRate, MaxRate)
	case !(c.Engine.Jitter >= 0 && c.Engine.Jitter <= 0.9):
		return fmt.Errorf("jitter %v: want 0..0.9", c.Engine.Jitter)
	case c.Steps < 0:
		return fmt.Errorf("steps %d: want >= 0", c.Steps)
	case c.Duration < 0:
		return fmt.Errorf("duration %v: want >= 0", c.Duration)
	case c.KernelSpanEvery < 1 || c.KernelSpanEvery > gpuspans.MaxKernelSpanEvery:
		return fmt.Errorf("kernel_span_every %d: want 1..%d", c.KernelSpanEvery, gpuspans.MaxKernelSpanEvery)
	case c.Slots < 1 || c.Slots > backend.MaxSlots:
		return fmt.Errorf("slots %d: want 1..%d", c.Slots, backend.MaxSlots)
	case c.TracePath != "" && c.TraceSpans < 1:
		return fmt.Errorf("trace spans %d: want >= 1", c.TraceSpans)
	case len(c.Engine.Prefill)+len(c.Engine.Decode)+len(c.Engine.Graph) == 0:
		return errors.New("no kernels: give the prefill or decode lane at least one")
	case c.ProtectReads && c.Token == "":
		return errors.New("protect_reads: there is no token to require (--token, --token_file or GPUSPANS_TOKEN)")
	case c.OTLPSampleEvery < 1 || c.OTLPSampleEvery > MaxOTLPSampleEvery:
		return fmt.Errorf("otlp_sample_every %d: want 1..%d", c.OTLPSampleEvery, MaxOTLPSampleEvery)
	case c.Requests < 1 || c.Requests > MaxRequests:
		return fmt.Errorf("requests %d: want 1..%d", c.Requests, MaxRequests)
	}
	if err := prom.CheckClassicBuckets(c.ClassicBuckets); err != nil {
		return fmt.Errorf("classic_buckets %d: want 1, 2, 4 or 8", c.ClassicBuckets)
	}
	if _, _, err := c.otlpOptions(); err != nil {
		return err // it names the flag's option or the variable, after "otlp:"
	}
	if err := control.CheckToken(c.Token); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	return nil
}

// otlpOptions returns the OTLP exporter's options, and whether to start
// one: with OTLP set (but OTLPOff), or with an endpoint in the
// environment.
func (c *Config) otlpOptions() (otlp.Options, bool, error) {
	o := otlp.Options{
		Protocol:           c.OTLPProtocol,
		DefaultServiceName: OTLPServiceName,
		SampleEvery:        c.OTLPSampleEvery,
		LookupEnv:          c.LookupEnv,
	}
	if c.OTLP == OTLPOff {
		return o, false, nil
	}
	// The flags first, so that errors name them.
	switch c.OTLPProtocol {
	case "", otlp.ProtocolGRPC, otlp.ProtocolHTTP:
	default:
		return o, false, fmt.Errorf("otlp_protocol %q: want %s or %s", c.OTLPProtocol, otlp.ProtocolGRPC, otlp.ProtocolHTTP)
	}
	if c.OTLP != "" {
		if err := otlp.CheckEndpoint(c.OTLPProtocol, c.OTLP); err != nil {
			return o, false, err // it names the endpoint, after "otlp:"
		}
	}
	o.Endpoint = c.OTLP
	err := o.Check()
	if c.OTLP == "" && errors.Is(err, otlp.ErrNoEndpoint) {
		return o, false, nil
	}
	return o, err == nil, err
}

// Result is what a run did: a plain value owned by the caller.
type Result struct {
	Backend     string            // what ran the kernels
	Steps       int               // engine steps run
	Elapsed     time.Duration     // wall time of the loop
	Snapshot    gpuspans.Snapshot // the hub's last snapshot
	Capture     CaptureResult     // the graph capture at start
	TraceSpans  uint64            // spans written to the trace
	Unplaced    uint64            // spans left out of the trace: the backend gave no host start time
	FileSpans   uint64            // spans written to the span file
	StoppedWhy  string            // "interrupted", "--steps", "--duration" or the error
	HTTPAddress net.Addr          // where the HTTP surface was served, or nil
	OTLP        otlp.Stats        // what the OTLP exporter did, when one ran
	OTLPTarget  otlp.Target       // where it sent (zero: none ran)
	OTLPError   error             // its last failed request's error, or nil
}

// Run runs the demo until ctx is done or a limit of cfg is reached, then
// lands the last spans, writes the trace and span files, and prints the
// summary table. Everything it prints goes to out; the first line says
// which GPU backend runs and why. An error comes back for a setting that
// cannot work (a busy port, a public address without a token, a path that
// cannot be written) before the loop starts, or for a GPU failure during
// it, in which case the files and summary are still written. Runs are
// independent (each has its own hub and GPU) and may go on concurrently,
// on distinct listen addresses and output paths.
func Run(ctx context.Context, cfg Config, out io.Writer) (res Result, err error) {
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	con := newConsole(out)

	gpu, note, err := OpenGPU(cfg.Backend, cfg.Device)
	if err != nil {
		return res, err
	}
	con.Printf("gpuspans demo: %s", note)
	res.Backend = gpu.Describe()
	gpuClosed := false
	defer func() {
		if !gpuClosed {
			_ = gpu.Close()
		}
	}()

	var ln net.Listener
	if cfg.Listen != "" {
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			return res, fmt.Errorf("--listen: %w", err)
		}
		defer ln.Close()
		if err := control.CheckListen(ln.Addr(), cfg.Token); err != nil {
			return res, fmt.Errorf("%w (here: --token, --token_file or $GPUSPANS_TOKEN)", err)
		}
	}
	outs, err := openOutputs(&cfg)
	if err != nil {
		return res, err
	}
	defer outs.abort()

	timing := cfg.KernelTiming
	if timing != gpuspans.KernelTimingEvents && gpu.Tracer() == nil {
		con.Printf("kernel_timing %v: %s runs no CUDA kernel for CUPTI to see; kernel spans are event pairs", timing, gpu.Describe())
		timing = gpuspans.KernelTimingEvents
	}
	hub, err := gpuspans.New(gpuspans.Options{
		Lanes:           []string{LanePrefill, LaneDecode},
		KernelSpanEvery: cfg.KernelSpanEvery,
		Slots:           cfg.Slots,
		RecentSpans:     recentSpans,
		Level:           cfg.Level,
		Logf:            con.Printf,
		KernelTiming:    timing,
		KernelTracer:    gpu.Tracer(),
	})
	if err != nil {
		return res, err
	}
	if err := hub.Install(gpu.Device(), gpu.Stream(), gpu.Opener()); err != nil {
		return res, err
	}
	eng, err := NewEngine(hub, gpu, cfg.Engine)
	if err != nil {
		return res, err
	}
	if res.Capture, err = eng.Capture(); err != nil {
		return res, err
	}
	if res.Capture.Kernels > 0 {
		con.Printf("captured a graph of %d kernels at start, with kernel spans around each launch: the hub refused %d on the capturing stream (dropped: capturing) and the capture ended intact", res.Capture.Kernels, res.Capture.Refused)
	}

	var exp *otlp.Exporter
	var reqs *requests
	var extra []prometheus.Collector
	promOpts := []prom.Option{prom.WithClassicBuckets(cfg.ClassicBuckets)}
	if cfg.KernelHistograms {
		promOpts = append(promOpts, prom.WithKernelHistograms())
	}
	o, on, err := cfg.otlpOptions()
	if err != nil {
		return res, err
	}
	if on {
		o.Logf = con.Printf
		// Not ctx: Ctrl-C ends the loop, and Close below still sends the last spans.
		if exp, err = otlp.New(context.Background(), hub, o); err != nil {
			return res, err
		}
		defer func() { // a run that fails before the end; the end closes it with time to send
			expired, cancel := context.WithCancel(context.Background())
			cancel()
			_ = exp.Close(expired)
		}()
		reqs = newRequests(exp, cfg.Requests, cfg.Engine.Seed)
		eng.onStep = reqs.step
		extra = append(extra, exp.Collector())
		promOpts = append(promOpts, prom.WithExemplars(exp)) // lane histograms link to the traces sent
		res.OTLPTarget = exp.Target()
		tg := &res.OTLPTarget
		con.Printf("OTLP: GPU spans of 1 step in %d, and %d simulated requests per step, to %s over %s (endpoint from %s, protocol from %s)",
			cfg.OTLPSampleEvery, cfg.Requests, tg.URL, tg.Protocol, flagName(tg.EndpointFrom), flagName(tg.ProtocolFrom))
	}

	var srv *http.Server
	if ln != nil {
		srv = newServer(NewHandler(hub, HandlerOptions{Options: gpuspanshttp.Options{Backend: gpu.Describe(), Token: cfg.Token, ProtectReads: cfg.ProtectReads, Logf: con.Printf, Collectors: extra, Prom: promOpts}, Engine: eng}), con)
		go func() { _ = srv.Serve(ln) }() // Serve returns ErrServerClosed at Shutdown
		res.HTTPAddress = ln.Addr()
		base := "http://" + displayAddr(ln.Addr())
		con.Printf("live page: %s/debug/gpuspans   metrics: %s/metrics   control: %s/control/level, /control/kernel_span_every, /control/kernel_timing, /control/kernel_window, /control/sim", base, base, base)
		if cfg.OnListen != nil {
			cfg.OnListen(ln.Addr())
		}
	}
	con.Printf("%s; %s", stopHow(&cfg), outs.describe())

	col := newCollector(hub, eng, outs, con, cfg.StatusEvery)
	colDone := make(chan struct{})
	go func() { col.run(ctx); close(colDone) }()

	start := time.Now()
	res.Steps, res.StoppedWhy, err = loop(ctx, eng, &cfg)
	res.Elapsed = time.Since(start)
	col.stop()
	<-colDone
	con.EndStatus()

	// Land what is still in flight: the GPU is idle once Wait returns, so
	// a few harvests finish it; then retire the recorder and close the pool
	// before the GPU's stream goes.
	if werr := gpu.Wait(); werr != nil && err == nil {
		err = werr
	}
	drain(hub)
	col.poll()
	hub.Uninstall(gpu.Device())
	drain(hub)
	if exp != nil {
		reqs.end()
		// The last spans go out now, with a few seconds for a slow collector.
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if cerr := exp.Close(cctx); cerr != nil {
			con.Printf("OTLP: closing the exporter: %v", cerr)
		}
		cancel()
		res.OTLP = exp.Stats()
		res.OTLPError = exp.LastError()
	}
	gpuClosed = true
	if cerr := gpu.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
	}

	res.Snapshot = hub.Snapshot()
	written, werr := outs.finish(&res.Snapshot)
	res.TraceSpans, res.Unplaced, res.FileSpans = written.trace, written.unplaced, written.file
	if werr != nil && err == nil {
		err = werr
	}
	report(con, &cfg, &res, outs)
	return res, err
}

// loop runs engine steps at cfg.Rate until ctx is done or a limit is hit,
// on one OS thread: it launches the kernels, and kernel windows attach and
// detach CUPTI on the launching thread only.
func loop(ctx context.Context, eng *Engine, cfg *Config) (int, string, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var period time.Duration
	if cfg.Rate > 0 {
		period = time.Duration(float64(time.Second) / cfg.Rate)
	}
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		deadline = t.C
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	next := time.Now()
	for steps := 0; ; {
		select {
		case <-ctx.Done():
			return steps, "interrupted", nil
		case <-deadline:
			return steps, "--duration", nil
		default:
		}
		if cfg.Steps > 0 && steps >= cfg.Steps {
			return steps, "--steps", nil
		}
		if err := eng.Step(); err != nil {
			return steps, err.Error(), err
		}
		steps++
		if period == 0 {
			continue
		}
		next = next.Add(period)
		wait := time.Until(next)
		if wait <= 0 {
			if wait < -period {
				next = time.Now() // behind by more than a step: do not try to catch up in a burst
			}
			continue
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return steps, "interrupted", nil
		case <-deadline:
			return steps, "--duration", nil
		case <-timer.C:
		}
	}
}

// drain harvests until nothing is in flight, for at most a second: spans
// that never complete (a wedged GPU) must not hang the exit.
func drain(hub *gpuspans.Hub) {
	limit := time.Now().Add(time.Second)
	for {
		hub.Harvest()
		if hub.Snapshot().Counters.InFlight == 0 || time.Now().After(limit) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func stopHow(cfg *Config) string {
	var limits []string
	if cfg.Steps > 0 {
		limits = append(limits, fmt.Sprintf("after %d steps", cfg.Steps))
	}
	if cfg.Duration > 0 {
		limits = append(limits, "after "+cfg.Duration.String())
	}
	if len(limits) == 0 {
		return "running until Ctrl-C"
	}
	return "stopping " + strings.Join(limits, " or ") + " (or Ctrl-C)"
}

// displayAddr is addr as a URL host: an unspecified address (0.0.0.0, ::)
// is shown as loopback, which reaches it from this machine.
func displayAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	ip := "127.0.0.1"
	if tcp.IP.To4() == nil {
		ip = "::1"
	}
	return net.JoinHostPort(ip, fmt.Sprint(tcp.Port))
}

// report prints the end of run: why it stopped, where the files went, the
// counters that matter and the summary table.
func report(con *console, cfg *Config, res *Result, outs *outputs) {
	s := &res.Snapshot
	rate := 0.0
	if res.Elapsed > 0 {
		rate = float64(res.Steps) / res.Elapsed.Seconds()
	}
	con.Printf("stopped (%s) after %d steps in %v (%.1f steps/s)", res.StoppedWhy, res.Steps, res.Elapsed.Round(time.Millisecond), rate)
	c := &s.Counters
	con.Printf("spans: %d begun, %d landed, %d dropped (slot_busy %d, capturing %d, retired %d, leaked %d), %d errored, %d in flight",
		c.Begun, c.Landed, c.DroppedTotal(), c.Dropped[gpuspans.DropSlotBusy], c.Dropped[gpuspans.DropCapturing], c.Dropped[gpuspans.DropRetired], c.Dropped[gpuspans.DropLeaked], c.Errored, c.InFlight)
	for _, d := range s.Devices {
		if d.Err != nil {
			con.Printf("device %d: %s: %v", d.Device, d.State, d.Err)
		}
	}
	if outs.tracePath != "" {
		left := ""
		if res.Unplaced > 0 {
			// The CUDA pool places a span on the host clock through the
			// anchor current when it began: spans begun before the pool's
			// first anchor completed have none.
			left = fmt.Sprintf("; %d left out, with no host start time", res.Unplaced)
		}
		con.Printf("trace: %d spans written to %s%s (open it in https://ui.perfetto.dev or chrome://tracing)", res.TraceSpans, outs.tracePath, left)
	}
	if res.OTLPTarget.URL != "" {
		o := &res.OTLP
		con.Printf("OTLP: %d spans exported to %s over %s (GPU spans, step roots, requests); dropped: %d queue full, %d in failed requests, %d at exit, %d without a host start time; %d spans of unsampled steps left out",
			o.Exported, res.OTLPTarget.URL, res.OTLPTarget.Protocol, o.QueueFull, o.ExportFailed, o.Shutdown, o.Unplaced, o.Unsampled)
		if res.OTLPError != nil {
			con.Printf("OTLP: %d of %d requests failed, the last with: %v", o.ExportErrors, o.Exports, res.OTLPError)
		}
	}
	if outs.spansPath != "" {
		con.Printf("span file: %d spans written to %s (%s trace summary %s)", res.FileSpans, outs.spansPath, cfg.command(), outs.spansPath)
	}
	var b strings.Builder
	_ = summary.Write(&b, summary.FromSnapshot(s))
	con.Printf("\n%s", strings.TrimRight(b.String(), "\n"))
}

// newServer returns the HTTP server of the demo, logging to the console.
func newServer(h http.Handler, con *console) *http.Server {
	return gpuspanshttp.NewServer(h, log.New(consoleWriter{con}, "http: ", 0))
}

// consoleWriter lets a log.Logger print through the console.
type consoleWriter struct{ c *console }

func (w consoleWriter) Write(p []byte) (int, error) {
	w.c.Printf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// outputs are the trace and span files of a run.
type outputs struct {
	tracePath string
	traceTmp  *outfile.File // written at finish, renamed to tracePath
	ring      spanRing
	spansPath string
	spansFile *outfile.File // written as spans land, renamed to spansPath at finish
	spans     *spanfile.Writer
	fileSpans uint64
	spansErr  error
	made      []string // the empty files made for patterns (newFile), removed by an abort before finish
	finished  bool
	mu        sync.Mutex // guards ring, spans, fileSpans and spansErr: the collector and finish both write
}

// openOutputs creates the output files up front, so that a bad path fails
// before the demo runs rather than at its end. Each goes to a temporary
// file next to its path, renamed there at finish: until then nothing at the
// path is touched, and only a regular file is ever replaced (see outfile).
// Both paths are checked, and refused if they are the same file, before
// either is created. A path with a "*" in its last element is first made
// as a new, empty file (see Config.TracePath): what is renamed onto it at
// finish replaces only that.
func openOutputs(cfg *Config) (_ *outputs, err error) {
	o := &outputs{}
	defer func() {
		if err != nil {
			o.abort()
		}
	}()
	if cfg.TracePath != "" && cfg.SpansPath != "" && outfile.Same(cfg.TracePath, cfg.SpansPath) {
		return nil, fmt.Errorf("--trace %s and --spans %s are the same file", cfg.TracePath, cfg.SpansPath)
	}
	for _, c := range []struct{ flag, path string }{{"--trace", cfg.TracePath}, {"--spans", cfg.SpansPath}} {
		if c.path != "" && !isPattern(c.path) {
			if err := outfile.Check(c.flag, c.path); err != nil {
				return nil, err
			}
		}
	}
	if o.tracePath, err = o.newFile("--trace", cfg.TracePath); err != nil {
		return nil, err
	}
	if o.spansPath, err = o.newFile("--spans", cfg.SpansPath); err != nil {
		return nil, err
	}
	if o.tracePath != "" {
		f, err := outfile.Create("--trace", o.tracePath)
		if err != nil {
			return nil, err
		}
		o.traceTmp = f
		o.ring.buf = make([]gpuspans.Span, 0, minInt(cfg.TraceSpans, 4096))
		o.ring.max = cfg.TraceSpans
	}
	if o.spansPath != "" {
		f, err := outfile.Create("--spans", o.spansPath)
		if err != nil {
			return nil, err
		}
		o.spansFile = f
		o.spans = spanfile.NewWriter(f)
	}
	return o, nil
}

// isPattern reports whether path names a new file each run: a "*" in its
// last element.
func isPattern(path string) bool { return strings.Contains(filepath.Base(path), "*") }

// newFile returns path, or for a pattern the new file it creates (and
// remembers, for abort to remove).
func (o *outputs) newFile(flag, path string) (string, error) {
	if path == "" || !isPattern(path) {
		return path, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path))
	if err != nil {
		return "", fmt.Errorf("%s %s: cannot create a new file there: %w", flag, path, err)
	}
	_ = f.Close()
	o.made = append(o.made, f.Name())
	return f.Name(), nil
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func (o *outputs) describe() string {
	var parts []string
	if o.tracePath != "" {
		parts = append(parts, "trace on exit: "+o.tracePath)
	}
	if o.spansPath != "" {
		parts = append(parts, "span file: "+o.spansPath)
	}
	if len(parts) == 0 {
		return "no trace or span file"
	}
	return strings.Join(parts, ", ")
}

// add takes the spans the collector read.
// wantSpans reports whether any output takes spans. Fixed after openOutputs.
func (o *outputs) wantSpans() bool { return o.traceTmp != nil || o.spans != nil }

func (o *outputs) add(spans []gpuspans.Span) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.traceTmp != nil {
		o.ring.add(spans)
	}
	if o.spans != nil && o.spansErr == nil {
		if err := o.spans.WriteSpans("gpuspans demo", spans); err != nil {
			o.spansErr = err
		} else {
			o.fileSpans += uint64(len(spans))
		}
	}
}

type written struct{ trace, unplaced, file uint64 }

// finish writes the trace and closes both files; the span file ends with
// the hub's final snapshot.
func (o *outputs) finish(s *gpuspans.Snapshot) (written, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished = true
	var w written
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if o.spans != nil {
		if o.spansErr == nil {
			keep(o.spans.WriteSnapshot(s))
		}
		keep(o.spansErr)
		keep(o.spansFile.Commit())
		o.spans, o.spansFile = nil, nil
		w.file = o.fileSpans
	}
	if o.traceTmp != nil {
		f := o.traceTmp
		o.traceTmp = nil
		tw := trace.NewWriter(f, trace.Options{})
		err := tw.WriteSpans(o.ring.ordered())
		if err == nil {
			err = tw.Close()
		}
		if err != nil {
			f.Abort()
			o.removeMade(o.tracePath)
			keep(fmt.Errorf("writing the trace %s: %w", o.tracePath, err))
		} else if err = f.Commit(); err != nil {
			keep(fmt.Errorf("writing the trace: %w", err))
		} else {
			w.trace, w.unplaced = tw.Counts().Written, tw.Counts().Unplaced
		}
	}
	return w, first
}

// abort removes the temporary trace and span files, leaving their paths as
// they were, for a run that fails before finish. After finish it does nothing.
func (o *outputs) abort() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.traceTmp != nil {
		o.traceTmp.Abort()
		o.traceTmp = nil
	}
	if o.spansFile != nil {
		o.spansFile.Abort()
		o.spansFile, o.spans = nil, nil
	}
	if !o.finished {
		for _, p := range o.made {
			_ = os.Remove(p)
		}
		o.made = nil
	}
}

// removeMade removes path if newFile made it, as an empty file nothing was
// written to.
func (o *outputs) removeMade(path string) {
	for _, p := range o.made {
		if p == path {
			_ = os.Remove(p)
		}
	}
}

// spanRing keeps the last max spans for the trace, so a demo left running
// for hours still writes a trace a viewer can open.
type spanRing struct {
	buf  []gpuspans.Span
	max  int
	next int // where the next span goes once buf is full
}

func (r *spanRing) add(spans []gpuspans.Span) {
	for _, s := range spans {
		if len(r.buf) < r.max {
			r.buf = append(r.buf, s)
			continue
		}
		r.buf[r.next] = s
		r.next = (r.next + 1) % r.max
	}
}

// ordered returns the spans oldest first.
func (r *spanRing) ordered() []gpuspans.Span {
	if len(r.buf) < r.max || r.next == 0 {
		return r.buf
	}
	return append(append([]gpuspans.Span(nil), r.buf[r.next:]...), r.buf[:r.next]...)
}

// flagName names an OTLP setting's source as a user of the command knows
// it: the flag for an option, else the variable or "default".
func flagName(from string) string {
	switch from {
	case "Options.Endpoint":
		return "--otlp"
	case "Options.Protocol":
		return "--otlp_protocol"
	}
	return from
}

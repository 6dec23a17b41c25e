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
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/export/otlp"
	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
)

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
	r := &demoRun{cfg: cfg, con: newConsole(out)}
	defer r.closeAll() // what a start that failed left open
	for _, start := range []func() error{
		r.openGPU,       // the backend, and the first line, saying which
		r.listen,        // the HTTP address, checked against the token
		r.openFiles,     // the trace and span files, so that a bad path fails now
		r.makeHub,       // the hub, installed on the GPU
		r.makeEngine,    // the engine that drives it
		r.capture,       // the engine's graph, captured at start
		r.startOTLP,     // the OTLP exporter, if any
		r.startRequests, // the simulated requests, with OTLP or tenants
	} {
		if err := start(); err != nil {
			return r.res, err
		}
	}
	r.serveHTTP()              // /metrics, the live page and the control endpoints
	loopErr := r.runSteps(ctx) // the engine loop, with the collector beside it
	stopErr := r.shutdown()    // the last spans landed; the exporter, GPU and server closed
	fileErr := r.writeFiles()  // the trace, and the span file's end
	report(r.con, &r.cfg, &r.res, r.outs)
	return r.res, firstErr(loopErr, stopErr, fileErr)
}

// demoRun is one Run's state: each phase fills in what it opens, for the
// phases after it, and registers with onExit what must be closed should a
// later one fail.
type demoRun struct {
	cfg Config
	con *console
	res Result

	gpu       GPU
	gpuClosed bool         // by shutdown: closeAll leaves it
	ln        net.Listener // nil: no HTTP surface
	outs      *outputs
	hub       *gpuspans.Hub
	eng       *Engine
	exp       *otlp.Exporter // nil: no OTLP
	reqs      *requests      // with exp
	srv       *http.Server   // with ln
	col       *collector
	// stopProfile writes the profile and stops keeping it (Hub.StartProfile).
	stopProfile func()

	closers []func()
}

// onExit has f run when Run returns, before those registered earlier, as
// a defer in Run would: a defer in the phase would run when it returns.
func (r *demoRun) onExit(f func()) { r.closers = append(r.closers, f) }

// closeAll runs the closers, last first. At the end of a full run
// shutdown and writeFiles have closed everything already, and they find
// nothing left to do.
func (r *demoRun) closeAll() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// openGPU opens the backend cfg asks for, and says which runs, and why.
func (r *demoRun) openGPU() error {
	gpu, note, err := OpenGPU(r.cfg.Backend, r.cfg.Device)
	if err != nil {
		return err
	}
	r.con.Printf("gpuspans demo: %s", note)
	r.res.Backend = gpu.Describe()
	r.gpu = gpu
	r.onExit(func() {
		if !r.gpuClosed {
			_ = gpu.Close()
		}
	})
	return nil
}

// listen binds cfg.Listen, if set, and refuses an address off loopback
// without a token.
func (r *demoRun) listen() error {
	if r.cfg.Listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", r.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	r.ln = ln
	r.onExit(func() { _ = ln.Close() })
	if err := control.CheckListen(ln.Addr(), r.cfg.Token); err != nil {
		return fmt.Errorf("%w (here: --token, --token_file or $GPUSPANS_TOKEN)", err)
	}
	return nil
}

// openFiles creates the trace and span files (openOutputs); an abort at
// exit removes them unless writeFiles finished them.
func (r *demoRun) openFiles() error {
	outs, err := openOutputs(&r.cfg)
	if err != nil {
		return err
	}
	r.outs = outs
	r.onExit(outs.abort)
	return nil
}

// makeHub makes the hub and installs it on the GPU, with the GPU's kernel
// tracer (CUPTI, or the simulator's).
func (r *demoRun) makeHub() error {
	cfg, con, gpu := &r.cfg, r.con, r.gpu
	o := cfg.Hub
	o.Lanes = []string{LanePrefill, LaneDecode}
	o.RecentSpans = recentSpans
	o.Logf = con.Printf
	o.KernelTracer = gpu.Tracer()
	hub, err := gpuspans.New(o)
	if err != nil {
		return err
	}
	if err := hub.Install(gpu.Device(), gpu.Stream(), gpu.Opener()); err != nil {
		return err
	}
	r.hub = hub
	if cfg.Profile.Path != "" {
		if cfg.ProfileNote != "" {
			con.Printf("%s", cfg.ProfileNote)
		}
		stop, err := hub.StartProfile(cfg.Profile)
		if err != nil {
			return err
		}
		r.stopProfile = stop
		r.onExit(stop)
	}
	return nil
}

// makeEngine makes the engine that drives the hub on the GPU.
func (r *demoRun) makeEngine() (err error) {
	ec := r.cfg.Engine
	ec.BatchKernels = r.cfg.Tenants > 0
	r.eng, err = NewEngine(r.hub, r.gpu, ec)
	return err
}

// capture captures the engine's graph, with a kernel span tried around
// each launch, which the hub refuses on the capturing stream.
func (r *demoRun) capture() (err error) {
	res := &r.res
	if res.Capture, err = r.eng.Capture(); err != nil {
		return err
	}
	if res.Capture.Kernels > 0 {
		r.con.Printf("captured a graph of %d kernels at start, with kernel spans around each launch: the hub refused %d on the capturing stream (dropped: capturing) and the capture ended intact", res.Capture.Kernels, res.Capture.Refused)
	}
	return nil
}

// startOTLP starts the OTLP exporter, and the simulated requests whose
// spans each step links its GPU spans to, where cfg or the environment
// names a collector.
func (r *demoRun) startOTLP() error {
	cfg, con := &r.cfg, r.con
	o, on, err := cfg.otlpOptions()
	if err != nil || !on {
		return err
	}
	o.Logf = con.Printf
	// Not ctx: Ctrl-C ends the loop, and shutdown still sends the last spans.
	exp, err := otlp.New(context.Background(), r.hub, o)
	if err != nil {
		return err
	}
	r.exp = exp
	r.onExit(func() { // a run that fails before the end; shutdown closes it with time to send
		expired, cancel := context.WithCancel(context.Background())
		cancel()
		_ = exp.Close(expired)
	})
	r.res.OTLPTarget = exp.Target()
	tg := &r.res.OTLPTarget
	con.Printf("OTLP: GPU spans of 1 step in %d, and %d simulated requests per step, to %s over %s (endpoint from %s, protocol from %s)",
		cfg.OTLPSampleEvery, cfg.Requests, tg.URL, tg.Protocol, flagName(tg.EndpointFrom), flagName(tg.ProtocolFrom))
	return nil
}

// startRequests starts the simulated requests, with OTLP (their spans, the
// steps' links to them) or tenants (said to the hub every step).
func (r *demoRun) startRequests() (err error) {
	cfg := &r.cfg
	if r.exp == nil && cfg.Tenants == 0 {
		return nil
	}
	if r.reqs, err = newRequests(r.eng, r.exp, cfg.Requests, cfg.Tenants, cfg.Engine.Seed); err != nil {
		return err
	}
	r.eng.onStep = r.reqs.step
	if cfg.Tenants > 0 {
		r.con.Printf("whose GPU time: %d simulated requests per step from %d tenants (t1 with long prompts and contexts), said to the hub every step", cfg.Requests, cfg.Tenants)
	}
	return nil
}

// serveHTTP serves the HTTP surface on the listener, if there is one, and
// says where.
func (r *demoRun) serveHTTP() {
	if r.ln == nil {
		return
	}
	cfg, con, ln := &r.cfg, r.con, r.ln
	extra, promOpts := r.metrics()
	h := NewHandler(r.hub, HandlerOptions{
		Options: gpuspanshttp.Options{Backend: r.gpu.Describe(), Token: cfg.Token, ProtectReads: cfg.ProtectReads, Logf: con.Printf, Collectors: extra, Prom: promOpts,
			ConstLabels: cfg.MetricLabels},
		Engine: r.eng,
	})
	srv := newServer(h, con)
	r.srv = srv
	go func() { _ = srv.Serve(ln) }() // Serve returns ErrServerClosed at Shutdown
	r.res.HTTPAddress = ln.Addr()
	base := "http://" + displayAddr(ln.Addr())
	con.Printf("live page: %s/debug/gpuspans   metrics: %s/metrics   control: %s/control/level, /control/kernel_span_every, /control/kernel_timing, /control/kernel_window, /control/sim", base, base, base)
	if cfg.OnListen != nil {
		cfg.OnListen(ln.Addr())
	}
}

// metrics returns what /metrics serves beside the hub's own series: the
// OTLP exporter's collector, when one runs, and the prom options.
func (r *demoRun) metrics() ([]prometheus.Collector, prom.Options) {
	var extra []prometheus.Collector
	promOpts := prom.Options{
		ClassicBuckets:   r.cfg.ClassicBuckets,
		KernelHistograms: r.cfg.KernelHistograms,
	}
	// Exemplars only with an exporter: a nil *otlp.Exporter would make a
	// non-nil interface.
	if r.exp != nil {
		extra = append(extra, r.exp.Collector())
		promOpts.Exemplars = r.exp // lane histograms link to the traces sent
	}
	return extra, promOpts
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

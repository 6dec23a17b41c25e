package otlp

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Defaults for the zero Options, and bounds.
const (
	// DefaultSampleEvery matches gpuspans.DefaultKernelSpanEvery, so that
	// with both defaults every sampled step is armed and carries its kernel
	// spans.
	DefaultSampleEvery   = 16
	DefaultQueueSpans    = 4096
	DefaultBatchSpans    = 512
	DefaultPollEvery     = 200 * time.Millisecond
	DefaultExportTimeout = 10 * time.Second
	DefaultMaxLinks      = 64
	DefaultLinkSteps     = 64
	DefaultServiceName   = "gpuspans"

	MaxQueueSpans = 1 << 20
	MaxLinks      = 1024
	MaxLinkSteps  = 1 << 16
)

// ScopeName is the instrumentation scope of the GPU spans.
const ScopeName = "github.com/gpuspans/gpuspans/go/export/otlp"

// Options configures an Exporter. The zero value is valid where the
// environment names an endpoint (OTEL_EXPORTER_OTLP_ENDPOINT); the package
// doc has the precedence of options over variables.
type Options struct {
	// Protocol is ProtocolGRPC ("grpc") or ProtocolHTTP ("http/protobuf");
	// empty: OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL, else http/protobuf.
	Protocol string
	// Endpoint is the collector's address: "http://host:port" (plaintext)
	// or "https://host:port" (TLS), or for gRPC also "host:port". An
	// OTLP/HTTP endpoint with no path posts to /v1/traces, else to the
	// path given; a gRPC endpoint has no path. Empty: the environment's.
	Endpoint string
	// Insecure sends to a gRPC endpoint given as host:port in plaintext.
	// An endpoint's scheme decides for itself.
	Insecure bool
	// Headers are sent with every request (an auth token, say); nil: the
	// environment's.
	Headers map[string]string
	// Compression is "gzip" or "none"; empty: the environment's, else none.
	Compression string
	// TLSConfig is used for https:// endpoints; nil: one with the
	// certificate files the environment names, else the system's roots.
	TLSConfig *tls.Config
	// SpanExporter, when set, replaces the OTLP transport (tests, or
	// another transport) and the settings above. Close shuts it down.
	SpanExporter sdktrace.SpanExporter

	// ServiceName is the resource's service.name; it beats
	// OTEL_SERVICE_NAME. DefaultServiceName is a program's own name, used
	// when neither ServiceName nor the environment names the service
	// (empty: DefaultServiceName, "gpuspans").
	ServiceName, DefaultServiceName string
	// ServiceVersion is the resource's service.version (empty: the
	// environment's, else the main module's version for a Go executable).
	ServiceVersion string
	// Resource adds attributes to the resource; they replace those of the
	// environment and the process of the same key (service.name is
	// ServiceName's).
	Resource []attribute.KeyValue

	// LookupEnv reads the environment variables (nil: os.LookupEnv): tests
	// give a map's, a program with its own configuration one that finds
	// nothing.
	LookupEnv func(key string) (string, bool)

	// SampleEvery exports the spans of steps whose number is a multiple of
	// it (0: DefaultSampleEvery; 1: every step), and of every kernel
	// window's step, whose lane spans carry GPU time.
	SampleEvery int
	// NoKernelSpans leaves kernel spans out, sending lane spans only.
	NoKernelSpans bool

	QueueSpans    int           // the queue's bound, in spans (0: DefaultQueueSpans)
	BatchSpans    int           // spans per request, at most (0: DefaultBatchSpans)
	PollEvery     time.Duration // how often the hub is read (0: DefaultPollEvery)
	ExportTimeout time.Duration // per request (0: OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT, else DefaultExportTimeout)

	// MaxLinks caps the request links of a step (0: DefaultMaxLinks).
	MaxLinks int
	// LinkSteps is how many sampled steps LinkStep remembers (0:
	// DefaultLinkSteps): links of a step must still be there when its
	// spans are read, PollEvery plus a harvest later.
	LinkSteps int

	// Logf reports export failures (the first, then one in a minute at
	// most) and recoveries. Nil means log.Printf.
	Logf func(format string, args ...interface{})
}

// Stats are an exporter's totals since New. Every span read from the hub
// is Unsampled, Unplaced, or sent to the queue; every span put to the queue
// (step roots and TracerProvider spans too) ends up Exported, dropped
// (QueueFull, ExportFailed, Shutdown), or still Queued.
type Stats struct {
	Read      uint64 // spans read from the hub
	Missed    uint64 // spans the hub's recent ring overwrote before they were read
	Unsampled uint64 // spans of steps not sampled (or kernel spans, with NoKernelSpans)
	Unplaced  uint64 // sampled spans without a host start time, not sent

	Enqueued     uint64 // spans put on the queue
	QueueFull    uint64 // spans dropped: the queue was full
	Exported     uint64 // spans the collector accepted
	ExportFailed uint64 // spans dropped with a failed request, or rejected in a partial success
	Shutdown     uint64 // spans still queued when Close gave up
	Queued       uint64 // spans on the queue now

	Exports      uint64 // requests sent
	ExportErrors uint64 // requests that failed

	LinksDropped  uint64 // request links past MaxLinks
	LinkStepsLost uint64 // steps whose links LinkStep overwrote before their spans were read
	// RequestSpans counts the GPU time spans of finished requests put on
	// the queue (RequestSpanName), in Enqueued too.
	RequestSpans uint64
}

// Exporter exports a hub's spans over OTLP. Make one with New; Close it.
// Its methods are safe for concurrent use.
type Exporter struct {
	hub      *gpuspans.Hub
	exp      sdktrace.SpanExporter
	target   Target
	host     string // the target's host:port, for messages
	res      *resource.Resource
	scope    instrumentation.Scope
	every    uint64
	kernels  bool
	batch    int
	poll     time.Duration
	timeout  time.Duration
	logf     func(format string, args ...interface{})
	key      [4]uint64 // derives trace and span ids
	queue    chan sdktrace.ReadOnlySpan
	tp       *sdktrace.TracerProvider
	links    linkRing
	accepted acceptedLanes
	asm      assembler // owned by the poller
	closing  atomic.Bool
	stopPoll chan struct{}
	stopSend chan struct{}
	pollDone chan struct{}
	sendDone chan struct{}
	// stopConns closes the transport's connections for good: no goroutine
	// or socket is left behind a hung collector once Close returns.
	stopConns func()
	ctx       context.Context // ends the sender's requests at a hard stop
	cancel    context.CancelFunc
	once      sync.Once
	closeErr  error

	read, missed, unsampled, unplaced     atomic.Uint64
	enqueued, queueFull, exported, failed atomic.Uint64
	shutdown, exports, exportErrors       atomic.Uint64
	linksDropped, linkStepsLost           atomic.Uint64
	requestSpans                          atomic.Uint64
	lastFailLog                           atomic.Int64 // Unix ns of the last failure logged
	failing                               atomic.Bool
	lastErr                               atomic.Pointer[error] // the last failed send's
}

// New starts an exporter of h's spans: its goroutines run until Close, or
// until ctx is done (then without a last read and send). Errors name the
// offending option; nothing is started then.
func New(ctx context.Context, h *gpuspans.Hub, o Options) (*Exporter, error) {
	if h == nil {
		return nil, errors.New("otlp: New: nil hub")
	}
	if err := o.fill(); err != nil {
		return nil, err
	}
	c, err := o.resolve()
	if err != nil {
		return nil, err
	}
	var b [32]byte
	if _, err := crand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("otlp: New: reading random id key: %w", err)
	}
	exp, stopConns := o.SpanExporter, func() {}
	if exp == nil {
		var stop func()
		if exp, stop, err = newTransport(ctx, c); err != nil {
			return nil, err
		}
		if stop != nil {
			stopConns = stop
		}
	}
	h.KeepStartTimes() // spans without a start are not sent: have the first ones placed
	e := &Exporter{
		hub:       h,
		exp:       exp,
		stopConns: stopConns,
		target:    c.target,
		host:      c.host,
		res:       resource.NewWithAttributes(semconv.SchemaURL, c.resource...),
		scope:     instrumentation.Scope{Name: ScopeName},
		every:     uint64(o.SampleEvery),
		kernels:   !o.NoKernelSpans,
		batch:     o.BatchSpans,
		poll:      o.PollEvery,
		timeout:   c.timeout,
		logf:      o.Logf,
		queue:     make(chan sdktrace.ReadOnlySpan, o.QueueSpans),
		stopPoll:  make(chan struct{}),
		stopSend:  make(chan struct{}),
		pollDone:  make(chan struct{}),
		sendDone:  make(chan struct{}),
	}
	for i := range e.key {
		e.key[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	e.links.init(o.LinkSteps, o.MaxLinks, e.every)
	e.accepted.init(h)
	e.asm.init(e)
	e.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(e.res),
		sdktrace.WithSpanProcessor(processor{e}),
	)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go e.pollLoop()
	go e.sendLoop()
	go func() {
		// A done ctx stops everything at once, as a Close that has no time.
		select {
		case <-ctx.Done():
			expired, cancel := context.WithCancel(context.Background())
			cancel()
			_ = e.Close(expired)
		case <-e.sendDone:
		}
	}()
	return e, nil
}

// Check reports what New would refuse in o and in the environment it
// reads (an error naming the option or variable), starting nothing. A
// program checks its flags with it before it starts serving.
func (o Options) Check() error {
	if err := o.fill(); err != nil {
		return err
	}
	_, err := o.resolve()
	return err
}

// fill checks o's bounds and fills in their defaults; resolve does the
// rest, with the environment.
func (o *Options) fill() error {
	type bound struct {
		name     string
		v        *int
		def, max int
	}
	for _, b := range []bound{
		{"SampleEvery", &o.SampleEvery, DefaultSampleEvery, 1 << 30},
		{"QueueSpans", &o.QueueSpans, DefaultQueueSpans, MaxQueueSpans},
		{"BatchSpans", &o.BatchSpans, DefaultBatchSpans, MaxQueueSpans},
		{"MaxLinks", &o.MaxLinks, DefaultMaxLinks, MaxLinks},
		{"LinkSteps", &o.LinkSteps, DefaultLinkSteps, MaxLinkSteps},
	} {
		switch {
		case *b.v == 0:
			*b.v = b.def
		case *b.v < 0 || *b.v > b.max:
			return fmt.Errorf("otlp: Options.%s is %d, want 1..%d", b.name, *b.v, b.max)
		}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"PollEvery", &o.PollEvery, DefaultPollEvery}, {"ExportTimeout", &o.ExportTimeout, 0}} { // 0: resolve reads the environment
		switch {
		case *d.v == 0:
			*d.v = d.def
		case *d.v < time.Millisecond || *d.v > time.Hour:
			return fmt.Errorf("otlp: Options.%s is %v, want 1ms..1h", d.name, *d.v)
		}
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return nil
}

// CheckEndpoint reports what is wrong with an endpoint as Options.Endpoint
// takes it for a protocol (empty: ProtocolHTTP), naming it "endpoint": a
// flag's first check, before Options.Check reads the environment.
func CheckEndpoint(protocol, endpoint string) error {
	if endpoint == "" {
		return fmt.Errorf("%w: want http://host:port or https://host:port", ErrNoEndpoint)
	}
	_, err := parseEndpoint(endpoint, "endpoint", protocol == ProtocolGRPC)
	return err
}

// validPort reports whether p is a decimal TCP port, 1..65535.
func validPort(p string) bool {
	n, err := strconv.ParseUint(p, 10, 16)
	return err == nil && n > 0
}

// Target returns where the exporter sends, and which settings said so.
// With Options.SpanExporter it is the zero Target.
func (e *Exporter) Target() Target { return e.target }

// LastError returns the error of the last send that failed (nil when none
// has): with ErrProtocolMismatch when the collector speaks another
// protocol. The exporter logs failures too, at most once a minute.
func (e *Exporter) LastError() error {
	if p := e.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// TracerProvider returns a tracer provider whose spans go out with the GPU
// spans: same resource, queue and connection, counted in the same Stats.
// An engine makes its request spans with it (the demo does) when it has
// no tracing of its own. It is shut down by Close.
func (e *Exporter) TracerProvider() trace.TracerProvider { return e.tp }

// Sampled reports whether the spans of step are exported by the sampling,
// so that an engine can skip building links for the others. A kernel
// window's step is exported too (its GPU time), with links only if
// Sampled.
func (e *Exporter) Sampled(step uint64) bool { return step%e.every == 0 }

// LinkStep records that step (Hub.Step, read after BeginStep) serves the
// requests whose spans are links, so that the step's lane spans link to
// them. Calls for one step add up, to Options.MaxLinks links (the rest are
// counted); steps not sampled are ignored. It copies links and keeps
// nothing of the slice. Call it before the step's spans land: links of a
// step whose spans were read already are lost. It allocates nothing, and takes a lock that the exporter's goroutine holds
// only to copy one step's links.
func (e *Exporter) LinkStep(step uint64, links []trace.SpanContext) {
	if step%e.every != 0 || len(links) == 0 {
		return
	}
	dropped, lost := e.links.add(step, links)
	if dropped > 0 {
		e.linksDropped.Add(uint64(dropped))
	}
	if lost {
		e.linkStepsLost.Add(1)
	}
}

// Stats returns the exporter's totals.
func (e *Exporter) Stats() Stats {
	return Stats{
		Read:          e.read.Load(),
		Missed:        e.missed.Load(),
		Unsampled:     e.unsampled.Load(),
		Unplaced:      e.unplaced.Load(),
		Enqueued:      e.enqueued.Load(),
		QueueFull:     e.queueFull.Load(),
		Exported:      e.exported.Load(),
		ExportFailed:  e.failed.Load(),
		Shutdown:      e.shutdown.Load(),
		Queued:        uint64(len(e.queue)),
		Exports:       e.exports.Load(),
		ExportErrors:  e.exportErrors.Load(),
		LinksDropped:  e.linksDropped.Load(),
		LinkStepsLost: e.linkStepsLost.Load(),
		RequestSpans:  e.requestSpans.Load(),
	}
}

// QueueCapacity is the queue's bound, in spans.
func (e *Exporter) QueueCapacity() int { return cap(e.queue) }

// Close stops reading the hub, reads and queues what landed since the last
// read (every pending step, complete or not), sends what is queued until ctx
// is done, and shuts the transport down. Spans still queued when ctx ends
// are dropped and counted (Shutdown); a request under way is cancelled.
// Call Close after the engine's last harvest to export its last spans. It
// returns the transport's shutdown error (a ctx that is done is none);
// calling it again returns the same.
func (e *Exporter) Close(ctx context.Context) error {
	e.once.Do(func() {
		stop := context.AfterFunc(ctx, e.cancel)
		defer stop()
		// No new request spans; the provider's processor only enqueues, so
		// its shutdown cannot block.
		_ = e.tp.Shutdown(ctx)
		close(e.stopPoll)
		<-e.pollDone
		e.closing.Store(true)
		close(e.stopSend)
		<-e.sendDone
		sctx, cancel := context.WithTimeout(context.Background(), e.timeout)
		if ctx.Err() != nil {
			cancel()
			sctx, cancel = ctx, func() {}
		}
		e.closeErr = e.exp.Shutdown(sctx)
		if ctx.Err() != nil && errors.Is(e.closeErr, ctx.Err()) {
			// The caller gave no time: the transports then report its
			// context's error, though they stopped. What it cost is
			// counted (Shutdown); it is not a failure to stop.
			e.closeErr = nil
		}
		cancel()
		e.cancel()
		e.stopConns()
	})
	return e.closeErr
}

// enqueue puts s on the queue, or drops and counts it: it never waits.
func (e *Exporter) enqueue(s sdktrace.ReadOnlySpan) {
	if e.closing.Load() {
		e.shutdown.Add(1)
		return
	}
	select {
	case e.queue <- s:
		e.enqueued.Add(1)
	default:
		e.queueFull.Add(1)
	}
}

// pollLoop reads the hub every PollEvery until stopPoll, then once more.
func (e *Exporter) pollLoop() {
	defer close(e.pollDone)
	t := time.NewTicker(e.poll)
	defer t.Stop()
	for {
		select {
		case <-e.stopPoll:
			if e.ctx.Err() == nil {
				e.asm.poll(true)
			}
			return
		case <-e.ctx.Done():
			return
		case <-t.C:
			e.asm.poll(false)
		}
	}
}

// sendLoop sends the queue in batches until stopSend, then sends what is
// left unless the stop is hard.
func (e *Exporter) sendLoop() {
	defer close(e.sendDone)
	batch := make([]sdktrace.ReadOnlySpan, 0, e.batch)
	for {
		select {
		case s := <-e.queue:
			batch = e.fill(append(batch[:0], s))
			e.send(batch)
		case <-e.stopSend:
			for len(e.queue) > 0 && e.ctx.Err() == nil {
				batch = e.fill(batch[:0])
				e.send(batch)
			}
			e.shutdown.Add(uint64(len(e.queue)))
			for len(e.queue) > 0 {
				<-e.queue
			}
			return
		}
	}
}

// fill adds to batch what the queue holds, up to a full batch, without
// waiting.
func (e *Exporter) fill(batch []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	for len(batch) < e.batch {
		select {
		case s := <-e.queue:
			batch = append(batch, s)
		default:
			return batch
		}
	}
	return batch
}

func (e *Exporter) send(batch []sdktrace.ReadOnlySpan) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, e.timeout)
	err := e.exp.ExportSpans(ctx, batch)
	cancel()
	e.exports.Add(1)
	if rejected, ok := partialSuccess(err); ok {
		// The request succeeded; the collector kept all but rejected spans.
		rejected = min(rejected, uint64(len(batch)))
		e.exported.Add(uint64(len(batch)) - rejected)
		e.failed.Add(rejected)
		if rejected > 0 {
			now := time.Now().UnixNano()
			if now-e.lastFailLog.Load() > int64(time.Minute) {
				e.lastFailLog.Store(now)
				e.logf("gpuspans otlp: the collector rejected %d of %d spans (dropped): %v", rejected, len(batch), err)
			}
		}
	} else if err != nil {
		if e.target.Protocol != "" {
			err = e.diagnose(err)
		}
		e.lastErr.Store(&err)
		e.exportErrors.Add(1)
		e.failed.Add(uint64(len(batch)))
		now := time.Now().UnixNano()
		if !e.failing.Swap(true) || now-e.lastFailLog.Load() > int64(time.Minute) {
			e.lastFailLog.Store(now)
			e.logf("gpuspans otlp: export of %d spans failed (dropped; %d dropped so far): %v", len(batch), e.failed.Load(), err)
		}
	} else {
		e.exported.Add(uint64(len(batch)))
		e.accepted.add(batch)
		if e.failing.Swap(false) {
			e.logf("gpuspans otlp: exports succeed again")
		}
	}
	clear(batch) // let the spans go while the goroutine waits
}

// partialRE matches the error otlptracehttp returns for a partial success.
// Its type is internal to that module, so its message is what can be read;
// TestPartialSuccess pins it against the pinned module version.
var partialRE = regexp.MustCompile(`(?s)^OTLP partial success: .* \((\d+) spans rejected\)$`)

// partialSuccess reports whether err is a partial success and only that
// (every error it joins one, however wrapped), and how many spans the
// collector rejected.
func partialSuccess(err error) (rejected uint64, ok bool) {
	if err == nil {
		return 0, false
	}
	if j, isJoin := err.(interface{ Unwrap() []error }); isJoin {
		errs := j.Unwrap()
		for _, e := range errs {
			n, ok := partialSuccess(e)
			if !ok {
				return 0, false
			}
			rejected += n
		}
		return rejected, len(errs) > 0
	}
	if m := partialRE.FindStringSubmatch(err.Error()); m != nil {
		n, perr := strconv.ParseUint(m[1], 10, 64)
		return n, perr == nil
	}
	if u := errors.Unwrap(err); u != nil {
		return partialSuccess(u)
	}
	return 0, false
}

// processor feeds the tracer provider's ended spans to the queue.
type processor struct{ e *Exporter }

func (p processor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (p processor) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		p.e.enqueue(s)
	}
}
func (p processor) Shutdown(context.Context) error   { return nil }
func (p processor) ForceFlush(context.Context) error { return nil }

package otlp

import (
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Attribute keys without a semantic convention.
const (
	AttrDevice   = attribute.Key("gpuspans.device")
	AttrPCIBusID = attribute.Key("gpuspans.pci_bus_id")
	AttrDriver   = attribute.Key("gpuspans.driver") // the driver's CUDA version, "13.0"; hw.driver_version would be its own, "580.82.07"
	AttrStream   = attribute.Key("gpuspans.stream")
	AttrKind     = attribute.Key("gpuspans.kind")
	AttrLane     = attribute.Key("gpuspans.lane")
	AttrKernel   = attribute.Key("gpuspans.kernel")
	AttrStep     = attribute.Key("gpuspans.step")
	AttrGraph    = attribute.Key("gpuspans.graph") // a traced kernel's CUDA graph, when replayed from one
	// AttrBusy and AttrIdle split a kernel window's lane span into the
	// time some kernel of the device ran and the rest, in ns
	// (gpuspans.Span.GPUTimed); other spans have neither.
	AttrBusy = attribute.Key("gpuspans.gpu.busy_ns")
	AttrIdle = attribute.Key("gpuspans.gpu.idle_ns")
	// AttrServed is the lane's time as the engine serves it, outside
	// windows (gpuspans.Span.ServedNs), AttrWindowCost the rest of the
	// span, what the window added; the AttrIdle* split the served idle,
	// AttrServed - AttrBusy, by cause (gpuspans.IdleCauses). A span of an
	// unsettled window has none of them.
	AttrServed     = attribute.Key("gpuspans.gpu.served_ns")
	AttrWindowCost = attribute.Key("gpuspans.gpu.window_cost_ns")
	AttrIdleHost   = attribute.Key("gpuspans.gpu.idle.host_ns")
	AttrIdleLaunch = attribute.Key("gpuspans.gpu.idle.launch_ns")
	AttrIdleCopy   = attribute.Key("gpuspans.gpu.idle.copy_ns")
	AttrIdleWait   = attribute.Key("gpuspans.gpu.idle.wait_ns")
	AttrIdleOther  = attribute.Key("gpuspans.gpu.idle.other_ns")
	// AttrKernelFullName is a traced kernel's whole demangled name, where
	// its label (AttrKernel) is shorter (gpuspans.Hub.KernelFullName).
	AttrKernelFullName = attribute.Key("gpuspans.kernel.full_name")
	StepSpanName       = "gpu step"
	identityRetry      = 10 * time.Second // how often an unknown device identity is asked for again
)

// A step is sent once a step two later has spans, or after this many polls:
// its spans land over a harvest or two, and devices finish at their pace.
const (
	stepsLate = 2
	pollsLate = 2
)

// assembler turns the hub's landed spans into OTel spans: it samples them,
// holds each sampled step's until the step is complete, then builds the
// step's trace. Owned by the poller goroutine.
type assembler struct {
	e        *Exporter
	last     uint64 // Seq of the last span read
	buf      []gpuspans.Span
	polls    uint64
	maxStep  uint64
	pending  map[uint64]*pendingStep
	rootSent map[uint64]bool // steps whose root span was sent: a late span joins it
	windowed map[uint64]bool // kernel window steps seen (a measured lane span): kept whatever the sampling
	devs     map[int]deviceAttrs
	snap     gpuspans.Snapshot
	askedAt  time.Time // the last Snapshot taken for identities
	reqs     []gpuspans.RequestRecord
	reqLast  uint64 // Seq of the last request record read
	laneKeys map[string]attribute.Key
}

type pendingStep struct {
	firstPoll uint64
	spans     []gpuspans.Span
}

type deviceAttrs struct {
	attrs []attribute.KeyValue
	known bool // the identity was known: never ask again
}

func (a *assembler) init(e *Exporter) {
	a.e = e
	a.pending = make(map[uint64]*pendingStep)
	a.rootSent = make(map[uint64]bool)
	a.windowed = make(map[uint64]bool)
	a.devs = make(map[int]deviceAttrs)
}

// poll reads the spans landed since the last poll, and sends the steps that
// are complete, or every pending step when final.
func (a *assembler) poll(final bool) {
	e := a.e
	a.polls++
	a.buf = e.hub.RecentSpans(a.last, a.buf[:0])
	for i := range a.buf {
		s := &a.buf[i]
		if s.Seq > a.last+1 {
			e.missed.Add(s.Seq - a.last - 1)
		}
		a.last = s.Seq
		e.read.Add(1)
		if s.Step > a.maxStep {
			a.maxStep = s.Step
		}
		// A kernel window's step is always kept: its lane spans carry GPU
		// time, windows are rare, and its kernels land after its lanes.
		if s.GPUTimed {
			a.windowed[s.Step] = true
		}
		if !(e.Sampled(s.Step) || a.windowed[s.Step]) || (s.Kind == gpuspans.KindKernel && !e.kernels) ||
			(s.Kind != gpuspans.KindLane && s.Kind != gpuspans.KindKernel) {
			e.unsampled.Add(1)
			continue
		}
		if s.StartNs == 0 {
			e.unplaced.Add(1)
			continue
		}
		p := a.pending[s.Step]
		if p == nil {
			p = &pendingStep{firstPoll: a.polls}
			a.pending[s.Step] = p
		}
		p.spans = append(p.spans, *s)
	}
	a.pollRequests()
	for step, p := range a.pending {
		if final || step+stepsLate <= a.maxStep || a.polls-p.firstPoll >= pollsLate {
			a.sendStep(step, p.spans)
			delete(a.pending, step)
		}
	}
	// Forget roots long sent: a span landing this late is not expected.
	if len(a.rootSent) > 4096 {
		for step := range a.rootSent {
			if step+1<<16 < a.maxStep {
				delete(a.rootSent, step)
			}
		}
	}
	if len(a.windowed) > 256 {
		for step := range a.windowed {
			if step+1<<16 < a.maxStep {
				delete(a.windowed, step)
			}
		}
	}
}

// sendStep builds a step's spans and puts them on the queue: the root (but
// for a late part of a step sent already), lanes under it with the step's
// links, kernels under the lane of their device that holds them.
func (a *assembler) sendStep(step uint64, spans []gpuspans.Span) {
	e := a.e
	root := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    e.traceID(step),
		SpanID:     e.spanID(1, step),
		TraceFlags: trace.FlagsSampled,
	})
	stepAttr := AttrStep.Int64(int64(step))
	if !a.rootSent[step] {
		a.rootSent[step] = true
		first, last := spans[0].StartNs, spans[0].StartNs
		for i := range spans {
			first = min(first, spans[i].StartNs)
			last = max(last, spans[i].StartNs+max(spans[i].DurationNs, 0))
		}
		e.enqueue(e.finished(gpuSpan{
			name: StepSpanName, sc: root, start: first, end: last,
			attrs: []attribute.KeyValue{stepAttr},
		}))
	}

	links, excess := e.links.take(step)
	type lane struct {
		device     int
		start, end int64
		sc         trace.SpanContext
	}
	var lanes []lane
	fullNames := map[string]string{}
	for pass := 0; pass < 2; pass++ { // lanes first, so kernels find their parent
		for i := range spans {
			s := &spans[i]
			if (s.Kind == gpuspans.KindLane) != (pass == 0) {
				continue
			}
			dur := max(s.DurationNs, 0)
			sc := trace.NewSpanContext(trace.SpanContextConfig{
				TraceID:    root.TraceID(),
				SpanID:     e.spanID(2, s.Seq),
				TraceFlags: trace.FlagsSampled,
			})
			attrs := append([]attribute.KeyValue(nil), a.device(s.Device)...)
			attrs = append(attrs, AttrStream.String("0x"+strconv.FormatUint(uint64(s.Stream), 16)), AttrKind.String(s.Kind.String()), stepAttr)
			if s.Graph != 0 {
				attrs = append(attrs, AttrGraph.Int64(int64(s.Graph)))
			}
			g := gpuSpan{sc: sc, parent: root, start: s.StartNs, end: s.StartNs + dur}
			if s.Kind == gpuspans.KindLane {
				g.name = "lane " + s.Name
				g.attrs = append(attrs, AttrLane.String(s.Name))
				if s.GPUTimed {
					g.attrs = append(g.attrs, AttrBusy.Int64(s.BusyNs), AttrIdle.Int64(s.IdleNs))
					if s.ServedNs > 0 {
						c := &s.Causes
						g.attrs = append(g.attrs, AttrServed.Int64(s.ServedNs), AttrWindowCost.Int64(s.DurationNs-s.ServedNs),
							AttrIdleHost.Int64(int64(c.Host)), AttrIdleLaunch.Int64(int64(c.Launch)), AttrIdleCopy.Int64(int64(c.Copy)),
							AttrIdleWait.Int64(int64(c.Wait)), AttrIdleOther.Int64(int64(c.Other)))
					}
				}
				g.links, g.droppedLinks = links, excess
				lanes = append(lanes, lane{s.Device, s.StartNs, s.StartNs + dur, sc})
			} else {
				g.name = "kernel " + s.Name
				g.attrs = append(attrs, AttrKernel.String(s.Name))
				full, ok := fullNames[s.Name]
				if !ok { // once a name a step: the hub's lock, briefly
					full = e.hub.KernelFullName(s.Name)
					fullNames[s.Name] = full
				}
				if full != "" {
					g.attrs = append(g.attrs, AttrKernelFullName.String(full))
				}
				for _, l := range lanes {
					if l.device == s.Device && l.start <= s.StartNs && s.StartNs+dur <= l.end {
						g.parent = l.sc
						break
					}
				}
			}
			e.enqueue(e.finished(g))
		}
	}
}

// gpuSpan is a span that ended on the GPU: times in Unix ns, ids chosen
// by the exporter.
type gpuSpan struct {
	name         string
	sc, parent   trace.SpanContext
	start, end   int64
	attrs        []attribute.KeyValue
	links        []sdktrace.Link
	droppedLinks int
}

// finished returns g as the SDK's exporters take a span.
//
// It is the package's one use of tracetest, and on purpose: the OTLP
// exporters accept only sdktrace.ReadOnlySpan, an interface sealed with an
// unexported method, so the SDK itself must build the value. A Tracer
// cannot: these spans ended on the GPU before the exporter saw them, with
// ids, parents and times of our choosing. tracetest.SpanStub.Snapshot is
// the SDK's public constructor of such a span (a plain conversion with no
// test machinery behind it, stable since the SDK's 1.0).
func (e *Exporter) finished(g gpuSpan) sdktrace.ReadOnlySpan {
	return tracetest.SpanStub{
		Name:                 g.name,
		SpanContext:          g.sc,
		Parent:               g.parent,
		SpanKind:             trace.SpanKindInternal,
		StartTime:            time.Unix(0, g.start),
		EndTime:              time.Unix(0, g.end),
		Attributes:           g.attrs,
		Links:                g.links,
		DroppedLinks:         g.droppedLinks,
		Resource:             e.res,
		InstrumentationScope: e.scope,
	}.Snapshot()
}

// device returns the attributes naming device, asking the hub for its
// identity when it is not known yet (at most every identityRetry).
func (a *assembler) device(device int) []attribute.KeyValue {
	d, ok := a.devs[device]
	if ok && (d.known || time.Since(a.askedAt) < identityRetry) {
		return d.attrs
	}
	a.askedAt = time.Now()
	a.e.hub.SnapshotInto(&a.snap)
	d = deviceAttrs{attrs: []attribute.KeyValue{semconv.HwTypeGpu, AttrDevice.Int(device)}}
	for _, st := range a.snap.Devices {
		if st.Device != device {
			continue
		}
		id := st.Identity
		if id.UUID != "" {
			d.attrs = append(d.attrs, semconv.HwID(id.UUID))
			d.known = true
		}
		if id.Name != "" {
			d.attrs = append(d.attrs, semconv.HwModel(id.Name))
		}
		if id.PCIBusID != "" {
			d.attrs = append(d.attrs, AttrPCIBusID.String(id.PCIBusID))
		}
		if id.Driver != "" {
			d.attrs = append(d.attrs, AttrDriver.String(id.Driver))
		}
		break
	}
	a.devs[device] = d
	return d.attrs
}

// traceID is step's trace id: a hash of the step under the exporter's key,
// so that every span of the step finds it with no state.
func (e *Exporter) traceID(step uint64) trace.TraceID {
	var id trace.TraceID
	hi, lo := mix(e.key[0]^step), mix(e.key[1]+step)
	if hi|lo == 0 {
		lo = 1
	}
	for i := 0; i < 8; i++ {
		id[i], id[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
	}
	return id
}

// spanID is the span id of a step's root (domain 1, n the step), of a
// landed span (domain 2, n its Seq) or of a request's GPU time (domain 3,
// n its record's Seq).
func (e *Exporter) spanID(domain int, n uint64) trace.SpanID {
	var id trace.SpanID
	v := mix(e.key[(1+domain)%len(e.key)] ^ n)
	if v == 0 {
		v = 1
	}
	for i := 0; i < 8; i++ {
		id[i] = byte(v >> (56 - 8*i))
	}
	return id
}

// mix is splitmix64's finaliser: a bijection, so distinct inputs under one
// key give distinct ids.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// linkRing holds the request links of the last sampled steps, in fixed
// slots allocated at New, so that LinkStep copies and never allocates.
type linkRing struct {
	mu    sync.Mutex
	every uint64
	slots []linkSlot
}

type linkSlot struct {
	step   uint64
	used   bool
	read   bool // take found it
	n      int
	excess int
	sc     []trace.SpanContext // len MaxLinks
}

func (r *linkRing) init(steps, maxLinks int, every uint64) {
	r.every = every
	r.slots = make([]linkSlot, steps)
	backing := make([]trace.SpanContext, steps*maxLinks)
	for i := range r.slots {
		r.slots[i].sc = backing[i*maxLinks : (i+1)*maxLinks : (i+1)*maxLinks]
	}
}

// add appends links to step's slot, taking the slot over from an older
// step. It returns the links past the cap, and whether it overwrote links
// never read.
func (r *linkRing) add(step uint64, links []trace.SpanContext) (dropped int, lost bool) {
	r.mu.Lock()
	s := &r.slots[(step/r.every)%uint64(len(r.slots))]
	if !s.used || s.step != step {
		lost = s.used && !s.read && s.n > 0
		s.step, s.used, s.read, s.n, s.excess = step, true, false, 0, 0
	}
	n := copy(s.sc[s.n:], links)
	s.n += n
	dropped = len(links) - n
	s.excess += dropped
	r.mu.Unlock()
	return dropped, lost
}

// take returns step's links as OTel links, and how many went past the cap.
func (r *linkRing) take(step uint64) ([]sdktrace.Link, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.slots[(step/r.every)%uint64(len(r.slots))]
	if !s.used || s.step != step || s.n == 0 {
		return nil, 0
	}
	s.read = true
	out := make([]sdktrace.Link, s.n)
	for i := range out {
		out[i].SpanContext = s.sc[i]
	}
	return out, s.excess
}

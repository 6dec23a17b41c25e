package otlp

import (
	"strings"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// The exporter as a source of Prometheus exemplars: it remembers, per
// device and lane, the latest lane span a collector accepted, so that a
// lane histogram on /metrics links to a trace the tracing backend has.

var _ prom.Exemplars = (*Exporter)(nil)

// LaneExemplar returns the latest span (by its end on the host clock) of
// lane on device that the collector accepted (its request succeeded), with
// its trace and span ids: set the exporter as prom.Options.Exemplars so
// that lane histograms carry them. Safe for concurrent use; allocates nothing.
func (e *Exporter) LaneExemplar(device int, lane string) (prom.Exemplar, bool) {
	return e.accepted.get(device, lane)
}

// laneExemplar is the latest accepted span of one lane on one device.
type laneExemplar struct {
	set     bool
	dur     time.Duration
	endNs   int64 // host clock, Unix ns
	traceID trace.TraceID
	spanID  trace.SpanID
}

// acceptedLanes holds the latest accepted lane span per device and lane: at most
// gpuspans.MaxDevices times the hub's lanes, a device's made at its first.
type acceptedLanes struct {
	hub   *gpuspans.Hub
	lanes int
	mu    sync.Mutex
	dev   [gpuspans.MaxDevices][]laneExemplar
}

func (x *acceptedLanes) init(h *gpuspans.Hub) {
	x.hub = h
	x.lanes = len(h.Lanes())
}

// add remembers the lane spans of a batch the collector accepted, but for
// those older than one it has: steps pending at once go out in any order.
// The sender goroutine calls it; it reads the attributes sendStep wrote.
func (x *acceptedLanes) add(batch []sdktrace.ReadOnlySpan) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, s := range batch {
		if s.InstrumentationScope().Name != ScopeName || !strings.HasPrefix(s.Name(), "lane ") {
			continue // a step root, a kernel, or the engine's own span
		}
		dev, lane, isLane := -1, -1, false
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case AttrDevice:
				dev = int(kv.Value.AsInt64())
			case AttrLane:
				if i, ok := x.hub.LaneIndex(kv.Value.AsString()); ok {
					lane = i
				}
			case AttrKind:
				isLane = kv.Value.AsString() == gpuspans.KindLane.String()
			}
		}
		if !isLane || dev < 0 || dev >= len(x.dev) || lane < 0 {
			continue
		}
		if x.dev[dev] == nil {
			x.dev[dev] = make([]laneExemplar, x.lanes)
		}
		end := s.EndTime().UnixNano()
		if old := &x.dev[dev][lane]; old.set && old.endNs > end {
			continue
		}
		sc := s.SpanContext()
		x.dev[dev][lane] = laneExemplar{
			set:     true,
			dur:     s.EndTime().Sub(s.StartTime()),
			endNs:   end,
			traceID: sc.TraceID(),
			spanID:  sc.SpanID(),
		}
	}
}

func (x *acceptedLanes) get(device int, lane string) (prom.Exemplar, bool) {
	i, ok := x.hub.LaneIndex(lane)
	if !ok || device < 0 || device >= len(x.dev) {
		return prom.Exemplar{}, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.dev[device] == nil || !x.dev[device][i].set {
		return prom.Exemplar{}, false
	}
	l := &x.dev[device][i]
	return prom.Exemplar{Duration: l.dur, TraceID: l.traceID, SpanID: l.spanID, Time: time.Unix(0, l.endNs)}, true
}

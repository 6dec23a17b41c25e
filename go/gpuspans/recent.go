package gpuspans

import (
	"fmt"

	"github.com/gpuspans/gpuspans/go/backend"
)

// SpanKind says what a span timed.
type SpanKind uint8

// Span kinds.
const (
	KindLane   SpanKind = iota + 1 // the work of one serve lane in one step
	KindKernel                     // one eager kernel launch
)

// String names the kind as a label value: "lane", "kernel".
func (k SpanKind) String() string {
	switch k {
	case KindLane:
		return "lane"
	case KindKernel:
		return "kernel"
	}
	return fmt.Sprintf("SpanKind(%d)", uint8(k))
}

// Span is one landed span, as RecentSpans returns it: a plain value owned
// by the caller.
type Span struct {
	Seq        uint64 // landing order on the hub, from 1
	Kind       SpanKind
	Name       string // lane name, kernel name, or OtherKernel
	Device     int
	Stream     backend.Stream
	Step       uint64 // the step counter when the span began
	StartNs    int64  // begin on the host clock (Unix ns); 0 when the backend could not place it
	DurationNs int64
	// Graph is the id of the CUDA graph a traced kernel was replayed from
	// (the tracer's); 0 for other spans. Stream is the tracer's stream id
	// for traced kernels (docs/design.md, kernel spans).
	Graph uint32
	// GPUTimed: a lane span of a kernel window's step, measured against
	// the window's kernels (Hub.GPUTime): BusyNs of its DurationNs some
	// kernel of the device ran, IdleNs none did. Such spans reach the
	// recent ring once their window is analysed, a harvest or two after
	// its close, or up to GPUTimeServedSpans steps later while the lane's
	// spans after the window land.
	GPUTimed       bool
	BusyNs, IdleNs int64
	// ServedNs is the lane's time per span outside windows around this
	// one's (LaneGPUTime, served), within BusyNs..DurationNs: the span
	// as the engine serves it, DurationNs - ServedNs the window's cost;
	// 0 when the window is unsettled. Causes splits ServedNs - BusyNs.
	ServedNs int64
	Causes   IdleCauses
}

// RecentSpans appends to dst, oldest first, the spans still in the recent
// ring whose Seq is above afterSeq, and returns the extended slice. An
// exporter polls with the last Seq it saw; spans overwritten before it asked
// are counted in Counters.RecentOverwritten. With dst's capacity reused the
// call allocates nothing. A call also keeps harvests placing spans on the
// host clock for StartTimesIdle (see StartTimes): spans landed
// before a reader's first call may carry StartNs 0. Takes the harvest lock
// briefly.
func (h *Hub) RecentSpans(afterSeq uint64, dst []Span) []Span {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readAt = h.now()
	if afterSeq >= h.recentSeq {
		return dst
	}
	n := uint64(len(h.recent))
	first := afterSeq + 1
	if h.recentSeq >= n && first <= h.recentSeq-n {
		first = h.recentSeq - n + 1
	}
	for seq := first; seq <= h.recentSeq; seq++ {
		dst = append(dst, h.recent[seq%n])
	}
	if h.recentSeq > h.recentRead {
		h.recentRead = h.recentSeq
	}
	return dst
}

// KeepStartTimes makes harvests place spans on the host clock for the next
// StartTimesIdle, as a RecentSpans call does (see StartTimes). A
// reader of start times calls it when it attaches, so that the spans it
// will read first are placed too. Takes the harvest lock briefly.
func (h *Hub) KeepStartTimes() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readAt = h.now()
}

// land records a span harvested Done: its aggregate and the recent ring.
// Caller holds the harvest lock.
func (h *Hub) land(device int, sl *slot, it *backend.HarvestItem) {
	d := h.devs[device]
	if SpanKind(sl.Kind) == KindLane {
		a := &d.lanes[sl.Key]
		h.observeSpan(device, a, seriesKey(device, false, int(sl.Key)), it.DurationNs)
		s := Span{Kind: KindLane, Name: a.Name, Device: device, Stream: backend.Stream(sl.Stream), Step: sl.Step, StartNs: it.StartNs, DurationNs: it.DurationNs}
		seq := h.tl.windowOfStep(sl.Step)
		h.landLane(device, sl.Key, &s, seq != 0)
		if seq == 0 {
			h.landOutside(device, sl.Key, sl.Step, it.DurationNs)
			h.pushRecent(&s)
		} else if !h.holdLane(seq, device, sl.Key, &s) {
			h.pushRecent(&s)
		}
		return
	}
	idx := h.kernelIndex(sl.Key)
	h.landSpan(device, &d.kernels[idx], seriesKey(device, true, idx), SpanKind(sl.Kind), backend.Stream(sl.Stream), sl.Step, it.StartNs, it.DurationNs, 0)
}

// landSpan adds a span to its aggregate a, to the open recent window as
// the series of key series (seriesKey) and to the recent ring. Caller
// holds the harvest lock.
func (h *Hub) landSpan(device int, a *Aggregate, series uint32, kind SpanKind, stream backend.Stream, step uint64, startNs, durNs int64, graph uint32) {
	h.observeSpan(device, a, series, durNs)
	s := Span{Kind: kind, Name: a.Name, Device: device, Stream: stream, Step: step, StartNs: startNs, DurationNs: durNs, Graph: graph}
	h.pushRecent(&s)
}

// observeSpan counts a landed span in its aggregate and the open recent
// window. Caller holds the harvest lock.
func (h *Hub) observeSpan(device int, a *Aggregate, series uint32, durNs int64) {
	h.win.add(series, a.observe(durNs))
	h.devc[device].landed++
}

// pushRecent puts s in the recent ring, numbering it. Caller holds the
// harvest lock.
func (h *Hub) pushRecent(s *Span) {
	if h.recent == nil {
		h.recent = make([]Span, h.recentCap)
	}
	h.recentSeq++
	n := uint64(len(h.recent))
	e := &h.recent[h.recentSeq%n]
	if e.Seq > h.recentRead {
		h.recentOverwritten++
	}
	*e = *s
	e.Seq = h.recentSeq
}

// kernelMemo remembers handles' aggregate indexes, direct-mapped: a
// landing looks its kernel up there first, as a map lookup would cost a
// third of the landing. Engines launch a few hundred kernels at most, so
// nearly every lookup hits. An entry holds index+1 (0: empty).
type kernelMemo [kernelMemoSize]struct {
	handle uint64
	idx    int32
}

const kernelMemoSize = 1 << 10

// kernelIndex returns the index into a device's kernel aggregates of the
// spans of handle: 0, OtherKernel, for a handle never registered. Caller
// holds the harvest lock.
func (h *Hub) kernelIndex(handle uint64) int {
	m := h.kernelMemo
	if m == nil {
		m = new(kernelMemo)
		h.kernelMemo = m
	}
	// Fibonacci hashing: handles are pointers, aligned, so their low bits
	// are poor on their own.
	e := &m[(handle*0x9E3779B97F4A7C15)>>(64-10)]
	if e.idx != 0 && e.handle == handle {
		return int(e.idx - 1)
	}
	idx := h.kernelIdx[handle] // a missing handle is index 0, OtherKernel
	e.handle, e.idx = handle, int32(idx+1)
	return idx
}

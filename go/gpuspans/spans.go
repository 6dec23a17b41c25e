package gpuspans

import (
	"sync/atomic"

	"github.com/gpuspans/gpuspans/go/backend"
)

// The span entry points below are each split in two: an exported function
// small enough for the compiler to inline, holding only the check that
// returns when there is nothing to do, and an unexported rest. Inlined, the
// disabled path costs the caller what each doc below says: one atomic load
// and a branch, or for KernelEnd a nil test.

// LaneBegin opens lane's span on every installed device's stream, at
// LevelKernel. It is meant to bracket the work the scheduler queues for the
// lane in one step, with LaneEnd. An index outside Lanes() is ignored and
// counted (UnknownLane). A lane already open on a device stays open with its
// first begin, and the second begin is ignored and counted
// (LaneAlreadyOpen): reopening would lose the span that is running. Never
// blocks or allocates. Below LevelKernel it loads the state word and
// returns.
func (h *Hub) LaneBegin(lane int) {
	if Level(atomic.LoadUint32(&h.state)&levelMask) == LevelKernel {
		h.laneBegin(lane)
	}
}

func (h *Hub) laneBegin(lane int) {
	if uint(lane) >= uint(len(h.lanes)) {
		h.unknownLane.Add(1)
		return
	}
	for _, r := range h.set.Load().current {
		if r.status.Load() == recOpen {
			r.laneBegin(lane)
		}
	}
}

// LaneEnd ends lane's span on every installed device where one is open. A
// lane with no open span (its begin was dropped, made before the level rose,
// reclaimed as leaked after LeakSteps steps, or given an unknown index) is
// left alone. It acts at any level, so a span
// begun at Kernel ends with its step even if the level dropped meanwhile,
// instead of staying open until the level comes back. With no lane span open
// anywhere (at any level) it loads the count of open lane spans and
// returns. Never blocks or allocates.
func (h *Hub) LaneEnd(lane int) {
	if h.openLanes.Load() != 0 {
		h.laneEnd(lane)
	}
}

func (h *Hub) laneEnd(lane int) {
	if uint(lane) >= uint(len(h.lanes)) {
		return
	}
	for _, r := range h.set.Load().current {
		r.laneEnd(lane)
	}
}

// NextLane ends lane from's span and begins lane to's at the same event. On
// each device where from is open that is one record where LaneEnd and
// LaneBegin make two, so lanes that follow each other in a step (prefill,
// decode, sample) cost one event per boundary. to's span then runs from the
// end of from's work on the stream: idle time between the two, if the GPU
// caught up with the host there, counts in to. Where from is not open, to
// begins as with LaneBegin. Below LevelKernel it only ends from. A negative
// from or to names no lane: NextLane(-1, to) begins to, NextLane(from, -1)
// ends from. Otherwise LaneBegin's and LaneEnd's rules and counts apply.
// Never blocks or allocates. With the level below Kernel and no pool open it
// loads the state word and the pool count and returns.
func (h *Hub) NextLane(from, to int) {
	if atomic.LoadUint32(&h.state)&levelMask == uint32(LevelKernel) || atomic.LoadInt32(&h.pools) != 0 {
		h.nextLane(from, to)
	}
}

func (h *Hub) nextLane(from, to int) {
	begin := to >= 0 && Level(atomic.LoadUint32(&h.state)&levelMask) == LevelKernel
	if begin && to >= len(h.lanes) {
		h.unknownLane.Add(1)
		begin = false
	}
	if uint(from) >= uint(len(h.lanes)) || h.openLanes.Load() == 0 {
		if begin {
			h.laneBegin(to)
		}
		return
	}
	for _, r := range h.set.Load().current {
		r.laneNext(from, to, begin && r.status.Load() == recOpen)
	}
}

// NextStep ends lane last's span, begins the next step as BeginStep does,
// and begins lane first's span at the event that ended last's (see
// NextLane): one call for an engine whose last lane of a step runs into the
// first lane of the next. A negative last or first names no lane. With
// nothing to do (BeginStep's test) it loads the state word and the pool
// count and returns.
func (h *Hub) NextStep(last, first int) {
	if atomic.LoadUint32(&h.state)|uint32(atomic.LoadInt32(&h.pools)) != 0 {
		h.nextStep(last, first)
	}
}

func (h *Hub) nextStep(last, first int) {
	h.beginStep()
	h.NextLane(last, first)
}

// KernelSpan is a kernel span opened by KernelBegin, to hand to KernelEnd.
// The zero KernelSpan is what KernelBegin returns when it opens nothing;
// ending it does nothing. A KernelSpan is a small value: copy it freely, end
// it once.
type KernelSpan struct {
	r   *recorder
	gen uint64 // the span's ring position + 1
}

// KernelBegin opens a span around the launch of kernel (a handle named with
// RegisterKernel, or any value, then aggregated as OtherKernel) on stream, on
// the lowest installed device, when this step is armed for kernel spans.
// Call it just before the launch and KernelEnd just after. It opens nothing
// on a stream being captured into a graph (counted in
// Dropped[DropCapturing]): an event recorded into a capture would break the
// graph. Never blocks or allocates. On a step not armed (always so below
// LevelKernel) it loads the state word and returns. Every non-zero
// KernelSpan must be ended: an unended one holds its slot (and a retired
// recorder's pool) until it is reclaimed as leaked, LeakSteps steps later.
func (h *Hub) KernelBegin(kernel uint64, stream backend.Stream) KernelSpan {
	if atomic.LoadUint32(&h.state)&armedBit == 0 {
		return KernelSpan{}
	}
	return h.kernelBegin(kernel, stream)
}

func (h *Hub) kernelBegin(kernel uint64, stream backend.Stream) KernelSpan {
	cur := h.set.Load().current
	if len(cur) == 0 {
		return KernelSpan{}
	}
	return cur[0].kernelBegin(kernel, stream)
}

// KernelEnd closes a span KernelBegin opened on this hub. A span opened
// before a replacing Install still ends and lands: its retired recorder keeps
// its pool open for it. A span ended already, reclaimed as leaked, or opened
// by another hub, does nothing and is counted (BadEnd); the zero KernelSpan does nothing and is
// not counted, since ending it is the normal pattern on unarmed steps. It
// acts at any level: a span begun at Kernel ends even if the level dropped.
// Never blocks or allocates. For the zero KernelSpan it tests its argument
// and returns, loading nothing.
func (h *Hub) KernelEnd(s KernelSpan) {
	if s.r != nil {
		h.kernelEnd(s)
	}
}

func (h *Hub) kernelEnd(s KernelSpan) {
	if s.r.hub != h || !s.r.end(s.gen-1) {
		h.badEnd.Add(1)
	}
}

// DeviceSpans opens kernel spans on one device, for processes that drive
// several GPUs. Get one from Hub.Device (like a nil *Hub, the zero
// DeviceSpans is not usable); it is a small value, safe to copy.
type DeviceSpans struct {
	h      *Hub
	device int
}

// Device returns the kernel span opener for device. A device outside
// 0..MaxDevices-1, or with nothing installed, opens no spans.
func (h *Hub) Device(device int) DeviceSpans { return DeviceSpans{h: h, device: device} }

// KernelBegin is Hub.KernelBegin on d's device; end the span with
// Hub.KernelEnd. Disabled, it costs what Hub.KernelBegin's check does.
func (d DeviceSpans) KernelBegin(kernel uint64, stream backend.Stream) KernelSpan {
	if atomic.LoadUint32(&d.h.state)&armedBit == 0 {
		return KernelSpan{}
	}
	return d.kernelBegin(kernel, stream)
}

func (d DeviceSpans) kernelBegin(kernel uint64, stream backend.Stream) KernelSpan {
	if uint(d.device) >= MaxDevices {
		return KernelSpan{}
	}
	r := d.h.set.Load().byDevice[d.device]
	if r == nil {
		return KernelSpan{}
	}
	return r.kernelBegin(kernel, stream)
}

// kernelBegin opens a kernel span on the recorder, if it is open.
func (r *recorder) kernelBegin(kernel uint64, stream backend.Stream) KernelSpan {
	// With the tracer on, every kernel is seen already: a pair would
	// double-count this one.
	if r.status.Load() != recOpen || r.hub.kw.active.Load() {
		return KernelSpan{}
	}
	pos, ok := r.begin(KindKernel, kernel, stream)
	if !ok {
		return KernelSpan{}
	}
	return KernelSpan{r: r, gen: pos + 1}
}

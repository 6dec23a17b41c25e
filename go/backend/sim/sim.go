// Package sim is a simulated GPU, so that everything above the backend runs
// and is tested without one. Each stream is a queue: work launched on it
// starts when the stream is free and runs for the given duration on the
// host clock. A pool's event recorded on a stream takes the time the stream
// will reach it (now, or when the queued work ends), and counts as complete
// once the clock passes that time. Streams being captured run nothing and
// refuse records, as the CUDA core does. NopPool is the degenerate device:
// no work, every span done at once, for measuring the hub's own cost.
//
// A GPU and its pools are safe for concurrent use.
package sim

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// Options configures a GPU.
type Options struct {
	Device int              // the device ordinal its pools report
	Now    func() time.Time // the host clock; nil means time.Now (see Clock for tests)
	// EventOffset models a real GPU's event offset: every span reads this
	// much longer than the work between its events, and pools report it as
	// measured (backend.Calibrated), as the CUDA core does. 0: none.
	EventOffset time.Duration
	// Tracer, when set, records what the GPU runs while it collects: the
	// kernels it launches (LaunchKernel and LaunchGraph; Launch records
	// them without a name) with their launch calls, and its copies (Copy).
	Tracer *Tracer
}

// GPU is one simulated device.
type GPU struct {
	device int
	now    func() time.Time
	offset int64 // Options.EventOffset, ns
	tracer *Tracer

	mu      sync.Mutex
	streams map[backend.Stream]*stream
	last    backend.Stream
}

type stream struct {
	busyUntil int64 // Unix ns when the queued work ends
	capturing bool
}

// New returns a GPU with only the legacy default stream, 0.
func New(o Options) *GPU {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &GPU{device: o.Device, now: o.Now, offset: int64(max(o.EventOffset, 0)), tracer: o.Tracer, streams: map[backend.Stream]*stream{0: {}}}
}

// streamLocked returns s's state; any handle is a stream, made on first use.
func (g *GPU) streamLocked(s backend.Stream) *stream {
	st := g.streams[s]
	if st == nil {
		st = &stream{}
		g.streams[s] = st
	}
	return st
}

// NewStream returns a new, idle stream.
func (g *GPU) NewStream() backend.Stream {
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		g.last++
		if _, used := g.streams[g.last]; !used {
			g.streams[g.last] = &stream{}
			return g.last
		}
	}
}

// Launch queues d of work on s: it starts when s is free (now, or when the
// work before it ends), and Launch returns when it will run, in Unix ns on
// the GPU's clock, as a kernel tracer would report it. On a stream being
// captured it runs nothing, as a captured launch only adds a graph node,
// and returns zeros.
func (g *GPU) Launch(s backend.Stream, d time.Duration) (startNs, endNs int64) {
	return g.LaunchKernel(s, d, "", 0)
}

// LaunchKernel is Launch of a kernel called name, replayed from graph (0:
// none), as Options.Tracer records it while collecting: the kernel, and
// the launch call that queued it, from the call's begin to its return on
// the host clock.
func (g *GPU) LaunchKernel(s backend.Stream, d time.Duration, name string, graph uint32) (startNs, endNs int64) {
	call := g.now().UnixNano()
	startNs, endNs = g.queue(s, d)
	if g.tracer != nil && (startNs != 0 || endNs != 0) {
		g.tracer.record(
			namedRecord{rec: backend.KernelRecord{StartNs: call, EndNs: max(g.now().UnixNano(), call), Kind: backend.RecordLaunch, Thread: simThread, Graph: graph}},
			namedRecord{rec: backend.KernelRecord{StartNs: startNs, EndNs: endNs, Device: uint32(g.device), Stream: uint32(s), Graph: graph}, name: name})
	}
	return startNs, endNs
}

// GraphKernel is one kernel of a graph that LaunchGraph replays.
type GraphKernel struct {
	Name     string
	Duration time.Duration
}

// LaunchGraph replays graph on s: its kernels back to back, queued by one
// launch call, which Options.Tracer records with them as CUPTI does (the
// kernels share the call's correlation). It returns when the graph will
// run, zeros on a stream being captured.
func (g *GPU) LaunchGraph(s backend.Stream, graph uint32, kernels []GraphKernel) (startNs, endNs int64) {
	call := g.now().UnixNano()
	recs := make([]namedRecord, 1, len(kernels)+1)
	for i, k := range kernels {
		ks, ke := g.queue(s, k.Duration)
		if ks == 0 && ke == 0 {
			return 0, 0
		}
		if i == 0 {
			startNs = ks
		}
		endNs = ke
		recs = append(recs, namedRecord{rec: backend.KernelRecord{StartNs: ks, EndNs: ke, Device: uint32(g.device), Stream: uint32(s), Graph: graph}, name: k.Name})
	}
	recs[0].rec = backend.KernelRecord{StartNs: call, EndNs: max(g.now().UnixNano(), call), Kind: backend.RecordLaunch, Thread: simThread, Graph: graph}
	if g.tracer != nil {
		g.tracer.record(recs...)
	}
	return startNs, endNs
}

// Copy queues a copy of d on s (a memcpy, or with set a memset), which
// Options.Tracer records; it returns when the copy will run, zeros on a
// stream being captured.
func (g *GPU) Copy(s backend.Stream, d time.Duration, set bool) (startNs, endNs int64) {
	startNs, endNs = g.queue(s, d)
	if g.tracer != nil && (startNs != 0 || endNs != 0) {
		kind := backend.RecordMemcpy
		if set {
			kind = backend.RecordMemset
		}
		g.tracer.record(namedRecord{rec: backend.KernelRecord{StartNs: startNs, EndNs: endNs, Device: uint32(g.device), Stream: uint32(s), Kind: kind}})
	}
	return startNs, endNs
}

// simThread is the thread id the simulator's launch calls report.
const simThread = 1

// queue queues d of work on s; zeros on a stream being captured.
func (g *GPU) queue(s backend.Stream, d time.Duration) (startNs, endNs int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.streamLocked(s)
	if st.capturing {
		return 0, 0
	}
	startNs = g.reachLocked(st)
	st.busyUntil = startNs + int64(d)
	return startNs, st.busyUntil
}

// BeginCapture starts capturing s into a graph.
func (g *GPU) BeginCapture(s backend.Stream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.streamLocked(s).capturing = true
}

// EndCapture ends the capture of s.
func (g *GPU) EndCapture(s backend.Stream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.streamLocked(s).capturing = false
}

// reachLocked is when work queued on st now would start: now, or when the
// work already queued ends.
func (g *GPU) reachLocked(st *stream) int64 {
	now := g.now().UnixNano()
	if st.busyUntil > now {
		return st.busyUntil
	}
	return now
}

// Opener returns an Opener of pools on this GPU, of as many event pairs as
// asked (1..backend.MaxSlots, or the Opener fails with backend.ErrBadSlot).
func (g *GPU) Opener() backend.Opener {
	return func(slots int) (backend.Pool, error) {
		if slots <= 0 || slots > backend.MaxSlots {
			return nil, fmt.Errorf("sim: pool of %d slots: %w", slots, backend.ErrBadSlot)
		}
		return &pool{g: g, pairs: make([]pair, slots)}, nil
	}
}

// event is one recorded event: the time the stream reaches it.
type event struct {
	at       int64
	recorded bool
}

type pair struct{ begin, end event }

// pool implements backend.Pool on a GPU. It shares the GPU's lock.
type pool struct {
	g      *GPU
	pairs  []pair
	closed bool
}

// errClosed is what calls on a closed pool return; the hub must never see it.
var errClosed = errors.New("sim: pool used after Close")

func (p *pool) Device() int { return p.g.device }

// EventOffset reports Options.EventOffset, known from the start.
func (p *pool) EventOffset() (time.Duration, bool) { return time.Duration(p.g.offset), true }

// Identity names the simulated device in the formats of a real one, marked
// simulated so that no dashboard mistakes it for hardware: the UUID's first
// group spells it in hex, the name in words. The bus id and the driver's
// CUDA version are plain values in a real one's format.
func (p *pool) Identity() backend.Identity {
	d := p.g.device
	return backend.Identity{
		UUID:     fmt.Sprintf("GPU-51a1a7ed-0000-0000-0000-%012x", d),
		PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x80+d),
		Name:     "gpuspans simulated GPU",
		Driver:   "13.0",
	}
}
func (p *pool) Slots() int { return len(p.pairs) }

func (p *pool) RecordBegin(slot int, s backend.Stream) error { return p.record(slot, s, true) }
func (p *pool) RecordEnd(slot int, s backend.Stream) error   { return p.record(slot, s, false) }

// RecordNext implements backend.Chainer: one event ends slot's span and
// begins next's.
func (p *pool) RecordNext(slot, next int, s backend.Stream) error {
	if slot == next {
		return fmt.Errorf("sim: record next slot %d after itself: %w", slot, backend.ErrBadSlot)
	}
	return p.recordAt(slot, next, s, false)
}

func (p *pool) record(slot int, s backend.Stream, begin bool) error {
	return p.recordAt(slot, -1, s, begin)
}

// recordAt records slot's begin or end event and, with next >= 0, begins
// next's span at that end.
func (p *pool) recordAt(slot, next int, s backend.Stream, begin bool) error {
	p.g.mu.Lock()
	defer p.g.mu.Unlock()
	switch {
	case p.closed:
		return errClosed
	case slot < 0 || slot >= len(p.pairs):
		return fmt.Errorf("sim: record slot %d of %d: %w", slot, len(p.pairs), backend.ErrBadSlot)
	case next >= len(p.pairs):
		return fmt.Errorf("sim: record next slot %d of %d: %w", next, len(p.pairs), backend.ErrBadSlot)
	}
	st := p.g.streamLocked(s)
	if st.capturing {
		return fmt.Errorf("sim: record on stream %#x: %w", uint64(s), backend.ErrCapturing)
	}
	e := event{at: p.g.reachLocked(st), recorded: true}
	switch {
	case begin:
		p.pairs[slot] = pair{begin: e}
	default:
		p.pairs[slot].end = e
		if next >= 0 {
			p.pairs[next] = pair{begin: e}
		}
	}
	return nil
}

// Driver codes the simulated harvest reports for slots it cannot time.
const (
	codeInvalidValue  = 1   // CUDA_ERROR_INVALID_VALUE: slot out of range
	codeInvalidHandle = 400 // CUDA_ERROR_INVALID_HANDLE: an event never recorded
)

func (p *pool) Harvest(items []backend.HarvestItem) error {
	p.g.mu.Lock()
	defer p.g.mu.Unlock()
	if p.closed {
		return errClosed
	}
	now := p.g.now().UnixNano()
	for k := range items {
		it := &items[k]
		it.Code, it.DurationNs, it.StartNs = 0, 0, 0
		if int(it.Slot) >= len(p.pairs) {
			it.State, it.Code = backend.Failed, codeInvalidValue
			continue
		}
		pr := p.pairs[it.Slot]
		switch {
		case !pr.begin.recorded || !pr.end.recorded:
			it.State, it.Code = backend.Failed, codeInvalidHandle
		case now < pr.end.at || now < pr.begin.at:
			// Both events must be complete, as for cuEventElapsedTime: a
			// begin on a busier stream can complete after the end.
			it.State = backend.InFlight
		default:
			it.State = backend.Done
			it.DurationNs = pr.end.at - pr.begin.at + p.g.offset
			if it.WantStart != 0 {
				it.StartNs = pr.begin.at
			}
		}
	}
	return nil
}

func (p *pool) Close() error {
	p.g.mu.Lock()
	defer p.g.mu.Unlock()
	if p.closed {
		return errClosed
	}
	now := p.g.now().UnixNano()
	for _, pr := range p.pairs {
		if pr.begin.recorded && pr.begin.at > now || pr.end.recorded && pr.end.at > now {
			return fmt.Errorf("sim: close: %w", backend.ErrBusy)
		}
	}
	p.closed = true
	return nil
}

// Clock is a manual host clock for deterministic tests: time moves only when
// Advance is called. Safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock showing start.
func NewClock(start time.Time) *Clock { return &Clock{t: start} }

// Now returns the clock's time; pass it as Options.Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

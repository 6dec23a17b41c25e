// Package fake holds the test doubles of package backend, beside the
// interfaces they implement:
//
//   - Pool, a backend.Pool that counts every call, plays scripted
//     outcomes, and reports every breach of the backend contract (a call
//     after Close, two calls on one slot at once, a harvest of a slot whose
//     end was not recorded, a slot out of range);
//   - Tracer, a backend.KernelTracer that reports the kernels a test feeds
//     it, for tests above the hub that need kernel spans without CUPTI.
//
// A pool that does no work at all, for measuring the hub's own cost (the
// command's overhead measurement uses it), is go/backend/sim's NopPool.
//
// A Pool is safe for concurrent use, as the contract requires; so are its
// setters and readers, which a test may call while the hub runs. The
// package does not import package testing, so benchmark programs can use
// it too.
package fake

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gpuspans/gpuspans/go/backend"
)

// Options configures a Pool.
type Options struct {
	Device int
	// Slots is the pool size (0: 4096).
	Slots int
	// OpenErr, when set, is what the Opener returns instead of the pool.
	OpenErr error
	// StickyAfter > 0 makes every call after the first StickyAfter calls to
	// RecordBegin, RecordEnd and Harvest fail with an error
	// wrapping backend.ErrSticky, like a CUDA context after a fault.
	StickyAfter int64
	// CloseBusy is how many times Close refuses with backend.ErrBusy before
	// it closes.
	CloseBusy int64
	// Errorf is called with each contract breach (pass t.Errorf); breaches
	// are also kept for Violations.
	Errorf func(format string, args ...interface{})
}

// Op names a recording call, for SetRecordError.
type Op int

// Recording operations.
const (
	OpRecordBegin Op = iota
	OpRecordEnd
	OpRecordNext // backend.Chainer's RecordNext; slot is the span it ends
)

// Calls counts a pool's calls, per method.
type Calls struct {
	Opens       int64 // calls of the Opener
	Device      int64
	Slots       int64
	RecordBegin int64
	RecordEnd   int64
	RecordNext  int64 // one event that ends a span and begins the next
	Harvest     int64
	Items       int64 // harvest items over all Harvest calls
	Close       int64

	RecordsWhileCapturing int64 // records asked on a stream marked capturing (refused)
	CallsAfterSticky      int64 // calls made after one returned a sticky error
}

// Total is the number of calls of every kind: the Opener and every Pool
// method.
func (c Calls) Total() int64 {
	return c.Opens + c.Device + c.Slots + c.RecordBegin + c.RecordEnd + c.RecordNext + c.Harvest + c.Close
}

// Sub returns c - o, field by field: the calls made between two readings.
func (c Calls) Sub(o Calls) Calls {
	return Calls{
		Opens:                 c.Opens - o.Opens,
		Device:                c.Device - o.Device,
		Slots:                 c.Slots - o.Slots,
		RecordBegin:           c.RecordBegin - o.RecordBegin,
		RecordEnd:             c.RecordEnd - o.RecordEnd,
		RecordNext:            c.RecordNext - o.RecordNext,
		Harvest:               c.Harvest - o.Harvest,
		Items:                 c.Items - o.Items,
		Close:                 c.Close - o.Close,
		RecordsWhileCapturing: c.RecordsWhileCapturing - o.RecordsWhileCapturing,
		CallsAfterSticky:      c.CallsAfterSticky - o.CallsAfterSticky,
	}
}

// OutcomeFunc decides a harvested slot's fate: its state and, when Done, its
// duration in nanoseconds.
type OutcomeFunc func(slot int) (backend.SpanState, int64)

// RecordErrorFunc decides whether a record call fails, and how.
type RecordErrorFunc func(op Op, slot int, stream backend.Stream) error

// DefaultDurationNs is the duration of every span the default outcome lands.
const DefaultDurationNs = 5000

// Slot phases, to check that only slots whose end was recorded are harvested.
const (
	phaseIdle  uint32 = iota
	phaseBegun        // RecordBegin succeeded
	phaseEnded        // RecordEnd succeeded
)

// Pool is the counting fake. Make one with New.
type Pool struct {
	o Options

	opens, device, slots, recordBegin, recordEnd, recordNext, harvest, items, close atomic.Int64
	whileCapturing, afterSticky                                                     atomic.Int64

	running    atomic.Int64 // calls in progress, to catch a Close that overlaps one
	scripted   atomic.Int64 // calls counted towards StickyAfter
	stickyNow  atomic.Bool  // SetSticky(true): every call fails
	sticky     atomic.Bool  // a sticky error has been returned
	closed     atomic.Bool
	busyLeft   atomic.Int64
	outcome    atomic.Pointer[OutcomeFunc]
	harvestErr atomic.Pointer[error] // SetHarvestError
	recordErr  atomic.Pointer[RecordErrorFunc]

	capMu      sync.Mutex
	capturingS map[backend.Stream]bool
	anyCapture atomic.Bool // skips capMu while no stream is marked

	inCall []atomic.Bool   // per slot: a call on it is running
	phase  []atomic.Uint32 // per slot: phaseIdle, phaseBegun, phaseEnded
	lentTo []atomic.Int64  // per slot: the slot+1 that RecordNext began at its end, 0: none
	from   []atomic.Int64  // per slot: the slot+1 whose end event its span began at, 0: none

	vMu        sync.Mutex
	violations []string
}

// New returns a pool configured by o.
func New(o Options) *Pool {
	if o.Slots == 0 {
		o.Slots = 4096
	}
	p := &Pool{
		o:          o,
		capturingS: make(map[backend.Stream]bool),
		inCall:     make([]atomic.Bool, o.Slots),
		phase:      make([]atomic.Uint32, o.Slots),
		lentTo:     make([]atomic.Int64, o.Slots),
		from:       make([]atomic.Int64, o.Slots),
	}
	p.busyLeft.Store(o.CloseBusy)
	return p
}

// Opener returns an Opener that counts its calls and returns this pool, of
// Options.Slots whatever the hub asks, or Options.OpenErr.
func (p *Pool) Opener() backend.Opener {
	return func(int) (backend.Pool, error) {
		p.opens.Add(1)
		if p.o.OpenErr != nil {
			return nil, p.o.OpenErr
		}
		return p, nil
	}
}

// SetOutcome scripts harvest outcomes; nil restores the default (every slot
// Done after DefaultDurationNs).
func (p *Pool) SetOutcome(f OutcomeFunc) {
	if f == nil {
		p.outcome.Store(nil)
		return
	}
	p.outcome.Store(&f)
}

// SetRecordError scripts record failures; nil restores success.
func (p *Pool) SetRecordError(f RecordErrorFunc) {
	if f == nil {
		p.recordErr.Store(nil)
		return
	}
	p.recordErr.Store(&f)
}

// SetSticky makes every later call to RecordBegin, RecordEnd and Harvest
// fail with an error wrapping backend.ErrSticky (true), like a CUDA
// context after a fault, or stops that (false). Calls made after one failed
// so are counted in CallsAfterSticky either way.
func (p *Pool) SetSticky(on bool) { p.stickyNow.Store(on) }

// SetHarvestError makes every later Harvest fail as a whole with err,
// without answering for its items, as the C core does when it cannot set
// up the calls (a capture mode or context switch failing); nil clears it.
func (p *Pool) SetHarvestError(err error) {
	if err == nil {
		p.harvestErr.Store(nil)
		return
	}
	p.harvestErr.Store(&err)
}

// SetCapturing marks stream as being captured (or not).
func (p *Pool) SetCapturing(stream backend.Stream, capturing bool) {
	p.capMu.Lock()
	defer p.capMu.Unlock()
	if capturing {
		p.capturingS[stream] = true
	} else {
		delete(p.capturingS, stream)
	}
	p.anyCapture.Store(len(p.capturingS) > 0)
}

// Calls returns the call counts so far.
func (p *Pool) Calls() Calls {
	return Calls{
		Opens:                 p.opens.Load(),
		Device:                p.device.Load(),
		Slots:                 p.slots.Load(),
		RecordBegin:           p.recordBegin.Load(),
		RecordEnd:             p.recordEnd.Load(),
		RecordNext:            p.recordNext.Load(),
		Harvest:               p.harvest.Load(),
		Items:                 p.items.Load(),
		Close:                 p.close.Load(),
		RecordsWhileCapturing: p.whileCapturing.Load(),
		CallsAfterSticky:      p.afterSticky.Load(),
	}
}

// Closed reports whether Close has succeeded.
func (p *Pool) Closed() bool { return p.closed.Load() }

// Violations returns the contract breaches seen so far.
func (p *Pool) Violations() []string {
	p.vMu.Lock()
	defer p.vMu.Unlock()
	return append([]string(nil), p.violations...)
}

func (p *Pool) violate(format string, args ...interface{}) {
	msg := fmt.Sprintf("fake pool (device %d): ", p.o.Device) + fmt.Sprintf(format, args...)
	p.vMu.Lock()
	p.violations = append(p.violations, msg)
	p.vMu.Unlock()
	if p.o.Errorf != nil {
		p.o.Errorf("%s", msg)
	}
}

// enter checks a call against Close and the sticky script; it returns the
// sticky error the call must fail with, if any. Every enter is paired with a
// leave.
func (p *Pool) enter(op string) error {
	p.running.Add(1)
	if p.closed.Load() {
		p.violate("%s after Close", op)
	}
	if p.sticky.Load() {
		p.afterSticky.Add(1)
	}
	scripted := p.o.StickyAfter > 0 && p.scripted.Add(1) > p.o.StickyAfter
	if scripted || p.stickyNow.Load() {
		p.sticky.Store(true)
		return &backend.DriverError{Op: op, Code: 700, Msg: "CUDA_ERROR_ILLEGAL_ADDRESS (fake)", Kind: backend.ErrSticky}
	}
	return nil
}

func (p *Pool) leave() { p.running.Add(-1) }

// claim marks slot as in a call, reporting a breach if it already was.
func (p *Pool) claim(op string, slot int) bool {
	if slot < 0 || slot >= len(p.inCall) {
		p.violate("%s: slot %d out of range", op, slot)
		return false
	}
	if !p.inCall[slot].CompareAndSwap(false, true) {
		p.violate("%s: slot %d is in another call", op, slot)
		return false
	}
	return true
}

func (p *Pool) isCapturing(stream backend.Stream) bool {
	if !p.anyCapture.Load() {
		return false
	}
	p.capMu.Lock()
	defer p.capMu.Unlock()
	return p.capturingS[stream]
}

// Device implements backend.Pool.
func (p *Pool) Device() int {
	p.device.Add(1)
	if p.closed.Load() {
		p.violate("Device after Close")
	}
	return p.o.Device
}

// Slots implements backend.Pool.
func (p *Pool) Slots() int {
	p.slots.Add(1)
	if p.closed.Load() {
		p.violate("Slots after Close")
	}
	return p.o.Slots
}

// RecordBegin implements backend.Pool.
func (p *Pool) RecordBegin(slot int, stream backend.Stream) error {
	p.recordBegin.Add(1)
	return p.record(OpRecordBegin, "RecordBegin", slot, -1, stream)
}

// RecordEnd implements backend.Pool.
func (p *Pool) RecordEnd(slot int, stream backend.Stream) error {
	p.recordEnd.Add(1)
	return p.record(OpRecordEnd, "RecordEnd", slot, -1, stream)
}

// RecordNext implements backend.Chainer. Besides RecordEnd's checks it
// reports a breach when slot's end event is recorded again while the span
// that began at it waits, ended, for its harvest.
func (p *Pool) RecordNext(slot, next int, stream backend.Stream) error {
	p.recordNext.Add(1)
	return p.record(OpRecordNext, "RecordNext", slot, next, stream)
}

func (p *Pool) record(op Op, name string, slot, next int, stream backend.Stream) error {
	defer p.leave()
	if err := p.enter(name); err != nil {
		return err
	}
	if !p.claim(name, slot) {
		return fmt.Errorf("fake %s(%d): %w", name, slot, backend.ErrBadSlot)
	}
	defer p.inCall[slot].Store(false)
	if op == OpRecordNext {
		if next == slot || !p.claim(name, next) {
			return fmt.Errorf("fake %s(%d, %d): %w", name, slot, next, backend.ErrBadSlot)
		}
		defer p.inCall[next].Store(false)
	}
	if p.isCapturing(stream) {
		p.whileCapturing.Add(1)
		return fmt.Errorf("fake %s on stream %#x: %w", name, uint64(stream), backend.ErrCapturing)
	}
	if f := p.recordErr.Load(); f != nil {
		if err := (*f)(op, slot, stream); err != nil {
			return err
		}
	}
	if op == OpRecordBegin {
		p.unlend(slot)
		p.phase[slot].Store(phaseBegun)
		return nil
	}
	if p.phase[slot].Load() != phaseBegun {
		p.violate("%s: slot %d has no begin", name, slot)
	}
	if b := p.lentTo[slot].Load(); b != 0 && p.phase[b-1].Load() == phaseEnded {
		p.violate("%s: slot %d's end event recorded again while slot %d, which began at it, waits for its harvest", name, slot, b-1)
	}
	p.lentTo[slot].Store(0)
	p.phase[slot].Store(phaseEnded)
	if op == OpRecordNext {
		p.unlend(next)
		p.lentTo[slot].Store(int64(next) + 1)
		p.from[next].Store(int64(slot) + 1)
		p.phase[next].Store(phaseBegun)
	}
	return nil
}

// unlend ends the borrow of slot's span, if it began at another's end
// event: it was harvested, or given up as the slot begins anew.
func (p *Pool) unlend(slot int) {
	if l := p.from[slot].Swap(0); l != 0 {
		p.lentTo[l-1].CompareAndSwap(int64(slot)+1, 0)
	}
}

// Harvest implements backend.Pool.
func (p *Pool) Harvest(items []backend.HarvestItem) error {
	p.harvest.Add(1)
	p.items.Add(int64(len(items)))
	defer p.leave()
	err := p.enter("Harvest")
	if e := p.harvestErr.Load(); e != nil && err == nil {
		return *e
	}
	var outcome OutcomeFunc
	if f := p.outcome.Load(); f != nil {
		outcome = *f
	}
	for k := range items {
		it := &items[k]
		slot := int(it.Slot)
		if !p.claim("Harvest", slot) {
			it.State, it.Code = backend.Failed, 1
			continue
		}
		if p.phase[slot].Load() != phaseEnded {
			p.violate("Harvest: slot %d has not been ended", slot)
		}
		state, dur := backend.Done, int64(DefaultDurationNs)
		switch {
		case err != nil:
			state = backend.Failed
		case outcome != nil:
			state, dur = outcome(slot)
		}
		it.State, it.Code, it.DurationNs, it.StartNs = state, 0, 0, 0
		switch state {
		case backend.Done:
			it.DurationNs = dur
			p.phase[slot].Store(phaseIdle)
			p.unlend(slot)
		case backend.Failed:
			it.Code = 999
			p.phase[slot].Store(phaseIdle)
			p.unlend(slot)
		}
		p.inCall[slot].Store(false)
	}
	return err
}

// Close implements backend.Pool.
func (p *Pool) Close() error {
	p.close.Add(1)
	if p.closed.Load() {
		p.violate("Close after Close")
		return nil
	}
	if n := p.running.Load(); n != 0 {
		p.violate("Close while %d calls are running", n)
	}
	if p.busyLeft.Add(-1) >= 0 {
		return fmt.Errorf("fake Close: %w", backend.ErrBusy)
	}
	p.closed.Store(true)
	return nil
}

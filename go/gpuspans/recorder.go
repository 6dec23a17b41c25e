package gpuspans

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/internal/spanring"
)

// A recorder is one install on one device: a pool of event pairs and the ring
// of slots that hands them out.
//
// Lifecycle (status): pending until the first step at Kernel opens the pool,
// then open, or failed if it could not open; an open recorder turns dead on a
// sticky error. Retirement (Install replacing it, or Uninstall) sets the
// retired bit on top of any of these. Span paths begin spans only on an open,
// unretired recorder, and make backend calls only while they hold a slot
// (see begin), which is what lets sweep close the pool without a lock on
// those paths.
type recorder struct {
	hub    *Hub
	device int
	stream backend.Stream // lane spans' stream
	open   backend.Opener

	status atomic.Uint32
	err    atomic.Pointer[errBox] // why the recorder is failed or dead; set once
	logged atomic.Bool            // the first span error has been logged

	// laneTok[lane] is the open lane span's position+1, laneReserving while
	// a LaneBegin is opening one, or 0.
	laneTok []atomic.Uint64

	_    [cacheLine]byte
	next atomic.Uint64 // positions handed out: the spans begun on this recorder; nextSealed once finished
	_    [cacheLine]byte

	// Set by openPool before status turns open, read-only after: the span
	// paths read them only after seeing status open.
	pool  backend.Pool
	chain backend.Chainer // the pool, when it begins a span at another's end; else nil
	slots []slot
	id    backend.Identity // the device's, when the pool can tell it

	// Owned by the harvest lock: the device's event offset in ns, -1 until
	// the pool knows it; cal is the pool when it measures one, else nil.
	offset int64
	cal    backend.Calibrated

	// Owned by the harvest lock.
	tail       uint64                // oldest position a harvest may still need to look at
	items      []backend.HarvestItem // the batch, preallocated to len(slots)
	seen       []openSeen            // per slot: the open span a harvest last saw there, for leak reclaim
	closeBusy  bool                  // retired and idle, but Close answered ErrBusy
	leakLogged bool                  // the first leaked span has been logged
}

// openSeen is the open span a harvest saw in a slot, and the step it first
// saw it in: a span still open LeakSteps steps later is reclaimed.
type openSeen struct {
	gen  uint64 // position+1; 0: none
	step uint64
}

// The ring's shared values (go/internal/spanring states the protocol that
// a C span path follows too).
const (
	recPending   = spanring.StatusPending
	recOpen      = spanring.StatusOpen
	recFailed    = spanring.StatusFailed
	recDead      = spanring.StatusDead
	recStateMask = spanring.StatusStateMask
	recRetired   = spanring.StatusRetired

	laneReserving = spanring.LaneReserving
)

// nextSealed is set in recorder.next when sweep finishes the recorder
// (seal).
const nextSealed = spanring.NextSealed

// errBox lets an error live in an atomic.Pointer.
type errBox struct{ err error }

// A slot is one event pair of the ring, in memory a C span path may share
// (go/internal/spanring describes its fields and protocol).
type slot = spanring.Slot

// Lent values: whether a later span began at the slot's end event.
const (
	lentNone    = spanring.LentNone
	lentWaiting = spanring.LentWaiting
	lentLanded  = spanring.LentLanded
)

// Slot states. A span moves free -> opening -> open -> closing -> closed ->
// free; any step may fall back to free when a call fails or the recorder is
// off.
const (
	slotFree    = spanring.SlotFree
	slotOpening = spanring.SlotOpening
	slotOpen    = spanring.SlotOpen
	slotClosing = spanring.SlotClosing
	slotClosed  = spanring.SlotClosed
	slotLent    = spanring.SlotLent

	slotStateMask = spanring.StateMask
	slotPosShift  = spanring.PosShift
)

func pack(pos, state uint64) uint64 { return spanring.Pack(pos, state) }

// openPool opens the pool and sizes the ring; on success the recorder turns
// open. Called once, under the harvest lock.
func (r *recorder) openPool(maxSlots int) error {
	pool, err := callOpener(r.open, maxSlots)
	if err != nil {
		return fmt.Errorf("opening the event pool: %w", err)
	}
	if pool == nil {
		return errors.New("opening the event pool: the opener returned no pool and no error")
	}
	dev, n, err := poolShape(pool)
	if err != nil || dev != r.device || n <= 0 {
		// Nothing was recorded on it, so Close cannot find events in flight.
		_ = closePool(pool)
		if err != nil {
			return fmt.Errorf("opening the event pool: %w", err)
		}
		return fmt.Errorf("the opener returned a pool for device %d with %d slots", dev, n)
	}
	if n > maxSlots { // more than asked: the ring is what the hub said
		n = maxSlots
	}
	r.slots = make([]slot, n)
	r.items = make([]backend.HarvestItem, 0, n)
	r.id = identityOf(pool)
	r.offset = -1
	r.cal, _ = pool.(backend.Calibrated)
	r.chain, _ = pool.(backend.Chainer)
	r.seen = make([]openSeen, n)
	r.pool = pool
	r.status.Store(recOpen)
	return nil
}

// identityOf asks a pool that can tell its device's identity; labels are not
// worth a crash, so a panic gives an empty identity.
func identityOf(pool backend.Pool) (id backend.Identity) {
	defer func() { _ = recover() }()
	if ider, ok := pool.(backend.Identifier); ok {
		id = ider.Identity()
	}
	return id
}

// callOpener runs an opener, turning a panic into an error: the opener is
// the caller's code, run on the serving thread inside BeginStep, and a GPU
// problem must turn spans off, not take the binary down.
func callOpener(open backend.Opener, slots int) (pool backend.Pool, err error) {
	defer func() {
		if p := recover(); p != nil {
			pool, err = nil, fmt.Errorf("the opener panicked: %v", p)
		}
	}()
	return open(slots)
}

// errPoolPanicked is wrapped by the error a panicking pool method is turned
// into: the pool is then treated as dead, like one after a sticky error.
var errPoolPanicked = errors.New("the pool panicked")

// recoverPool, deferred around a pool method call, turns a panic into an
// error naming op. A pool method may be the caller's code, run on the
// serving thread or under the harvest lock: its panic must turn spans off,
// not take the binary down or leave the lock held.
func recoverPool(op string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("pool %s panicked: %v: %w", op, p, errPoolPanicked)
	}
}

// The pool calls, each under recoverPool. The deferred call is open-coded:
// it costs a few instructions and no allocation unless the pool panics.

func poolShape(p backend.Pool) (dev, n int, err error) {
	defer recoverPool("Device or Slots", &err)
	return p.Device(), p.Slots(), nil
}

func closePool(p backend.Pool) (err error) {
	defer recoverPool("Close", &err)
	return p.Close()
}

func (r *recorder) recordBegin(i int, stream backend.Stream) (err error) {
	defer recoverPool("RecordBegin", &err)
	return r.pool.RecordBegin(i, stream)
}

func (r *recorder) recordNext(i, next int, stream backend.Stream) (err error) {
	defer recoverPool("RecordNext", &err)
	return r.chain.RecordNext(i, next, stream)
}

func (r *recorder) recordEnd(i int, stream backend.Stream) (err error) {
	defer recoverPool("RecordEnd", &err)
	return r.pool.RecordEnd(i, stream)
}

func (r *recorder) harvestPool(items []backend.HarvestItem) (err error) {
	defer recoverPool("Harvest", &err)
	err = r.pool.Harvest(items)
	if r.offset < 0 && r.cal != nil {
		if d, ok := r.cal.EventOffset(); ok && d >= 0 {
			r.offset = int64(d)
		}
	}
	return err
}

// begin claims the next slot in turn and records its begin event on stream.
// It returns the span's position, or false when the span was dropped (and
// counted).
//
// Every backend call happens while the slot is claimed, and the recorder's
// status is read again after the claim: sweep retires a recorder before it
// checks that every slot is free, so either sweep sees this claim and keeps
// the pool open, or this path sees the retirement and backs out without a
// backend call. Either way no call reaches a closed pool.
func (r *recorder) begin(kind SpanKind, key uint64, stream backend.Stream) (uint64, bool) {
	pos, sl, ok := r.claim(kind, key, stream)
	if !ok {
		return 0, false
	}
	// The pool checks the stream itself and refuses with ErrCapturing (a
	// drop, see spanFailed): asking Capturing first would cost a second
	// crossing into the driver on every span.
	if err := r.recordBegin(int(pos%uint64(len(r.slots))), stream); err != nil {
		r.spanFailed(sl, pos, err)
		return 0, false
	}
	sl.Word.Store(pack(pos, slotOpen))
	return pos, true
}

// claim takes the next slot in turn for a span (state opening) on an open
// recorder; false when the span was dropped (and counted).
func (r *recorder) claim(kind SpanKind, key uint64, stream backend.Stream) (uint64, *slot, bool) {
	h := r.hub
	n := uint64(len(r.slots))
	pos := r.next.Add(1) - 1
	if pos&nextSealed != 0 {
		return 0, nil, false
	}
	sl := &r.slots[pos%n]
	w := sl.Word.Load()
	if w&slotStateMask != slotFree || w>>slotPosShift > pos ||
		!sl.Word.CompareAndSwap(w, pack(pos, slotOpening)) {
		// Still in use by an older span, or taken by a newer one while this
		// path was preempted: drop rather than wait.
		r.drop(DropSlotBusy)
		return 0, nil, false
	}
	sl.Kind, sl.Key, sl.Stream, sl.Step, sl.From = uint32(kind), key, uint64(stream), h.step.Load(), 0
	if r.status.Load() != recOpen {
		r.release(sl, pos, DropRetired)
		return 0, nil, false
	}
	return pos, sl, true
}

// follow ends the open span at prev and begins a span on stream at the same
// event, when the pool can (backend.Chainer); otherwise, or when prev is no
// longer open, it ends prev (if open) and begins the span with events of its
// own. It returns the new span's position, or false when it was dropped.
// The new span borrows prev's end event: see slot.
func (r *recorder) follow(prev uint64, kind SpanKind, key uint64, stream backend.Stream) (uint64, bool) {
	n := uint64(len(r.slots))
	ps := &r.slots[prev%n]
	if r.chain == nil || !ps.Word.CompareAndSwap(pack(prev, slotOpen), pack(prev, slotClosing)) {
		r.end(prev)
		return r.begin(kind, key, stream)
	}
	if r.status.Load() != recOpen {
		r.endClaimed(ps, prev)
		return r.begin(kind, key, stream) // drops it: the recorder is off
	}
	pos, sl, ok := r.claim(kind, key, stream)
	if !ok {
		r.endClaimed(ps, prev)
		return 0, false
	}
	sl.From = prev + 1
	ps.Lent.Store(lentWaiting)
	if err := r.recordNext(int(prev%n), int(pos%n), stream); err != nil {
		// Nothing was recorded: both spans fail alike.
		sl.From = 0
		ps.Lent.Store(lentNone)
		r.spanFailed(ps, prev, err)
		r.spanFailed(sl, pos, err)
		return 0, false
	}
	sl.Word.Store(pack(pos, slotOpen))
	ps.Word.Store(pack(prev, slotClosed))
	return pos, true
}

// end records the end event of the span at pos, if that span is open; it
// reports whether it was. A dead recorder frees the slot without a backend
// call. A retired one still records: the span began before retirement and
// its slot keeps the pool open.
func (r *recorder) end(pos uint64) bool {
	sl := &r.slots[pos%uint64(len(r.slots))]
	if !sl.Word.CompareAndSwap(pack(pos, slotOpen), pack(pos, slotClosing)) {
		return false
	}
	r.endClaimed(sl, pos)
	return true
}

// endClaimed records the end event of the span at pos, whose slot the
// caller moved from open to closing.
func (r *recorder) endClaimed(sl *slot, pos uint64) {
	if r.status.Load()&recStateMask == recDead {
		r.release(sl, pos, errored)
		return
	}
	if err := r.recordEnd(int(pos%uint64(len(r.slots))), backend.Stream(sl.Stream)); err != nil {
		r.spanFailed(sl, pos, err)
		return
	}
	sl.Word.Store(pack(pos, slotClosed))
}

// free frees the slot of the span at pos, which landed or will not land,
// and gives back the event it borrowed. A slot whose end event a later span
// still begins at waits in slotLent until that span gives it back.
func (r *recorder) free(sl *slot, pos uint64) {
	r.giveBack(sl.From)
	sl.From = 0
	if sl.Lent.Load() == lentWaiting && sl.Lent.CompareAndSwap(lentWaiting, lentLanded) {
		sl.Word.Store(pack(pos, slotLent))
		return
	}
	sl.Word.Store(pack(pos, slotFree))
}

// giveBack returns a borrowed end event to the span at from-1 that lent it
// (from 0: nothing borrowed): a lender still to land frees its own slot
// then, one waiting in slotLent is freed here.
func (r *recorder) giveBack(from uint64) {
	if from == 0 {
		return
	}
	l := &r.slots[(from-1)%uint64(len(r.slots))]
	if l.Lent.CompareAndSwap(lentWaiting, lentNone) {
		return
	}
	if l.Lent.CompareAndSwap(lentLanded, lentNone) {
		l.Word.Store(pack(from-1, slotFree))
	}
}

// errored, as release's outcome, counts the span as errored, not dropped.
const errored = DropReason(-1)

// release frees the slot of a span that will not land and counts it as
// dropped for reason, or errored. The slot is freed before the count so
// that a snapshot, which reads the counts before it scans the slots, never
// sees the span twice.
func (r *recorder) release(sl *slot, pos uint64, reason DropReason) {
	r.free(sl, pos)
	if reason == errored {
		r.hub.devc[r.device].errored.Add(1)
		return
	}
	r.drop(reason)
}

// drop counts a span dropped for reason on the recorder's device.
func (r *recorder) drop(reason DropReason) { r.hub.devc[r.device].dropped[reason].Add(1) }

// spanFailed releases a span whose record call failed: a capturing stream is
// a drop, a sticky error or a panic kills the recorder, anything else is an
// error (logged the first time).
func (r *recorder) spanFailed(sl *slot, pos uint64, err error) {
	switch {
	case errors.Is(err, backend.ErrCapturing):
		r.release(sl, pos, DropCapturing)
		return
	case fatal(err):
		r.kill(err)
	default:
		r.logFirst(err)
	}
	r.release(sl, pos, errored)
}

// logFirst logs the recorder's first span error; later ones are only counted,
// so a failing driver cannot flood the log.
func (r *recorder) logFirst(err error) {
	if r.logged.CompareAndSwap(false, true) {
		r.hub.logf("gpuspans: span error on device %d (later ones are counted, not logged): %v", r.device, err)
	}
}

// fatal reports whether err turns the recorder dead: a sticky error, or a
// pool method that panicked.
func fatal(err error) bool {
	return errors.Is(err, backend.ErrSticky) || errors.Is(err, errPoolPanicked)
}

// kill turns an open recorder dead after a sticky error or a pool panic: no
// backend call follows until it is retired and its pool closed. Logged and
// counted (StickyDisables or PoolPanics) once.
func (r *recorder) kill(err error) {
	if !r.err.CompareAndSwap(nil, &errBox{err}) {
		return
	}
	for {
		old := r.status.Load()
		if r.status.CompareAndSwap(old, old&recRetired|recDead) {
			break
		}
	}
	if errors.Is(err, errPoolPanicked) {
		r.hub.poolPanics.Add(1)
	} else {
		r.hub.stickyDisables.Add(1)
	}
	r.hub.logf("gpuspans: GPU spans off on device %d until it is installed again: %v", r.device, err)
}

// retire stops new spans and abandons open lane spans: nobody would end them,
// since LaneEnd only sees installed recorders, and their stream may be gone
// with the engine that replaced it. Caller holds the harvest lock.
func (r *recorder) retire() {
	for {
		old := r.status.Load()
		if r.status.CompareAndSwap(old, old|recRetired) {
			break
		}
	}
	for lane := range r.laneTok {
		r.abandonLane(lane)
	}
}

// abandonLane frees lane's open span without ending it, if it still has one.
// The begin event may be in flight; the pool's Close refuses (ErrBusy) until
// it completes.
func (r *recorder) abandonLane(lane int) {
	tok := &r.laneTok[lane]
	t := tok.Load()
	if t == 0 || t == laneReserving || !tok.CompareAndSwap(t, 0) {
		return
	}
	r.hub.openLanes.Add(-1)
	pos := t - 1
	sl := &r.slots[pos%uint64(len(r.slots))]
	from := sl.From // read while the span is open: nobody writes it then
	if sl.Word.CompareAndSwap(pack(pos, slotOpen), pack(pos, slotFree)) {
		r.giveBack(from)
		r.drop(DropRetired)
	}
}

// laneBegin opens lane's span on the recorder's stream unless one is open.
func (r *recorder) laneBegin(lane int) {
	tok := &r.laneTok[lane]
	if !tok.CompareAndSwap(0, laneReserving) {
		r.hub.laneAlreadyOpen.Add(1)
		return
	}
	pos, ok := r.begin(KindLane, uint64(lane), r.stream)
	r.laneOpened(lane, pos, ok, false)
}

// laneOpened publishes lane's reserved token: the span at pos, or none
// when it was dropped (!ok). counted says the open-lane count already
// holds it (a lane handed on by laneNext).
func (r *recorder) laneOpened(lane int, pos uint64, ok, counted bool) {
	tok := &r.laneTok[lane]
	if !ok {
		tok.Store(0)
		if counted {
			r.hub.openLanes.Add(-1)
		}
		return
	}
	tok.Store(pos + 1)
	if !counted {
		r.hub.openLanes.Add(1)
	}
	// retire may have scanned the lanes while this one was reserving.
	if r.status.Load()&recRetired != 0 {
		r.abandonLane(lane)
	}
}

// laneEnd ends lane's span, if one is open.
func (r *recorder) laneEnd(lane int) {
	tok := &r.laneTok[lane]
	t := tok.Load()
	if t == 0 || t == laneReserving || !tok.CompareAndSwap(t, 0) {
		return
	}
	r.hub.openLanes.Add(-1)
	r.end(t - 1)
}

// laneNext ends lane from's span, if open, and with begin opens lane to's at
// its end event (follow); with from not open it begins to as laneBegin does.
func (r *recorder) laneNext(from, to int, begin bool) {
	ft := &r.laneTok[from]
	t := ft.Load()
	if t == 0 || t == laneReserving || !ft.CompareAndSwap(t, 0) {
		if begin {
			r.laneBegin(to)
		}
		return
	}
	if !begin || !r.laneTok[to].CompareAndSwap(0, laneReserving) {
		if begin {
			r.hub.laneAlreadyOpen.Add(1)
		}
		r.hub.openLanes.Add(-1)
		r.end(t - 1)
		return
	}
	// from's place in the open-lane count passes to to: one lane ends as
	// the other begins.
	pos, ok := r.follow(t-1, KindLane, uint64(to), r.stream)
	r.laneOpened(to, pos, ok, true)
}

// seal marks the recorder finished and returns the number of spans begun on
// it. Caller holds the harvest lock and has seen the recorder retired and
// idle.
func (r *recorder) seal() uint64 {
	for {
		n := r.next.Load()
		if r.next.CompareAndSwap(n, n|nextSealed) {
			return n
		}
	}
}

// inFlight counts the claimed slots: the recorder's spans begun and not yet
// landed, dropped or errored.
func (r *recorder) inFlight() uint64 {
	var n uint64
	for i := range r.slots {
		if st := r.slots[i].Word.Load() & slotStateMask; st != slotFree && st != slotLent {
			n++
		}
	}
	return n
}

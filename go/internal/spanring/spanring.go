// Package spanring holds the words of a hub's span ring that a span path
// writes, laid out so that a span path written in C (go/capi's, which
// records lane spans without crossing into Go) shares them with the hub's
// Go paths. It defines the memory and the protocol's values; the Go
// protocol is go/gpuspans' recorder.go, the C one go/capi's spanpath.c,
// and the two must stay step for step alike (docs/design.md, span paths):
// spanringtest models the whole protocol; go/capi's TestRingDifferential
// drives both writers by it on one hub, op by op, go/gpuspans' model test
// the Go writer alone, and tools/ci/ringdiff_mutations.sh proves the
// former catches a change to either as a divergence at an op.
//
// The protocol, per recorder (one install on one device):
//   - Next counts the positions handed out; position p uses slot p % n.
//   - A slot's Word packs the position that last claimed it (plus one) and
//     its state: free -> opening (claimed) -> open (begin recorded) ->
//     closing -> closed (end recorded) -> free (landed, dropped or
//     errored), or lent (landed while a later span still begins at its end
//     event). Positions only grow in a Word, so a stale token never matches
//     a later span. A claim that finds the slot not free drops the span
//     (DropSlotBusy): nothing waits.
//   - The other fields of a slot are written by the path that claimed it
//     before it publishes the next state, and read by whoever sees that
//     state: the Word's atomic operations order them.
//   - A span begun at another's end event (a shared boundary) sets From to
//     the lender's position plus one, and the lender's Lent keeps its slot
//     from being claimed again until the borrower lands or is given up.
//   - A path makes a pool call only while it holds a claimed slot, and
//     reads the recorder's Status again after claiming: retiring sets the
//     Retired bit before checking that every slot is free, so a pool is
//     never closed under a record.
//   - LaneTok[lane] is the open lane span's position plus one,
//     LaneReserving while a begin opens one, or 0.
//
// Every word is accessed only atomically (sequentially consistent, as Go's
// sync/atomic and C's __ATOMIC_SEQ_CST both are), except a slot's plain
// fields, which the Word orders.
package spanring

import (
	"sync/atomic"
	"unsafe"
)

// Slot is one event pair of the ring: 64 bytes, so adjacent slots go to
// different cache lines. go/capi's spanpath.h declares the same struct, and
// go/capi checks every offset at compile time.
type Slot struct {
	Word   atomic.Uint64 // (position+1) << PosShift | state
	Stream uint64        // the stream the span records on
	Key    uint64        // lane index or kernel handle
	Step   uint64        // the step counter when the span began
	From   uint64        // position+1 of the span whose end event this one began at; 0: its own
	Lent   atomic.Uint32 // LentNone, LentWaiting or LentLanded
	Kind   uint32        // the span's kind (gpuspans.SpanKind)
	_      [16]byte
}

var _ = [1]struct{}{}[unsafe.Sizeof(Slot{})-64]

// Slot states, in a Word's low bits.
const (
	SlotFree    uint64 = 0 // no span; may be claimed
	SlotOpening uint64 = 1 // claimed; the begin event is being recorded
	SlotOpen    uint64 = 2 // the begin event is recorded; waiting for the end
	SlotClosing uint64 = 3 // the end event is being recorded
	SlotClosed  uint64 = 4 // both recorded; a harvest will land it
	SlotLent    uint64 = 5 // landed or released, its end event still a later span's begin

	StateMask uint64 = 0x7
)

// PosShift is where the position starts in a Word.
const PosShift = 3

// Pack is the Word of the span at pos in state.
func Pack(pos, state uint64) uint64 { return (pos+1)<<PosShift | state }

// Lent values: whether a later span began at the slot's end event.
const (
	LentNone    uint32 = 0 // no
	LentWaiting uint32 = 1 // yes, and this span has not landed yet
	LentLanded  uint32 = 2 // yes, this span landed: the slot waits in SlotLent
)

// LaneReserving is a LaneTok while a lane begin is opening its span.
const LaneReserving = ^uint64(0)

// NextSealed is set in a recorder's Next once the hub has finished it and
// added its count to the totals: a path that hands out a position after
// that sees the bit and gives up without counting anything, so the total
// stays exact. Positions never reach it (2^62 spans).
const NextSealed = uint64(1) << 62

// Recorder status values, and the Retired bit that may be set on any of
// them. Span paths begin spans only on an Open recorder without it.
const (
	StatusPending   uint32 = 0 // installed; its pool opens at the first step at Kernel
	StatusOpen      uint32 = 1
	StatusFailed    uint32 = 2 // its pool could not open
	StatusDead      uint32 = 3 // a sticky error: no pool call until installed again
	StatusStateMask uint32 = 0x3
	StatusRetired   uint32 = 0x4
)

// Recorder is what a span path outside Go needs of one installed recorder:
// its shared words, where they live in the hub's memory. The slices and
// pointers stay valid while the recorder is reachable; a Publisher pins
// them for as long as C code may read them.
type Recorder struct {
	Pool    any    // the recorder's backend.Pool once its status is open, else nil
	Stream  uint64 // lane spans' stream
	Status  *atomic.Uint32
	Next    *atomic.Uint64
	LaneTok []atomic.Uint64 // by lane index
	Slots   []Slot
	Dropped []atomic.Uint64 // the device's dropped spans, by gpuspans.DropReason
	Errored *atomic.Uint64  // the device's errored spans
	// Fail ends the span at pos whose record call failed with err, as the
	// Go path does: a drop, an error (the first logged), or a dead
	// recorder. Any goroutine; the caller holds pos's slot.
	Fail func(pos uint64, err error)
}

// Hub is the hub's words a span path writes or reads: for lane spans, and
// for a step begin, which a path outside Go makes only while the hub says
// it may (CStep).
type Hub struct {
	Lanes           int
	Step            *atomic.Uint64 // the step counter: a span begins in its step
	OpenLanes       *atomic.Int64  // lane spans open on any recorder
	LaneAlreadyOpen *atomic.Uint64

	// A step outside Go: while CStep holds, it may count the step (LeakClock,
	// and Step above Off), arm it at Kernel (the armed bit, on one in Every,
	// and ArmedSteps) and store State with Pools into the hub's mirror
	// word; else it must enter Go. The hub keeps CStep current.
	CStep      *atomic.Bool
	State      *uint32 // level | armed | tracer bits (gpuspans' Mirror* bits)
	Pools      *int32  // pools open
	LeakClock  *atomic.Uint64
	ArmedSteps *atomic.Uint64
	Every      *atomic.Int64 // KernelSpanEvery
}

// A Publisher is told, under the hub's harvest lock, what a span path
// outside Go may use: every time the installed recorders change or one's
// pool opens, the hub's words and the installed recorders by device.
// Publish must not block or call the hub.
type Publisher interface {
	Publish(h Hub, recs []Recorder)
}

// Attach makes a hub tell p what it publishes, at once and from then on.
// go/gpuspans sets it (hub must be a *gpuspans.Hub); go/capi calls it right
// after making a hub. Keeping it out of gpuspans' API keeps that API what
// Go engines call.
var Attach func(hub any, p Publisher)

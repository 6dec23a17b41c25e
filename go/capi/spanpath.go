//go:build cgo

package main

/*
#include <stdlib.h>
#include "spanpath.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/cudabridge"
	"github.com/gpuspans/gpuspans/go/internal/spanring"
)

// The C span path (spanpath.c) records steps and lane spans on the hub's
// own words without entering Go. This file publishes those words to it,
// frees what it published once no C call can hold it, and ends the spans
// whose record failed there.

// spanring.Slot and spanpath.h's gs_sp_slot, and the protocol's values, must
// agree: each line fails to compile (constant index out of range) if not.
var (
	_ = [1]int{}[unsafe.Sizeof(spanring.Slot{})-unsafe.Sizeof(C.gs_sp_slot{})]
	_ = [1]int{}[unsafe.Offsetof(spanring.Slot{}.Word)-unsafe.Offsetof(C.gs_sp_slot{}.word)]
	_ = [1]int{}[unsafe.Offsetof(spanring.Slot{}.Stream)-unsafe.Offsetof(C.gs_sp_slot{}.stream)]
	_ = [1]int{}[unsafe.Offsetof(spanring.Slot{}.Key)-unsafe.Offsetof(C.gs_sp_slot{}.key)]
	_ = [1]int{}[unsafe.Offsetof(spanring.Slot{}.Step)-unsafe.Offsetof(C.gs_sp_slot{}.step)]
	_ = [1]int{}[unsafe.Offsetof(spanring.Slot{}.From)-unsafe.Offsetof(C.gs_sp_slot{}.from)]
	_ = [1]int{}[unsafe.Offsetof(spanring.Slot{}.Lent)-unsafe.Offsetof(C.gs_sp_slot{}.lent)]
	_ = [1]int{}[unsafe.Offsetof(spanring.Slot{}.Kind)-unsafe.Offsetof(C.gs_sp_slot{}.kind)]

	_ = [1]int{}[C.GS_SP_SLOT_FREE^spanring.SlotFree]
	_ = [1]int{}[C.GS_SP_SLOT_OPENING^spanring.SlotOpening]
	_ = [1]int{}[C.GS_SP_SLOT_OPEN^spanring.SlotOpen]
	_ = [1]int{}[C.GS_SP_SLOT_CLOSING^spanring.SlotClosing]
	_ = [1]int{}[C.GS_SP_SLOT_CLOSED^spanring.SlotClosed]
	_ = [1]int{}[C.GS_SP_SLOT_LENT^spanring.SlotLent]
	_ = [1]int{}[C.GS_SP_STATE_MASK^spanring.StateMask]
	_ = [1]int{}[C.GS_SP_POS_SHIFT^spanring.PosShift]
	_ = [1]int{}[C.GS_SP_LENT_NONE^spanring.LentNone]
	_ = [1]int{}[C.GS_SP_LENT_WAITING^spanring.LentWaiting]
	_ = [1]int{}[C.GS_SP_LENT_LANDED^spanring.LentLanded]
	_ = [1]int{}[C.GS_SP_LANE_RESERVING^spanring.LaneReserving]
	_ = [1]int{}[C.GS_SP_NEXT_SEALED^spanring.NextSealed]
	_ = [1]int{}[C.GS_SP_STATUS_PENDING^spanring.StatusPending]
	_ = [1]int{}[C.GS_SP_STATUS_OPEN^spanring.StatusOpen]
	_ = [1]int{}[C.GS_SP_STATUS_DEAD^spanring.StatusDead]
	_ = [1]int{}[C.GS_SP_STATUS_MASK^spanring.StatusStateMask]
	_ = [1]int{}[C.GS_SP_STATUS_RETIRED^spanring.StatusRetired]
	_ = [1]int{}[C.GS_SP_KIND_LANE^uint32(gpuspans.KindLane)]
	_ = [1]int{}[C.GS_SP_DROP_SLOT_BUSY^int(gpuspans.DropSlotBusy)]
	_ = [1]int{}[C.GS_SP_DROP_CAPTURING^int(gpuspans.DropCapturing)]
	_ = [1]int{}[C.GS_SP_DROP_RETIRED^int(gpuspans.DropRetired)]
	_ = [1]int{}[unsafe.Sizeof(atomic.Bool{})-4] // C reads it as a uint32
)

// spanPathEnv chooses the step and lane calls' path: "c" (the default)
// records in C where it can, "go" sends every call into Go, as before the C
// path existed.
const spanPathEnv = "GPUSPANS_SPAN_PATH"

// spanPathChoice is $GPUSPANS_SPAN_PATH read once, at the first
// gs_hub_create: whether hubs publish to the C path, or the error
// gs_hub_create returns for a value it does not know. It is read with C's
// getenv, so that a value set after the process started (Python's
// os.environ) counts: Go's own environment is a copy made when the library
// loaded.
var spanPathChoice = sync.OnceValues(func() (bool, error) {
	name := C.CString(spanPathEnv)
	defer C.free(unsafe.Pointer(name))
	var v string
	if p := C.getenv(name); p != nil {
		v = C.GoString(p)
	}
	switch v {
	case "", "c":
		return true, nil
	case "go":
		return false, nil
	default:
		return false, fmt.Errorf("%s is %q: want c (steps and lane spans recorded in C, the default) or go", spanPathEnv, v)
	}
})

// spHub returns the C path's words of a hub slot.
func spHub(slot int) *C.gs_sp_hub { return &C.gs_sp_hubs[slot] }

func spHandle(slot int) *uint64 { return (*uint64)(unsafe.Pointer(&spHub(slot).handle)) }
func spActive(slot int) *int64  { return (*int64)(unsafe.Pointer(&spHub(slot).active)) }
func spSet(slot int) *uintptr   { return (*uintptr)(unsafe.Pointer(&spHub(slot).set)) }

// A spanPath publishes one hub's ring words to the C path (a
// spanring.Publisher). Sets it replaced wait in retired until the C calls
// running on the hub have all been seen to end once (active 0), since one
// that began before the replacement may still read them.
type spanPath struct {
	slot int

	mu      sync.Mutex
	cur     *published
	retired []*published
	byID    map[uint64]*published // cur and retired
	nextID  uint64
	closed  bool
	waiting atomic.Bool // retired is not empty
}

// published is one set: its C memory, the views it was made of (for Fail),
// and the pins that keep the Go words it points to where C reads them.
type published struct {
	id   uint64
	c    *C.gs_sp_set
	hub  spanring.Hub
	recs []spanring.Recorder
	pins runtime.Pinner
}

func newSpanPath(slot int) *spanPath {
	return &spanPath{slot: slot, byID: map[uint64]*published{}}
}

// Publish makes the C path use h and recs from its next call on. It runs
// under the hub's harvest lock: it allocates and pins, never waits.
func (p *spanPath) Publish(h spanring.Hub, recs []spanring.Recorder) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	size := unsafe.Sizeof(C.gs_sp_set{}) + uintptr(len(recs))*unsafe.Sizeof(C.gs_sp_rec{})
	cs := (*C.gs_sp_set)(C.calloc(1, C.size_t(size)))
	var pub *published
	if cs != nil {
		p.nextID++
		pub = &published{id: p.nextID, c: cs, hub: h, recs: recs}
		pub.fill(h)
		p.byID[pub.id] = pub
	}
	// No memory for a set: the C path sends every call to Go until the next
	// publication, which is what it does for a set it cannot use.
	atomic.StoreUintptr(spSet(p.slot), uintptr(unsafe.Pointer(cs)))
	if p.cur != nil {
		p.retired = append(p.retired, p.cur)
		p.waiting.Store(true)
	}
	p.cur = pub
	p.freeQuiet()
}

// fill writes the set's C memory and pins the Go words it points to.
func (pub *published) fill(h spanring.Hub) {
	cs := pub.c
	cs.id = C.uint64_t(pub.id)
	cs.step = (*C.uint64_t)(pin(&pub.pins, unsafe.Pointer(h.Step)))
	cs.open_lanes = (*C.int64_t)(pin(&pub.pins, unsafe.Pointer(h.OpenLanes)))
	cs.lane_already_open = (*C.uint64_t)(pin(&pub.pins, unsafe.Pointer(h.LaneAlreadyOpen)))
	cs.c_step = (*C.uint32_t)(pin(&pub.pins, unsafe.Pointer(h.CStep)))
	cs.state = (*C.uint32_t)(pin(&pub.pins, unsafe.Pointer(h.State)))
	cs.pools = (*C.int32_t)(pin(&pub.pins, unsafe.Pointer(h.Pools)))
	cs.leak_clock = (*C.uint64_t)(pin(&pub.pins, unsafe.Pointer(h.LeakClock)))
	cs.armed_steps = (*C.uint64_t)(pin(&pub.pins, unsafe.Pointer(h.ArmedSteps)))
	cs.every = (*C.int64_t)(pin(&pub.pins, unsafe.Pointer(h.Every)))
	cs.nlanes = C.int32_t(h.Lanes)
	cs.nrecs = C.int32_t(len(pub.recs))
	crecs := unsafe.Slice((*C.gs_sp_rec)(unsafe.Add(unsafe.Pointer(cs), unsafe.Sizeof(C.gs_sp_set{}))), len(pub.recs))
	for i, r := range pub.recs {
		c := &crecs[i]
		c.status = (*C.uint32_t)(pin(&pub.pins, unsafe.Pointer(r.Status)))
		c.next = (*C.uint64_t)(pin(&pub.pins, unsafe.Pointer(r.Next)))
		c.stream = C.uint64_t(r.Stream)
		c.errored = (*C.uint64_t)(pin(&pub.pins, unsafe.Pointer(r.Errored)))
		c.dropped = (*C.uint64_t)(pin(&pub.pins, unsafe.Pointer(&r.Dropped[0])))
		if len(r.LaneTok) > 0 {
			c.lane_tok = (*C.uint64_t)(pin(&pub.pins, unsafe.Pointer(&r.LaneTok[0])))
		}
		// A pool the core does not own (a simulated device) leaves pool
		// NULL: C sends the hub's calls to Go while such a recorder is open.
		if pool := cudabridge.PoolPtr(r.Pool); pool != 0 && len(r.Slots) > 0 {
			c.slots = (*C.gs_sp_slot)(pin(&pub.pins, unsafe.Pointer(&r.Slots[0])))
			c.nslots = C.uint64_t(len(r.Slots))
			c.pool = C.uintptr_t(pool)
		}
	}
}

// pin pins the Go object holding p for as long as the set lives.
func pin(pins *runtime.Pinner, p unsafe.Pointer) unsafe.Pointer {
	pins.Pin(p)
	return p
}

// free releases a set no C call can hold any more. Caller holds p.mu.
func (p *spanPath) free(pub *published) {
	delete(p.byID, pub.id)
	C.free(unsafe.Pointer(pub.c))
	pub.pins.Unpin()
}

// freeQuiet frees the retired sets if no C call is running on the hub: a
// call counts itself before it reads the set, so once the count is seen at
// 0 after a set was replaced, no call holds it. Caller holds p.mu.
func (p *spanPath) freeQuiet() {
	if len(p.retired) == 0 || atomic.LoadInt64(spActive(p.slot)) != 0 {
		return
	}
	for i, pub := range p.retired {
		p.free(pub)
		p.retired[i] = nil
	}
	p.retired = p.retired[:0]
	p.waiting.Store(false)
}

// tidy frees retired sets when some wait; the step calls it, so a set
// replaced while C calls ran is freed within a step or two.
func (p *spanPath) tidy() {
	if !p.waiting.Load() {
		return
	}
	p.mu.Lock()
	p.freeQuiet()
	p.mu.Unlock()
}

// open makes the C path serve handle's calls. gs_hub_create calls it once
// the hub is in the table.
func (p *spanPath) open(handle uint64) { atomic.StoreUint64(spHandle(p.slot), handle) }

// shut stops the C path for the hub: calls from now on go to Go (which
// refuses them, the hub being closed), and it returns once those already
// in C have left. gs_hub_close calls it before it waits for Go's calls.
func (p *spanPath) shut() {
	atomic.StoreUint64(spHandle(p.slot), 0)
	for atomic.LoadInt64(spActive(p.slot)) != 0 {
		runtime.Gosched()
	}
}

// release frees every set once the hub is closed: shut has run, and the
// hub publishes no more.
func (p *spanPath) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	atomic.StoreUintptr(spSet(p.slot), 0)
	if p.cur != nil {
		p.retired = append(p.retired, p.cur)
		p.cur = nil
	}
	for _, pub := range p.retired {
		p.free(pub)
	}
	p.retired = nil
	p.waiting.Store(false)
}

// recorder returns recorder rec of set id, which a C call still holds.
func (p *spanPath) recorder(id uint64, rec int) (spanring.Recorder, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pub := p.byID[id]
	if pub == nil || rec < 0 || rec >= len(pub.recs) {
		return spanring.Recorder{}, false
	}
	return pub.recs[rec], true
}

var spanOps = [...]string{C.GS_SP_OP_BEGIN: "RecordBegin", C.GS_SP_OP_END: "RecordEnd", C.GS_SP_OP_NEXT: "RecordNext"}

// gs_sp_span_failed ends a span whose record failed in the C path, as the
// Go path ends one (spanpath.h). The C call that makes it is counted in
// active, so neither the hub nor the set can go meanwhile.
//
//export gs_sp_span_failed
func gs_sp_span_failed(handle, setID C.uint64_t, rec C.int32_t, pos C.uint64_t, op, status, cu C.int32_t) {
	defer func() { _ = recover() }() // nothing may cross into C; the span stays claimed, reclaimed as leaked
	e := table[uint64(handle)%maxHubs].Load()
	if e == nil || e.handle != uint64(handle) || e.spans == nil {
		return
	}
	r, ok := e.spans.recorder(uint64(setID), int(rec))
	if !ok || r.Fail == nil {
		return
	}
	name := "Record"
	if int(op) >= 0 && int(op) < len(spanOps) {
		name = spanOps[op]
	}
	r.Fail(uint64(pos), cudabridge.RecordError(name, int32(status), int32(cu))) // go/cuda sets it in any cgo build
}

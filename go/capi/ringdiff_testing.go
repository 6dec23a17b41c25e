//go:build cgo && gpuspans_testing

package main

/*
#include "spanpath.h"

// The C span path's calls (hub.h declares them; spanpath.h includes it
// for its types only).
gs_hub_status gs_hub_lane_begin_call(gs_hub hub, int32_t lane);
gs_hub_status gs_hub_lane_end_call(gs_hub hub, int32_t lane);
gs_hub_status gs_hub_next_lane_call(gs_hub hub, int32_t from, int32_t to);
gs_hub_status gs_hub_begin_step_call(gs_hub hub);
*/
import "C"

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/spanring/spanringtest"
)

// gs_hub_testing_ring_diff drives hub through ops random operations from
// seed (spanringtest.Ops: step begins, lane begins, ends and shared
// boundaries, each through the C path or Go's at random, and harvests) and
// compares the ring's and the hub's step words with spanringtest's model
// after every one; an operation sent to C must not enter Go. The hub has
// one recorder, open on the fake driver at level Kernel, whose events
// complete at once, kernel timing events and no harvester, and nothing
// else may call it meanwhile: the driver runs a RunHarvester whose tick
// never comes, so that steps may be taken in C. It returns 0 when every
// operation left the words as the model says; else 1, with the first
// difference and the operations before it in buf (a C string cut to cap),
// or 2 when the hub cannot be driven so.
//
//export gs_hub_testing_ring_diff
func gs_hub_testing_ring_diff(handle C.gs_hub, ops C.uint64_t, seed C.int64_t, buf *C.char, capacity C.size_t) C.int32_t {
	code, msg := ringDiff(handle, uint64(ops), int64(seed))
	if buf != nil && capacity > 0 {
		w := min(uint64(capacity)-1, uint64(len(msg)))
		dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), w+1)
		copy(dst, msg[:w])
		dst[w] = 0
	}
	return C.int32_t(code)
}

func ringDiff(handle C.gs_hub, ops uint64, seed int64) (int, string) {
	e := lookup(handle)
	if e == nil || e.spans == nil {
		return 2, "no hub, or no C path for it"
	}
	e.spans.mu.Lock()
	pub := e.spans.cur
	e.spans.mu.Unlock()
	if pub == nil || len(pub.recs) != 1 || pub.recs[0].Pool == nil {
		return 2, "the hub needs one recorder with an open pool"
	}
	rec, hub := pub.recs[0], pub.hub
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.h.RunHarvester(ctx, 24*time.Hour) }()
	defer func() { stop(); <-done }()
	for deadline := time.Now().Add(5 * time.Second); !hub.CStep.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return 2, "steps cannot be taken in C with a harvester running: is kernel timing events?"
		}
	}
	steps := func() spanringtest.Steps {
		return spanringtest.Steps{Step: hub.Step.Load(), LeakClock: hub.LeakClock.Load(), ArmedSteps: hub.ArmedSteps.Load(),
			State: atomic.LoadUint32(hub.State), Mirror: atomic.LoadUint32(e.word)}
	}
	ring := func() spanringtest.Ring {
		return spanringtest.Ring{Rec: rec, OpenLanes: hub.OpenLanes.Load(), LaneAlreadyOpen: hub.LaneAlreadyOpen.Load(), Steps: steps()}
	}
	first := steps()
	m := spanringtest.New(spanringtest.Config{Slots: len(rec.Slots), Lanes: hub.Lanes, Kind: uint32(gpuspans.KindLane),
		Every: uint64(hub.Every.Load()), ArmedBit: gpuspans.MirrorArmed, PoolsBit: gpuspans.MirrorPools}, first)
	m.Next = rec.Next.Load()
	for i := range rec.Slots { // the ring as the hub's opening left it: free
		s := &rec.Slots[i]
		m.Slots[i] = spanringtest.Slot{Word: s.Word.Load(), Key: s.Key, Step: s.Step, Kind: s.Kind}
	}
	if d := m.Diff(ring()); d != "" {
		return 2, "the ring was not fresh:\n" + d
	}
	g := spanringtest.NewOps(seed, hub.Lanes)
	const keep = 12
	var last [keep]spanringtest.Op
	counting := countCrossings.Swap(true)
	defer countCrossings.Store(counting)
	for i := uint64(0); i < ops; i++ {
		op := g.Op()
		last[i%keep] = op
		from, to := C.int32_t(op.From), C.int32_t(op.To)
		var st C.gs_hub_status
		before := crossings.Load()
		switch {
		case op.Kind == spanringtest.Harvest:
			st = gs_hub_harvest_go(handle)
		case op.Kind == spanringtest.Step && op.C:
			st = C.gs_hub_begin_step_call(handle)
		case op.Kind == spanringtest.Step:
			st = gs_hub_begin_step_go(handle)
		case op.Kind == spanringtest.Begin && op.C:
			st = C.gs_hub_lane_begin_call(handle, to)
		case op.Kind == spanringtest.Begin:
			st = gs_hub_lane_begin_go(handle, to)
		case op.Kind == spanringtest.End && op.C:
			st = C.gs_hub_lane_end_call(handle, to)
		case op.Kind == spanringtest.End:
			st = gs_hub_lane_end_go(handle, to)
		case op.C:
			st = C.gs_hub_next_lane_call(handle, from, to)
		default:
			st = gs_hub_next_lane_go(handle, from, to)
		}
		if st != statusOK {
			return 1, fmt.Sprintf("op %d (%v) returned status %d", i, op, int(st))
		}
		if op.C && crossings.Load() != before {
			return 1, fmt.Sprintf("op %d (%v) entered Go", i, op)
		}
		m.Apply(op)
		if d := m.Diff(ring()); d != "" {
			var b strings.Builder
			fmt.Fprintf(&b, "after op %d of seed %d, %v:\n%s", i, seed, op, d)
			b.WriteString("the ops before it, oldest first:")
			for j := i - min(i, keep-1); j <= i; j++ {
				fmt.Fprintf(&b, " [%v]", last[j%keep])
			}
			return 1, b.String()
		}
	}
	s := e.h.Snapshot()
	if s.Counters.Landed != m.Landed || s.Counters.Dropped[gpuspans.DropSlotBusy] != m.DroppedBusy {
		return 1, fmt.Sprintf("after %d ops: landed %d and dropped %d, the model %d and %d", ops,
			s.Counters.Landed, s.Counters.Dropped[gpuspans.DropSlotBusy], m.Landed, m.DroppedBusy)
	}
	return 0, fmt.Sprintf("%d ops of seed %d: %d steps (%d armed), %d spans landed, %d begun at another's end event, %d dropped (slot busy), %d lane begins on an open lane; every word as the model says after each",
		ops, seed, m.Steps.LeakClock-first.LeakClock, m.Steps.ArmedSteps-first.ArmedSteps, m.Landed, m.Lends, m.DroppedBusy, m.LaneAlreadyOpen)
}

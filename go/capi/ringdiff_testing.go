//go:build cgo && gpuspans_testing

package main

/*
#include "spanpath.h"

// The C span path's calls (hub.h declares them; spanpath.h includes it
// for its types and its state word tests only).
gs_hub_status gs_hub_lane_begin_call(gs_hub hub, int32_t lane);
gs_hub_status gs_hub_lane_end_call(gs_hub hub, int32_t lane);
gs_hub_status gs_hub_next_lane_call(gs_hub hub, int32_t from, int32_t to);
gs_hub_status gs_hub_begin_step_call(gs_hub hub);
gs_hub_status gs_hub_next_step_call(gs_hub hub, int32_t last, int32_t first);

// The fake driver's knobs (cuda/include/gpuspans/gpuspans_testing.h), in
// the tests' library with the fake (crossings_testing.go).
void gs_testing_fake_record_result(int32_t cu_result, int32_t times);
void gs_testing_fake_set_capturing(uint64_t stream, int32_t mode);
void gs_testing_fake_set_sticky(int32_t cu_result);
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
// seed (spanringtest.Ops: steps, next steps, lane begins, ends and shared
// boundaries, each through the C path or Go's at random, some with a
// failing record; kernel spans, harvests (some failing sticky), levels and
// periods, captures, installs and uninstalls, through Go) and compares
// every recorder's ring, the device's counts and the hub's step words with
// spanringtest's model after every one, and its snapshot's counts after
// the rare ops. An operation sent to C is made as hub.h's inline function
// makes it, and enters Go only where the model says (a pool to open, an
// unknown lane). The hub has one recorder, open on the fake driver at
// level Kernel on device 0's stream 0x7e570000, whose events
// complete at once, kernel timing events and no harvester, and nothing
// else may call it meanwhile: the driver runs a RunHarvester whose tick
// never comes, so that steps may be taken in C. It returns 0 when every
// operation left the words as the model says; else 1, with "diverged after
// op N" and the difference, and the operations before it, in buf (a C
// string cut to cap); or 2 when the hub cannot be driven so.
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

// The ring's device and lane stream, and the CUresults the faults return.
const (
	ringDevice     = 0
	ringStream     = 0x7e570000 // testdata/ringdiff_test.c's
	cuInvalidValue = 1          // CUDA_ERROR_INVALID_VALUE: an error
	cuIllegalAddr  = 700        // CUDA_ERROR_ILLEGAL_ADDRESS: sticky
)

func ringDiff(handle C.gs_hub, ops uint64, seed int64) (int, string) {
	e := lookup(handle)
	if e == nil || e.spans == nil {
		return 2, "no hub, or no C path for it"
	}
	published := func() *published {
		e.spans.mu.Lock()
		defer e.spans.mu.Unlock()
		return e.spans.cur
	}
	pub := published()
	if pub == nil || len(pub.recs) != 1 || pub.recs[0].Pool == nil {
		return 2, "the hub needs one recorder with an open pool"
	}
	first, hub := pub.recs[0], pub.hub
	if first.Stream != ringStream {
		return 2, fmt.Sprintf("the recorder records on stream %#x, want %#x", first.Stream, ringStream)
	}
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
	var views spanringtest.Views
	views.See(pub.recs)
	ring := func() spanringtest.Ring {
		if pub := published(); pub != nil {
			views.See(pub.recs)
		}
		return spanringtest.Ring{Recs: views.Recs(), Dropped: first.Dropped, Errored: first.Errored,
			OpenLanes: hub.OpenLanes.Load(), LaneAlreadyOpen: hub.LaneAlreadyOpen.Load(), Steps: steps()}
	}
	start := steps()
	m := spanringtest.New(spanringtest.Config{Slots: len(first.Slots), Lanes: hub.Lanes, LaneKind: uint32(gpuspans.KindLane), KernelKind: uint32(gpuspans.KindKernel),
		Every: uint64(hub.Every.Load()), ArmedBit: gpuspans.MirrorArmed, PoolsBit: gpuspans.MirrorPools, LevelMask: C.GS_HUB_WORD_LEVEL,
		Drops: [3]int{int(gpuspans.DropSlotBusy), int(gpuspans.DropCapturing), int(gpuspans.DropRetired)}}, start)
	if d := m.Diff(ring()); d != "" {
		return 2, "the ring was not fresh:\n" + d
	}
	g := spanringtest.NewOps(seed, hub.Lanes)
	const keep = 12
	var last [keep]spanringtest.Op
	counting := countCrossings.Swap(true)
	defer countCrossings.Store(counting)
	defer C.gs_testing_fake_set_capturing(ringStream, -1)
	var kernels []gpuspans.KernelSpan // the kernel spans held, as the model's Tokens
	var unknown uint64                // the model's UnknownLane at the last snapshot
	diverged := func(i uint64, op spanringtest.Op, format string, args ...interface{}) (int, string) {
		var b strings.Builder
		fmt.Fprintf(&b, "diverged after op %d of seed %d (%v): %s\n", i, seed, op, fmt.Sprintf(format, args...))
		b.WriteString("the ops before it, oldest first:")
		for j := i - min(i, keep-1); j <= i; j++ {
			fmt.Fprintf(&b, " [%v]", last[j%keep])
		}
		return 1, b.String()
	}
	for i := uint64(0); i < ops; i++ {
		op, _ := g.Op()
		last[i%keep] = op
		from, to := C.int32_t(op.From), C.int32_t(op.To)
		switch {
		case op.Kind == spanringtest.Harvest && op.Fault != spanringtest.NoFault:
			C.gs_testing_fake_set_sticky(cuIllegalAddr)
		case op.Fault == spanringtest.RecordError:
			C.gs_testing_fake_record_result(cuInvalidValue, 1)
		case op.Fault == spanringtest.RecordSticky:
			C.gs_testing_fake_record_result(cuIllegalAddr, 1)
		}
		// hub.h's inline functions: the state word's test, then the call.
		w := C.uint32_t(atomic.LoadUint32(e.word))
		var st C.gs_hub_status = statusOK
		before := crossings.Load()
		switch {
		case op.Kind == spanringtest.Harvest:
			st = gs_hub_harvest_go(handle)
		case op.Kind == spanringtest.SetLevel:
			st = gs_hub_set_level_go(handle, C.int32_t(op.N))
		case op.Kind == spanringtest.SetEvery:
			st = gs_hub_set_kernel_span_every_go(handle, C.int32_t(op.N))
		case op.Kind == spanringtest.KernelBegin:
			sp := e.h.KernelBegin(op.Kernel, ringStream)
			if sp != (gpuspans.KernelSpan{}) {
				kernels = append(kernels, sp)
			}
		case op.Kind == spanringtest.KernelEnd:
			if len(kernels) > 0 {
				k := op.To % len(kernels)
				e.h.KernelEnd(kernels[k])
				if op.From != 0 {
					kernels = append(kernels[:k], kernels[k+1:]...)
				}
			}
		case op.Kind == spanringtest.Capture:
			mode := C.int32_t(-1)
			if op.To != 0 {
				mode = 0 // GLOBAL
			}
			C.gs_testing_fake_set_capturing(ringStream, mode)
		case op.Kind == spanringtest.Install:
			st = gs_hub_install_cuda_go(handle, ringDevice, ringStream)
		case op.Kind == spanringtest.Uninstall:
			st = gs_hub_uninstall_go(handle, ringDevice)
		case op.Kind == spanringtest.Step && op.C:
			if C.gs_hub_word_step_has_work(w) != 0 {
				st = C.gs_hub_begin_step_call(handle)
			}
		case op.Kind == spanringtest.Step:
			st = gs_hub_begin_step_go(handle)
		case op.Kind == spanringtest.NextStep && op.C:
			if C.gs_hub_word_step_has_work(w) != 0 {
				st = C.gs_hub_next_step_call(handle, from, to)
			}
		case op.Kind == spanringtest.NextStep:
			st = gs_hub_next_step_go(handle, from, to)
		case op.Kind == spanringtest.Begin && op.C:
			if C.gs_hub_word_lanes_begin(w) != 0 {
				st = C.gs_hub_lane_begin_call(handle, to)
			}
		case op.Kind == spanringtest.Begin:
			st = gs_hub_lane_begin_go(handle, to)
		case op.Kind == spanringtest.End && op.C:
			if C.gs_hub_word_lanes_end(w) != 0 {
				st = C.gs_hub_lane_end_call(handle, to)
			}
		case op.Kind == spanringtest.End:
			st = gs_hub_lane_end_go(handle, to)
		case op.C:
			if C.gs_hub_word_lanes_end(w) != 0 {
				st = C.gs_hub_next_lane_call(handle, from, to)
			}
		default:
			st = gs_hub_next_lane_go(handle, from, to)
		}
		crossed := crossings.Load() != before
		if op.Fault != spanringtest.NoFault { // a fault the op did not take lapses with it
			C.gs_testing_fake_record_result(0, 0)
			C.gs_testing_fake_set_sticky(0)
		}
		m.Apply(op)
		if (st != statusOK) != m.Refused {
			return diverged(i, op, "returned status %d; the model refuses it: %v", int(st), m.Refused)
		}
		if op.C && crossed != m.EntersGo {
			return diverged(i, op, "entered Go: %v, the model says %v", crossed, m.EntersGo)
		}
		if len(kernels) != len(m.Tokens) {
			return diverged(i, op, "%d kernel spans held, the model holds %d", len(kernels), len(m.Tokens))
		}
		if d := m.Diff(ring()); d != "" {
			return diverged(i, op, "\n%s", d)
		}
		views.Prune(m)
		// The counts only a snapshot reads: after the ops that may change
		// them (rare ones), and at the end.
		switch {
		case op.Kind == spanringtest.Install, op.Kind == spanringtest.Uninstall, op.Kind == spanringtest.KernelEnd,
			op.Kind == spanringtest.SetLevel, op.Kind == spanringtest.SetEvery, m.UnknownLane != unknown, i == ops-1:
			unknown = m.UnknownLane
			c := e.h.Snapshot().Counters
			if c.Landed != m.Landed || c.StickyDisables != m.StickyDisables || c.InstallFailures != m.InstallFailures ||
				c.BadEnd != m.BadEnd || c.UnknownLane != m.UnknownLane || c.Begun != m.Begun {
				return diverged(i, op, "landed %d, sticky disables %d, install failures %d, bad ends %d, unknown lanes %d, begun %d; the model has %d, %d, %d, %d, %d and %d",
					c.Landed, c.StickyDisables, c.InstallFailures, c.BadEnd, c.UnknownLane, c.Begun,
					m.Landed, m.StickyDisables, m.InstallFailures, m.BadEnd, m.UnknownLane, m.Begun)
			}
		}
	}
	return 0, fmt.Sprintf("%d ops of seed %d: %d steps (%d armed), %d spans landed, %d errored, %d begun at another's end event, dropped %d (slot busy) %d (capturing) %d (retired), %d lane begins on an open lane, %d on an unknown one, %d bad kernel ends, %d sticky disables, %d failed opens; every word as the model says after each",
		ops, seed, m.Steps.LeakClock-start.LeakClock, m.Steps.ArmedSteps-start.ArmedSteps, m.Landed, m.Errored, m.Lends,
		m.Dropped[0], m.Dropped[1], m.Dropped[2], m.LaneAlreadyOpen, m.UnknownLane, m.BadEnd, m.StickyDisables, m.InstallFailures)
}

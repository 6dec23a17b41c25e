//go:build cgo

package cudatest

/*
#cgo CFLAGS: -I${SRCDIR}/../../../cuda/include -I${SRCDIR}/../../../third_party/cuda
#cgo CXXFLAGS: -std=c++17 -I${SRCDIR}/../../../cuda/include -I${SRCDIR}/../../../third_party/cuda
#cgo LDFLAGS: -ldl -lstdc++
#include <stdint.h>
#include <stdlib.h>
#include "gpuspans/gpuspans_testing.h"

// The pool comes as an integer (cudabridge.PoolPtr); the C functions take no
// action on a null one.
static inline uint64_t gsgo_pool_event(uintptr_t h, uint32_t slot, int32_t end) {
  return gs_testing_pool_event((const gs_pool*)h, slot, end);
}
static inline void gsgo_set_anchor_interval(uintptr_t h, int64_t ns) {
  gs_pool_set_anchor_interval((gs_pool*)h, ns);
}
*/
import "C"

import (
	"time"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/internal/cudabridge"
)

// FakeDriver steers the fake CUDA driver. Its methods, like the functions
// below, must not run concurrently with each other, with cuda.Load, or with
// cuda.Open; pool calls may run concurrently once the knobs are set. See
// cuda/include/gpuspans/gpuspans_testing.h for the fake's model: a settable
// GPU clock, a busy-until time per stream, and events that complete once
// the clock reaches their timestamp.
type FakeDriver struct{}

// UseFakeDriver resets the fake (clock 0, one device, no knobs, counters
// zero) and makes the next cuda.Load, cuda.Open or NewKit use it instead of
// libcuda.so.1. Close pools made with the previous driver first.
func UseFakeDriver() *FakeDriver {
	C.gs_testing_use_fake_driver()
	return &FakeDriver{}
}

// UseRealDriver makes the next cuda.Load load libcuda.so.1 again.
func UseRealDriver() { C.gs_testing_use_real_driver() }

// SetCaptureModeExchange turns off (false) or back on the switch to RELAXED
// capture mode around harvest queries, with any driver, to show in a test
// what it prevents.
func SetCaptureModeExchange(enabled bool) {
	var v C.int32_t
	if enabled {
		v = 1
	}
	C.gs_testing_set_capture_mode_exchange(v)
}

// SetAnchorInterval sets how often p's Harvest re-anchors GPU time to the
// host clock (default 500 ms; d <= 0 restores it), so a test sees a
// re-anchor without waiting. Safe from any goroutine.
func SetAnchorInterval(p *cuda.Pool, d time.Duration) {
	C.gsgo_set_anchor_interval(C.uintptr_t(cudabridge.PoolPtr(p)), C.int64_t(d))
}

// FailOpen makes loading the fake library fail, as dlopen does without a
// driver.
func (*FakeDriver) FailOpen(fail bool) {
	var v C.int32_t
	if fail {
		v = 1
	}
	C.gs_testing_fake_fail_open(v)
}

// DropSymbol makes the fake library lack the exported symbol name (e.g.
// "cuEventRecord").
func (*FakeDriver) DropSymbol(name string) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	C.gs_testing_fake_drop_symbol(cs)
}

// InitResult sets what cuInit returns.
func (*FakeDriver) InitResult(code int32) { C.gs_testing_fake_init_result(C.int32_t(code)) }

// Kernels makes the fake driver load modules and launch kernels from the
// next load on, each launch queueing launch of work on its stream, so a
// pool's offset calibration measures launch; a negative launch hides those
// calls (the default).
func (*FakeDriver) Kernels(launch time.Duration) { C.gs_testing_fake_kernels(C.int64_t(launch)) }

// SetDeviceCount sets the number of fake devices (1 to 8).
func (*FakeDriver) SetDeviceCount(n int) { C.gs_testing_fake_set_device_count(C.int32_t(n)) }

// FailEventCreate makes the k-th cuEventCreate from now (k >= 1) return
// code; k <= 0 clears it.
func (*FakeDriver) FailEventCreate(k int, code int32) {
	C.gs_testing_fake_fail_event_create(C.int32_t(k), C.int32_t(code))
}

// RecordResult makes the next times cuEventRecord calls (times < 0: all)
// return code without recording.
func (*FakeDriver) RecordResult(code int32, times int) {
	C.gs_testing_fake_record_result(C.int32_t(code), C.int32_t(times))
}

// Force makes the next times calls of ops on slot's begin (end false) or
// end event of p return code (times < 0: until a call with times 0).
// Code 600 (CUDA_ERROR_NOT_READY) holds a span in flight.
func (*FakeDriver) Force(p *cuda.Pool, slot int, end bool, ops FakeOp, code int32, times int) {
	var e C.int32_t
	if end {
		e = 1
	}
	ev := C.gsgo_pool_event(C.uintptr_t(cudabridge.PoolPtr(p)), C.uint32_t(slot), e)
	C.gs_testing_fake_force(ev, C.int32_t(ops), C.int32_t(code), C.int32_t(times))
}

// SetSticky makes every later fake call return code, as after a sticky
// error (e.g. 700, CUDA_ERROR_ILLEGAL_ADDRESS); 0 clears it.
func (*FakeDriver) SetSticky(code int32) { C.gs_testing_fake_set_sticky(C.int32_t(code)) }

// Advance moves the fake GPU clock forward by d.
func (*FakeDriver) Advance(d time.Duration) { C.gs_testing_fake_advance(C.int64_t(d)) }

// Now is the fake GPU clock.
func (*FakeDriver) Now() time.Duration { return time.Duration(C.gs_testing_fake_now()) }

// StreamWork queues d of work on s: events recorded on s after this
// complete once the clock passes the work.
func (*FakeDriver) StreamWork(s backend.Stream, d time.Duration) {
	C.gs_testing_fake_stream_work(C.uint64_t(s), C.int64_t(d))
}

// SetCapturing starts a pretend capture of s in mode: records on s become
// captured events, and in CaptureGlobal mode a query made outside RELAXED
// mode breaks the capture (Counters().CapturesInvalidated).
func (*FakeDriver) SetCapturing(s backend.Stream, mode cudakit.CaptureMode) {
	C.gs_testing_fake_set_capturing(C.uint64_t(s), C.int32_t(mode))
}

// EndCapture ends a pretend capture of s.
func (*FakeDriver) EndCapture(s backend.Stream) { C.gs_testing_fake_set_capturing(C.uint64_t(s), -1) }

// Counters returns the fake's call counts.
func (*FakeDriver) Counters() FakeCounters {
	var c C.gs_fake_counters
	C.gs_testing_fake_counters(&c)
	return FakeCounters{
		DriverCalls:         int64(c.driver_calls),
		Inits:               int64(c.inits),
		EventCreates:        int64(c.event_creates),
		EventDestroys:       int64(c.event_destroys),
		LiveEvents:          int64(c.live_events),
		EventRecords:        int64(c.event_records),
		RecordsIntoCapture:  int64(c.records_into_capture),
		EventQueries:        int64(c.event_queries),
		EventElapsed:        int64(c.event_elapsed),
		IsCapturing:         int64(c.is_capturing),
		ModeExchanges:       int64(c.mode_exchanges),
		UnrelaxedQueries:    int64(c.unrelaxed_queries),
		CapturesInvalidated: int64(c.captures_invalidated),
		CtxPushes:           int64(c.ctx_pushes),
		CtxPops:             int64(c.ctx_pops),
		CtxSets:             int64(c.ctx_sets),
		RetainedContexts:    int64(c.retained_contexts),
		LiveStreams:         int64(c.live_streams),
		DestroysInFlight:    int64(c.destroys_in_flight),
		LiveModules:         int64(c.live_modules),
	}
}

// ResetCounters zeroes the call counts (not the levels).
func (*FakeDriver) ResetCounters() { C.gs_testing_fake_reset_counters() }

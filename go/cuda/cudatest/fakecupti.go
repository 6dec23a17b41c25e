//go:build cgo

package cudatest

/*
#include <stdint.h>
#include <stdlib.h>
#include "gpuspans/tracer_testing.h"
*/
import "C"

import (
	"time"
	"unsafe"
)

// FakeCUPTI steers the fake CUPTI that cuda.OpenTracer loads after
// UseFakeCUPTI. Its methods must not run concurrently with each other or
// with cuda.OpenTracer or Tracer.Close; tracer calls may run concurrently
// once the knobs are set.
type FakeCUPTI struct{}

// UseFakeCUPTI resets the fake (CUPTI API version 130001, nothing queued,
// no knobs) and makes later cuda.OpenTracer calls load it. Close any open
// tracer first.
func UseFakeCUPTI() *FakeCUPTI {
	C.gs_testing_use_fake_cupti()
	return &FakeCUPTI{}
}

// UseRealCUPTI makes later cuda.OpenTracer calls load libcupti again.
func UseRealCUPTI() { C.gs_testing_use_real_cupti() }

// SetVersion sets the CUPTI API version the fake reports.
func (*FakeCUPTI) SetVersion(v uint32) { C.gs_testing_cupti_version(C.uint32_t(v)) }

// FailOpen makes loading the fake library fail, as dlopen does without CUPTI.
func (*FakeCUPTI) FailOpen(fail bool) { C.gs_testing_cupti_fail_open(cbool(fail)) }

// OtherSubscriber makes the fake answer that another client (a profiler)
// holds CUPTI.
func (*FakeCUPTI) OtherSubscriber(other bool) { C.gs_testing_cupti_other_subscriber(cbool(other)) }

// FailEnable makes turning collection on fail with CUPTI result code (0:
// succeed again).
func (*FakeCUPTI) FailEnable(code int32) { C.gs_testing_cupti_fail_enable(C.int32_t(code)) }

// Kernel queues a record of a kernel run on device and stream from start to
// end (ns on the fake's clock), named name (mangled or plain), replayed from
// graph (0: none), if collection is on; it reports whether it was recorded.
func (*FakeCUPTI) Kernel(device, stream uint32, start, end int64, name string, graph uint32) bool {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return C.gs_testing_cupti_kernel(C.uint32_t(device), C.uint32_t(stream), C.int64_t(start), C.int64_t(end), cs, C.uint32_t(graph)) != 0
}

// Drop makes the next delivery report n records lost on device.
func (*FakeCUPTI) Drop(device uint32, n uint64) {
	C.gs_testing_cupti_drop(C.uint32_t(device), C.uint64_t(n))
}

// Deliver hands the queued records to the tracer as CUPTI's flush would, in
// buffers of perBuffer records, and returns how many were written (records
// for which the tracer had no buffer are reported lost instead).
func (*FakeCUPTI) Deliver(perBuffer int) int {
	return int(C.gs_testing_cupti_deliver(C.int32_t(perBuffer)))
}

// SetClockOffset sets how far the fake's clock (cuptiGetTimestamp) runs
// behind Unix time, in ns.
func (*FakeCUPTI) SetClockOffset(ns int64) { C.gs_testing_cupti_clock_offset(C.int64_t(ns)) }

// Enabled reports whether collection is on.
func (*FakeCUPTI) Enabled() bool { return C.gs_testing_cupti_enabled() != 0 }

// Calls reports how often collection was turned on and off.
func (*FakeCUPTI) Calls() (enables, disables int64) {
	var e, d C.int64_t
	C.gs_testing_cupti_calls(&e, &d)
	return int64(e), int64(d)
}

// Finalizes reports how often CUPTI was detached (cuptiFinalize).
func (*FakeCUPTI) Finalizes() int64 { return int64(C.gs_testing_cupti_finalizes()) }

func cbool(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}

// GraphLaunch plays a CUDA graph replay on this thread: one made while CUPTI
// is attached with collection off, or by another thread than the one that
// attached it, breaks the next finalize, as on the H200 (BadFinalizes
// counts them); replays after such a finalize fail with 719. A window's
// launch watch sees it.
func (*FakeCUPTI) GraphLaunch() int { return int(C.gs_testing_cupti_graph_launch()) }

// GraphLaunchFor is GraphLaunch with the replay in flight for hold: a
// disable or finalize meanwhile breaks the next finalize. A replay inside
// the launch guard (cuda.GuardLaunch) is not, by itself, a reason for a
// finalize to break.
func (*FakeCUPTI) GraphLaunchFor(hold time.Duration) int {
	return int(C.gs_testing_cupti_graph_launch_for(C.int64_t(hold)))
}

// KernelLaunch plays an eager kernel launch on this thread, as a window's
// launch watch sees it.
func (*FakeCUPTI) KernelLaunch() { C.gs_testing_cupti_kernel_launch() }

// Copy queues a record of a copy (memset false) or a memset run on device
// and stream from start to end (ns on the fake's clock), from graph (0:
// none), if a window collects copies; it reports whether it was recorded.
func (*FakeCUPTI) Copy(device, stream uint32, start, end int64, memset bool, graph uint32) bool {
	return C.gs_testing_cupti_copy(C.uint32_t(device), C.uint32_t(stream), C.int64_t(start), C.int64_t(end), cbool(memset), C.uint32_t(graph)) != 0
}

// LaunchCall plays a runtime API call cbid (CallLaunchKernel,
// CallGraphLaunch) by this thread and returns its correlation id, which
// kernels it launched carry; 0 when a window's watch did not see it. A
// watch by callbacks times the call itself; one by activity records gets
// start and end (ns on the fake's clock).
func (*FakeCUPTI) LaunchCall(cbid uint32, start, end int64) uint32 {
	return uint32(C.gs_testing_cupti_api_call(1, C.uint32_t(cbid), C.int64_t(start), C.int64_t(end)))
}

// BadFinalizes counts finalizes that followed a replay made while attached
// with collection off, or by another thread.
func (*FakeCUPTI) BadFinalizes() int64 { return int64(C.gs_testing_cupti_bad_finalizes()) }

// Attached reports whether CUPTI is attached now.
func (*FakeCUPTI) Attached() bool { return C.gs_testing_cupti_attached() != 0 }

// ExpectThread makes the fake count the tracer's CUPTI calls from any other
// thread than tid (ThreadID's; 0: any) from now on; StrayCalls returns the
// count.
func (*FakeCUPTI) ExpectThread(tid int64) { C.gs_testing_cupti_expect_thread(C.int64_t(tid)) }

// StrayCalls counts the tracer's CUPTI calls off the expected thread.
func (*FakeCUPTI) StrayCalls() int64 { return int64(C.gs_testing_cupti_stray_calls()) }

// ThreadID is the calling thread's kernel id: lock the goroutine to its
// thread (runtime.LockOSThread) for it to mean anything.
func ThreadID() int64 { return int64(C.gs_testing_thread_id()) }

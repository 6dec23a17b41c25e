//go:build cgo

package cudakit

/*
#cgo CFLAGS: -I${SRCDIR}/../../../cuda/include -I${SRCDIR}/../../../third_party/cuda
#cgo CXXFLAGS: -std=c++17 -I${SRCDIR}/../../../cuda/include -I${SRCDIR}/../../../third_party/cuda
#cgo LDFLAGS: -ldl -lstdc++
#include <stdint.h>
#include "gpuspans/gpuspans_kit.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/internal/cudabridge"
)

// Kit is the GPU kit: streams, a %globaltimer spin kernel that can report
// its own start and end, an empty kernel, and graph capture. It is for the
// demo, benchmarks and GPU tests, never for a serving engine's paths (Sync
// and Timer.Read wait for the GPU). Its methods may be called from any
// goroutine; a capture in CaptureGlobal or CaptureThreadLocal mode must end
// on the OS thread that began it, so lock the goroutine to its thread
// (runtime.LockOSThread) around CaptureBegin and CaptureEnd.
type Kit struct {
	k      *C.gs_kit
	device int
}

// Timer is device memory for one spin kernel's own %globaltimer readings:
// one pair for Spin, one per CTA for SpinGrid.
type Timer struct {
	k    *Kit
	dptr C.uint64_t
	ctas int
}

// NewKit loads the driver, retains device's primary context and loads the
// kit's kernels (PTX, compiled by the driver). It fails, wrapping
// backend.ErrNoDriver, with the fake driver, which has no kernels.
func NewKit(device int) (*Kit, error) {
	var k *C.gs_kit
	var e C.gs_error
	if C.gs_kit_create(C.int32_t(device), &k, &e) != C.GS_OK {
		return nil, cudabridge.ErrorOf("NewKit", unsafe.Pointer(&e))
	}
	return &Kit{k: k, device: device}, nil
}

// kitCall runs one kit call and turns its status into an error.
func kitCall(op string, call func(*C.gs_error) C.gs_status) error {
	var e C.gs_error
	if call(&e) != C.GS_OK {
		return cudabridge.ErrorOf(op, unsafe.Pointer(&e))
	}
	return nil
}

// Close unloads the kernels and releases the context. Destroy the kit's
// streams, timers and graphs first.
func (k *Kit) Close() error {
	err := kitCall("Kit.Close", func(e *C.gs_error) C.gs_status { return C.gs_kit_destroy(k.k, e) })
	k.k = nil
	return err
}

// NewStream creates a non-blocking stream; destroy it with DestroyStream.
func (k *Kit) NewStream() (backend.Stream, error) {
	var s C.uint64_t
	err := kitCall("Kit.NewStream", func(e *C.gs_error) C.gs_status { return C.gs_kit_stream_create(k.k, &s, e) })
	return backend.Stream(s), err
}

// DestroyStream destroys a stream made by NewStream.
func (k *Kit) DestroyStream(s backend.Stream) error {
	return kitCall("Kit.DestroyStream", func(e *C.gs_error) C.gs_status {
		return C.gs_kit_stream_destroy(k.k, C.uint64_t(s), e)
	})
}

// Spin launches a one-thread kernel on s that busy-waits d on %globaltimer.
// With a non-nil t the kernel writes its first and last readings there.
func (k *Kit) Spin(s backend.Stream, d time.Duration, t *Timer) error {
	var dptr C.uint64_t
	if t != nil {
		dptr = t.dptr
	}
	return kitCall("Kit.Spin", func(e *C.gs_error) C.gs_status {
		return C.gs_kit_spin(k.k, C.uint64_t(s), C.uint64_t(d), dptr, e)
	})
}

// SpinGrid launches t's number of one-thread CTAs on s, each busy-waiting d
// on %globaltimer and writing its readings to t: a kernel as wide as the
// GPU, for accuracy checks beyond one SM.
func (k *Kit) SpinGrid(s backend.Stream, d time.Duration, t *Timer) error {
	return kitCall("Kit.SpinGrid", func(e *C.gs_error) C.gs_status {
		return C.gs_kit_spin_grid(k.k, C.uint64_t(s), C.uint64_t(d), C.uint32_t(t.ctas), t.dptr, e)
	})
}

// Empty launches the empty kernel on s.
func (k *Kit) Empty(s backend.Stream) error {
	return kitCall("Kit.Empty", func(e *C.gs_error) C.gs_status { return C.gs_kit_empty(k.k, C.uint64_t(s), e) })
}

// Counter is a uint64 in device memory that Kit.Count kernels add 1 to.
type Counter struct {
	k    *Kit
	dptr C.uint64_t
}

// NewCounter allocates a zeroed counter; free it with Counter.Free.
func (k *Kit) NewCounter() (*Counter, error) {
	var dptr C.uint64_t
	err := kitCall("Kit.NewCounter", func(e *C.gs_error) C.gs_status { return C.gs_kit_alloc(k.k, 8, &dptr, e) })
	if err != nil {
		return nil, err
	}
	return &Counter{k: k, dptr: dptr}, nil
}

// Count launches a kernel on s that adds 1 to c.
func (k *Kit) Count(s backend.Stream, c *Counter) error {
	return kitCall("Kit.Count", func(e *C.gs_error) C.gs_status { return C.gs_kit_count(k.k, C.uint64_t(s), c.dptr, e) })
}

// Read returns the count; sync the counting streams first.
func (c *Counter) Read() (uint64, error) {
	var v C.uint64_t
	err := kitCall("Counter.Read", func(e *C.gs_error) C.gs_status {
		return C.gs_kit_read(c.k.k, c.dptr, unsafe.Pointer(&v), 8, e)
	})
	return uint64(v), err
}

// Free releases the counter.
func (c *Counter) Free() error {
	return kitCall("Counter.Free", func(e *C.gs_error) C.gs_status { return C.gs_kit_free(c.k.k, c.dptr, e) })
}

// Sync waits until s has finished its work. Tests only: gpuspans itself
// never waits for the GPU.
func (k *Kit) Sync(s backend.Stream) error {
	return kitCall("Kit.Sync", func(e *C.gs_error) C.gs_status { return C.gs_kit_sync(k.k, C.uint64_t(s), e) })
}

// NewTimer allocates zeroed device memory for one kernel's readings; free
// it with Timer.Free.
func (k *Kit) NewTimer() (*Timer, error) { return k.NewGridTimer(1) }

// NewGridTimer allocates zeroed device memory for the readings of a
// SpinGrid kernel of ctas CTAs; free it with Timer.Free.
func (k *Kit) NewGridTimer(ctas int) (*Timer, error) {
	if ctas < 1 || ctas > 1<<20 {
		return nil, fmt.Errorf("Kit.NewGridTimer: ctas must be 1..%d, got %d", 1<<20, ctas)
	}
	var dptr C.uint64_t
	err := kitCall("Kit.NewTimer", func(e *C.gs_error) C.gs_status {
		return C.gs_kit_alloc(k.k, C.size_t(16*ctas), &dptr, e)
	})
	if err != nil {
		return nil, err
	}
	return &Timer{k: k, dptr: dptr, ctas: ctas}, nil
}

// Read returns the kernel's first and last %globaltimer readings in ns, the
// earliest first and latest last over its CTAs (zero if no kernel wrote
// them). Sync the kernel's stream first.
func (t *Timer) Read() (start, end uint64, err error) {
	v := make([]uint64, 2*t.ctas)
	err = kitCall("Timer.Read", func(e *C.gs_error) C.gs_status {
		return C.gs_kit_read(t.k.k, t.dptr, unsafe.Pointer(&v[0]), C.size_t(16*t.ctas), e)
	})
	start, end = v[0], v[1]
	for i := 2; i < len(v); i += 2 {
		start, end = min(start, v[i]), max(end, v[i+1])
	}
	return start, end, err
}

// Free releases the timer's device memory.
func (t *Timer) Free() error {
	return kitCall("Timer.Free", func(e *C.gs_error) C.gs_status { return C.gs_kit_free(t.k.k, t.dptr, e) })
}

// CaptureBegin starts capturing s into a graph in mode.
func (k *Kit) CaptureBegin(s backend.Stream, mode CaptureMode) error {
	return kitCall("Kit.CaptureBegin", func(e *C.gs_error) C.gs_status {
		return C.gs_kit_capture_begin(k.k, C.uint64_t(s), C.int32_t(mode), e)
	})
}

// CaptureEnd ends the capture of s and returns its graph; destroy it with
// DestroyGraph. An error with Code 901 (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
// means something broke the capture.
func (k *Kit) CaptureEnd(s backend.Stream) (Graph, error) {
	var g C.uint64_t
	err := kitCall("Kit.CaptureEnd", func(e *C.gs_error) C.gs_status { return C.gs_kit_capture_end(k.k, C.uint64_t(s), &g, e) })
	return Graph(g), err
}

// Instantiate makes an executable graph; destroy it with DestroyGraphExec.
func (k *Kit) Instantiate(g Graph) (GraphExec, error) {
	var x C.uint64_t
	err := kitCall("Kit.Instantiate", func(e *C.gs_error) C.gs_status {
		return C.gs_kit_graph_instantiate(k.k, C.uint64_t(g), &x, e)
	})
	return GraphExec(x), err
}

// Launch launches an executable graph on s.
func (k *Kit) Launch(x GraphExec, s backend.Stream) error {
	return kitCall("Kit.Launch", func(e *C.gs_error) C.gs_status {
		return C.gs_kit_graph_launch(k.k, C.uint64_t(x), C.uint64_t(s), e)
	})
}

// DestroyGraph destroys a graph from CaptureEnd.
func (k *Kit) DestroyGraph(g Graph) error {
	return kitCall("Kit.DestroyGraph", func(e *C.gs_error) C.gs_status { return C.gs_kit_graph_destroy(k.k, C.uint64_t(g), e) })
}

// DestroyGraphExec destroys an executable graph from Instantiate.
func (k *Kit) DestroyGraphExec(x GraphExec) error {
	return kitCall("Kit.DestroyGraphExec", func(e *C.gs_error) C.gs_status {
		return C.gs_kit_graph_exec_destroy(k.k, C.uint64_t(x), e)
	})
}

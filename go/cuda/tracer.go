//go:build cgo

package cuda

/*
#include <stdint.h>
#include <stdlib.h>
#include "gpuspans/tracer.h"
*/
import "C"

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/backend"
)

// backend.KernelRecord is read from C as gs_kernel_record without copying.
var (
	_ = [1]int{}[unsafe.Sizeof(backend.KernelRecord{})-unsafe.Sizeof(C.gs_kernel_record{})]
	_ = [1]int{}[unsafe.Offsetof(backend.KernelRecord{}.StartNs)-unsafe.Offsetof(C.gs_kernel_record{}.start_ns)]
	_ = [1]int{}[unsafe.Offsetof(backend.KernelRecord{}.EndNs)-unsafe.Offsetof(C.gs_kernel_record{}.end_ns)]
	_ = [1]int{}[unsafe.Offsetof(backend.KernelRecord{}.Device)-unsafe.Offsetof(C.gs_kernel_record{}.device)]
	_ = [1]int{}[unsafe.Offsetof(backend.KernelRecord{}.Stream)-unsafe.Offsetof(C.gs_kernel_record{}.stream)]
	_ = [1]int{}[unsafe.Offsetof(backend.KernelRecord{}.Name)-unsafe.Offsetof(C.gs_kernel_record{}.name)]
	_ = [1]int{}[unsafe.Offsetof(backend.KernelRecord{}.Graph)-unsafe.Offsetof(C.gs_kernel_record{}.graph)]
	_ = [1]int{}[unsafe.Offsetof(backend.KernelRecord{}.Correlation)-unsafe.Offsetof(C.gs_kernel_record{}.correlation)]
	_ = [1]int{}[unsafe.Offsetof(backend.KernelRecord{}.Context)-unsafe.Offsetof(C.gs_kernel_record{}.context)]
	_ = [1]int{}[backend.MaxTracerDevices-C.GS_TRACER_MAX_DEVICES]
)

// Tracer is the process's CUPTI kernel tracer, a backend.KernelTracer. Its
// methods may be called from any goroutine; Close once, last.
type Tracer struct {
	closed atomic.Bool
}

var _ backend.KernelTracer = (*Tracer)(nil)

// OpenTracer loads CUPTI and opens the process's kernel tracer, collection
// off. path, when not empty, is the only library tried; otherwise a CUPTI
// already loaded in the process (torch's), $GPUSPANS_CUPTI, then the usual
// names and CUDA toolkit folders (cuda/include/gpuspans/tracer.h). Errors
// wrap backend.ErrNoTracer (no usable CUPTI: missing, lacking a symbol, or
// an unknown record layout) or backend.ErrTracerBusy (a profiler holds
// CUPTI, or the tracer is open already), and name the reason.
func OpenTracer(path string) (*Tracer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var e C.gs_error
	if C.gs_tracer_open(cpath, C.uint32_t(TracerFlushPeriodMs), &e) != C.GS_OK {
		return nil, tracerError("OpenTracer", &e)
	}
	return &Tracer{}, nil
}

// TracerFlushPeriodMs is how often the tracer asks CUPTI for its completed
// buffers: kernel spans land at most about this much after they ran.
const TracerFlushPeriodMs = 100

// TracerOpener returns a backend.TracerOpener that calls OpenTracer(path).
func TracerOpener(path string) backend.TracerOpener {
	return func() (backend.KernelTracer, error) {
		t, err := OpenTracer(path)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
}

func tracerError(op string, e *C.gs_error) error {
	var kind error
	switch C.gs_status(e.status) {
	case C.GS_ERR_NO_DRIVER, C.GS_ERR_INVALID_ARGUMENT:
		kind = backend.ErrNoTracer
	case C.GS_ERR_BUSY:
		kind = backend.ErrTracerBusy
	}
	return &backend.DriverError{Op: op, Msg: C.GoString(&e.message[0]), Kind: kind}
}

var errTracerClosed = errors.New("cuda: the tracer is closed")

// Enable turns collection on or off.
func (t *Tracer) Enable(on bool) error {
	if t.closed.Load() {
		return errTracerClosed
	}
	var v C.int32_t
	if on {
		v = 1
	}
	var e C.gs_error
	if C.gs_tracer_enable(v, &e) != C.GS_OK {
		return tracerError("Enable", &e)
	}
	return nil
}

// Read moves collected records into dst, without copying through Go.
func (t *Tracer) Read(dst []backend.KernelRecord) int {
	if len(dst) == 0 {
		return 0
	}
	return int(C.gs_tracer_read((*C.gs_kernel_record)(unsafe.Pointer(&dst[0])), C.size_t(len(dst))))
}

// Name returns the readable name of id.
func (t *Tracer) Name(id uint32) string {
	var buf [128]C.char
	n := C.gs_tracer_name(C.uint32_t(id), &buf[0], C.size_t(len(buf)))
	if n == 0 {
		return ""
	}
	return C.GoString(&buf[0])
}

// ClockOffset is Unix time in ns minus CUPTI's clock.
func (t *Tracer) ClockOffset() int64 { return int64(C.gs_tracer_clock_offset_ns()) }

// Stats returns the tracer's counters.
func (t *Tracer) Stats() backend.TracerStats {
	var s C.gs_tracer_stats
	C.gs_tracer_get_stats(&s)
	out := backend.TracerStats{
		Records:       uint64(s.records),
		Dropped:       uint64(s.cupti_dropped) + uint64(s.ring_dropped),
		NameOverflows: uint64(s.names_overflow),
		Names:         int(s.names),
	}
	for i := range out.DroppedByDevice {
		out.DroppedByDevice[i] = uint64(s.dropped_by_device[i])
	}
	return out
}

// Close turns collection off, flushes, and gives CUPTI back (a profiler
// may take it); CUPTI stays attached until Detach. Later calls do nothing.
func (t *Tracer) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	var e C.gs_error
	if C.gs_tracer_close(&e) != C.GS_OK {
		return tracerError("CloseTracer", &e)
	}
	return nil
}

// Detach detaches CUPTI from the process after Close, at the exit of the
// next driver call any thread makes (gs_tracer_detach), so that launches
// cost what they did before CUPTI. Until then no other client can
// subscribe to CUPTI: Close alone makes room for a profiler. Not for
// processes that replay CUDA graphs: a cuptiFinalize made outside such a
// callback broke an instrumented graph's next replay on an H200
// (CUDA_ERROR_LAUNCH_FAILED, bench/cupti/graph_toggle.cc); gpuspans'
// hub never calls it.
func (t *Tracer) Detach() error {
	var e C.gs_error
	if C.gs_tracer_detach(&e) != C.GS_OK {
		return tracerError("DetachTracer", &e)
	}
	return nil
}

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
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
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
	_ = [1]int{}[unsafe.Offsetof(backend.KernelRecord{}.Kind)-unsafe.Offsetof(C.gs_kernel_record{}.kind)]
	_ = [1]int{}[unsafe.Offsetof(backend.KernelRecord{}.Thread)-unsafe.Offsetof(C.gs_kernel_record{}.thread)]
	_ = [1]int{}[backend.RecordLaunch-C.GS_RECORD_LAUNCH]
	_ = [1]int{}[C.GS_RECORD_LAUNCH-backend.RecordLaunch]
	_ = [1]int{}[backend.LaunchedGraph-C.GS_RECORD_LAUNCHED_GRAPH]
	_ = [1]int{}[C.GS_RECORD_LAUNCHED_GRAPH-backend.LaunchedGraph]
	_ = [1]int{}[backend.MaxTracerDevices-C.GS_TRACER_MAX_DEVICES]
	_ = [1]int{}[backend.MaxTracerNames-C.GS_TRACER_MAX_NAMES]
)

// Tracer is the process's CUPTI kernel tracer, a backend.KernelTracer. Its
// methods follow backend.KernelTracer's rules; Close once, last.
type Tracer struct {
	mode   backend.TracerMode
	closed atomic.Bool
}

var _ backend.KernelTracer = (*Tracer)(nil)

// OpenTracer loads CUPTI and opens the process's kernel tracer in mode: a
// window (collection on; call it on the launching thread at a step
// boundary) or attached (collection off until Enable). path, when not
// empty, is the only library tried; otherwise a CUPTI already loaded in
// the process (torch's), $GPUSPANS_CUPTI, then the usual names and CUDA
// toolkit folders (cuda/include/gpuspans/tracer.h). Errors wrap
// backend.ErrNoTracer (no usable CUPTI: missing, lacking a symbol, a
// version this build cannot use, or CUPTI attached for good, which keeps
// windows off) or backend.ErrTracerBusy (a profiler holds CUPTI, or the
// tracer is open already), and name the reason.
func OpenTracer(path string, mode backend.TracerMode) (*Tracer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var e C.gs_error
	var st C.gs_status
	switch mode {
	case backend.TracerWindow:
		st = C.gs_tracer_window_open(cpath, 0, &e)
	case backend.TracerWindowTakeOver:
		st = C.gs_tracer_window_open(cpath, C.GS_TRACER_TAKE_OVER, &e)
	case backend.TracerAttached:
		st = C.gs_tracer_open(cpath, C.uint32_t(TracerFlushPeriodMs), &e)
	default:
		return nil, fmt.Errorf("cuda: OpenTracer: unknown tracer mode %d: %w", mode, backend.ErrNoTracer)
	}
	if st != C.GS_OK {
		return nil, tracerError("OpenTracer", &e)
	}
	return &Tracer{mode: mode}, nil
}

// GuardLaunch runs launch, a CUDA graph replay (or any launch) made by a
// goroutine other than the one that steps the hub, inside the launch guard
// (gs_launch_guard_enter): no kernel window attaches or detaches CUPTI
// while it runs, and its replays do not keep CUPTI attached after a window
// (cuda/include/gpuspans/tracer.h: a window counts a thread's graph
// launches against its guarded ones). The goroutine stays on its thread
// meanwhile. launch must not step a hub. Costs a few atomic operations,
// and a wait of a few milliseconds when a window opens or closes meanwhile.
func GuardLaunch(launch func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.gs_launch_guard_enter()
	defer C.gs_launch_guard_exit()
	launch()
}

// TracerOpener returns a backend.TracerOpener that calls OpenTracer(path, mode).
func TracerOpener(path string) backend.TracerOpener {
	return func(mode backend.TracerMode) (backend.KernelTracer, error) {
		t, err := OpenTracer(path, mode)
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
		if strings.Contains(C.GoString(&e.message[0]), "the launch guard is held") {
			kind = backend.ErrGuardHeld
		}
	case C.GS_ERR_WRONG_THREAD:
		kind = backend.ErrWrongThread
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

// Name returns the label of id: the demangled name without return type and
// parameters, cut names made distinct (gs_tracer_name).
func (t *Tracer) Name(id uint32) string {
	var buf [128]C.char
	n := C.gs_tracer_name(C.uint32_t(id), &buf[0], C.size_t(len(buf)))
	if n == 0 {
		return ""
	}
	return C.GoString(&buf[0])
}

// FullName returns the whole demangled name behind id's label (at most
// 4,095 bytes; "" for an unknown id).
func (t *Tracer) FullName(id uint32) string {
	buf := make([]C.char, 4096)
	if C.gs_tracer_full_name(C.uint32_t(id), &buf[0], C.size_t(len(buf))) == 0 {
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
	out.Guard = guardOf(&s)
	return out
}

func guardOf(s *C.gs_tracer_stats) backend.LaunchGuard {
	return backend.LaunchGuard{
		Launches:        uint64(s.guarded_launches),
		Waits:           uint64(s.guard_waits),
		InFlight:        int64(s.guard_inflight),
		Holder:          uint32(s.guard_holder),
		Held:            time.Duration(s.guard_held_ns),
		UnmatchedExits:  uint64(s.guard_unmatched_exits),
		UnmatchedThread: uint32(s.guard_unmatched_thread),
		Backoffs:        uint64(s.guard_backoffs),
	}
}

// Close ends the open (gs_tracer_close): a window detaches CUPTI, on its
// own thread only (an error wrapping backend.ErrWrongThread elsewhere, and
// the tracer stays open), once no guarded launch is in flight (an error
// wrapping backend.ErrTracerBusy after 20 ms, and it stays open), unless
// another thread replayed CUDA graphs outside the guard during it (an
// error wrapping backend.ErrLeftAttached); attached, CUPTI is given back
// but stays attached. Later calls do nothing.
func (t *Tracer) Close() error {
	if t.closed.Load() {
		return nil
	}
	var e C.gs_error
	if C.gs_tracer_close(&e) != C.GS_OK {
		err := tracerError("CloseTracer", &e)
		if errors.Is(err, backend.ErrWrongThread) || errors.Is(err, backend.ErrTracerBusy) {
			return err // still open: tried again later
		}
		t.closed.Store(true)
		if t.mode != backend.TracerAttached {
			var s C.gs_tracer_stats
			C.gs_tracer_get_stats(&s)
			if s.foreign_graph_launches > 0 {
				err.(*backend.DriverError).Kind = backend.ErrLeftAttached
			}
		}
		return err
	}
	t.closed.Store(true)
	return nil
}

// Abandon ends a window without detaching (gs_tracer_abandon); attached,
// it is Close.
func (t *Tracer) Abandon() error {
	if t.mode == backend.TracerAttached {
		return t.Close()
	}
	if t.closed.Swap(true) {
		return nil
	}
	var e C.gs_error
	if C.gs_tracer_abandon(&e) != C.GS_OK {
		return tracerError("AbandonTracer", &e)
	}
	return nil
}

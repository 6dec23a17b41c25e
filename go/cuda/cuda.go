//go:build cgo

package cuda

/*
#cgo CFLAGS: -I${SRCDIR}/../../cuda/include -I${SRCDIR}/../../third_party/cuda
#cgo CXXFLAGS: -std=c++17 -I${SRCDIR}/../../cuda/include -I${SRCDIR}/../../third_party/cuda
#cgo LDFLAGS: -ldl -lstdc++
#include <stdint.h>
#include "gpuspans/gpuspans.h"

// Hot-path wrappers. They take the pool as an integer: cgo gives an opaque
// C struct pointer a type that is not pointer-shaped for interfaces, so
// passing one allocates (in cgo's pointer check). And they return the status
// and the CUresult packed in one integer, so Go passes no pointer either: a
// pointer argument to C makes its variable escape to the heap.
static inline gs_pool* gsgo_pool(uintptr_t h) { return (gs_pool*)h; }
static inline int64_t gsgo_pack(gs_status st, int32_t cu) {
  return ((int64_t)st << 32) | (uint32_t)cu;
}
static inline int64_t gsgo_record_begin(uintptr_t h, uint32_t slot, uint64_t stream) {
  int32_t cu = 0;
  gs_status st = gs_pool_record_begin(gsgo_pool(h), slot, stream, &cu);
  return gsgo_pack(st, cu);
}
static inline int64_t gsgo_record_end(uintptr_t h, uint32_t slot, uint64_t stream) {
  int32_t cu = 0;
  gs_status st = gs_pool_record_end(gsgo_pool(h), slot, stream, &cu);
  return gsgo_pack(st, cu);
}
static inline int64_t gsgo_record_next(uintptr_t h, uint32_t slot, uint32_t next, uint64_t stream) {
  int32_t cu = 0;
  gs_status st = gs_pool_record_next(gsgo_pool(h), slot, next, stream, &cu);
  return gsgo_pack(st, cu);
}
static inline int64_t gsgo_harvest(uintptr_t h, gs_harvest_item* items, size_t n) {
  int32_t cu = 0;
  gs_status st = gs_pool_harvest(gsgo_pool(h), items, n, &cu);
  return gsgo_pack(st, cu);
}
// Bit 40 carries the capturing flag.
static inline int64_t gsgo_is_capturing(uintptr_t h, uint64_t stream) {
  int32_t capturing = 0, cu = 0;
  gs_status st = gs_pool_is_capturing(gsgo_pool(h), stream, &capturing, &cu);
  return gsgo_pack(st, cu) | ((int64_t)(capturing != 0) << 40);
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/internal/cudabridge"
)

// go/cuda/cudatest and go/capi reach the C pool and the error mapping
// through cudabridge.
func init() {
	cudabridge.PoolPtr = func(pool any) uintptr {
		if p, ok := pool.(*Pool); ok && p != nil {
			return uintptr(p.h)
		}
		return 0
	}
	cudabridge.ErrorOf = func(op string, e unsafe.Pointer) error { return errorOf(op, (*C.gs_error)(e)) }
	cudabridge.RecordError = func(op string, status, cu int32) error { return recordError(op, C.gs_status(status), cu) }
}

// backend.HarvestItem is passed to C as gs_harvest_item without copying, so
// their layouts must match: each line fails to compile (constant index out
// of range) if a size or an offset differs.
var (
	_ = [1]int{}[unsafe.Sizeof(backend.HarvestItem{})-unsafe.Sizeof(C.gs_harvest_item{})]
	_ = [1]int{}[unsafe.Offsetof(backend.HarvestItem{}.Slot)-unsafe.Offsetof(C.gs_harvest_item{}.slot)]
	_ = [1]int{}[unsafe.Offsetof(backend.HarvestItem{}.WantStart)-unsafe.Offsetof(C.gs_harvest_item{}.want_start)]
	_ = [1]int{}[unsafe.Offsetof(backend.HarvestItem{}.State)-unsafe.Offsetof(C.gs_harvest_item{}.state)]
	_ = [1]int{}[unsafe.Offsetof(backend.HarvestItem{}.Code)-unsafe.Offsetof(C.gs_harvest_item{}.cu_result)]
	_ = [1]int{}[unsafe.Offsetof(backend.HarvestItem{}.DurationNs)-unsafe.Offsetof(C.gs_harvest_item{}.duration_ns)]
	_ = [1]int{}[unsafe.Offsetof(backend.HarvestItem{}.StartNs)-unsafe.Offsetof(C.gs_harvest_item{}.start_ns)]
)

// Preallocated, so a refused record costs no allocation. Callers must not
// modify them.
var (
	errCapturingBegin = &backend.DriverError{Op: "RecordBegin", Msg: "stream is being captured, nothing recorded", Kind: backend.ErrCapturing}
	errCapturingEnd   = &backend.DriverError{Op: "RecordEnd", Msg: "stream is being captured, nothing recorded", Kind: backend.ErrCapturing}
	errCapturingNext  = &backend.DriverError{Op: "RecordNext", Msg: "stream is being captured, nothing recorded", Kind: backend.ErrCapturing}
)

// kindOf maps a core status to the backend sentinel it means, if any.
func kindOf(st C.gs_status) error {
	switch st {
	case C.GS_ERR_NO_DRIVER, C.GS_ERR_MISSING_SYMBOL, C.GS_ERR_INIT:
		return backend.ErrNoDriver
	case C.GS_ERR_CAPTURING:
		return backend.ErrCapturing
	case C.GS_ERR_POOL_DEAD:
		return backend.ErrSticky
	case C.GS_ERR_BUSY:
		return backend.ErrBusy
	}
	return nil
}

// errorOf turns a core gs_error into a *backend.DriverError; Msg carries the
// core's message, which names the failed call and the driver's words.
func errorOf(op string, e *C.gs_error) error {
	return &backend.DriverError{
		Op:   op,
		Code: int32(e.cu_result),
		Msg:  C.GoString(&e.message[0]),
		Kind: kindOf(C.gs_status(e.status)),
	}
}

// driverMessage is the driver's name and description of a CUresult.
func driverMessage(cu int32) string {
	var buf [128]C.char
	C.gs_driver_error_string(C.int32_t(cu), &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}

// Load loads the CUDA driver (libcuda.so.1) and initialises it, once per
// process; later calls return the first outcome. An error wraps
// backend.ErrNoDriver when the library is missing, lacks a symbol or fails
// to initialise; any other failure (out of memory) is a plain
// *backend.DriverError.
func Load() error {
	var e C.gs_error
	if C.gs_driver_load(&e) != C.GS_OK {
		return errorOf("Load", &e)
	}
	return nil
}

// DeviceCount reports the number of CUDA devices, loading the driver first.
func DeviceCount() (int, error) {
	var n C.int32_t
	var e C.gs_error
	if C.gs_driver_device_count(&n, &e) != C.GS_OK {
		return 0, errorOf("DeviceCount", &e)
	}
	return int(n), nil
}

// DeviceIdentity reports device's UUID, PCI bus id and name, and the
// driver's CUDA version, as the driver tells them (fields it cannot tell are
// empty), loading the driver first.
func DeviceIdentity(device int) (backend.Identity, error) {
	var id C.gs_device_identity
	var e C.gs_error
	if C.gs_driver_device_identity(C.int32_t(device), &id, &e) != C.GS_OK {
		return backend.Identity{}, errorOf("DeviceIdentity", &e)
	}
	return backend.Identity{
		UUID:     C.GoString(&id.uuid[0]),
		PCIBusID: C.GoString(&id.pci_bus_id[0]),
		Name:     C.GoString(&id.name[0]),
		Driver:   C.GoString(&id.driver[0]),
	}, nil
}

// Pool is a backend.Pool of CUDA event pairs on one device's primary
// context. Concurrency is backend.Pool's: RecordBegin and RecordEnd from any
// goroutine for distinct slots, one Harvest at a time concurrently with
// them, Capturing from anywhere, Close once and last.
//
// Errors are *backend.DriverError; their Kind is backend.ErrCapturing for a
// record refused on a capturing stream (preallocated: the refusal does not
// allocate), backend.ErrSticky once the context hit a sticky error (the pool
// then never calls the driver again), backend.ErrBusy from Close while
// events may be in flight, backend.ErrBadSlot for a slot out of range.
type Pool struct {
	h      C.uintptr_t // the C pool, a gs_pool* (see gsgo_pool)
	device int
	slots  int
	id     backend.Identity
}

var (
	_ backend.Pool       = (*Pool)(nil)
	_ backend.Identifier = (*Pool)(nil)
	_ backend.Calibrated = (*Pool)(nil)
)

// Open creates a pool of slots (1..backend.MaxSlots) event pairs on device,
// loading the driver first. Not while another goroutine captures in global
// mode: it creates events.
func Open(device, slots int) (*Pool, error) {
	if slots < 1 || slots > backend.MaxSlots {
		return nil, fmt.Errorf("cuda.Open: slots must be 1..%d, got %d", backend.MaxSlots, slots)
	}
	if device < 0 || device > 1<<30 {
		return nil, fmt.Errorf("cuda.Open: bad device %d", device)
	}
	var p *C.gs_pool
	var e C.gs_error
	if C.gs_pool_create(C.int32_t(device), C.uint32_t(slots), &p, &e) != C.GS_OK {
		return nil, errorOf("Open", &e)
	}
	// Identity is for labels only: a driver that cannot tell it leaves the
	// fields empty rather than failing the pool.
	id, _ := DeviceIdentity(device)
	return &Pool{h: C.uintptr_t(uintptr(unsafe.Pointer(p))), device: device, slots: slots, id: id}, nil
}

// EventOffset is how much longer an event pair reads than the kernel
// between them on this device, measured by the core when the pool opened
// (gs_pool_event_offset_ns); ok is false until a harvest has read the
// measurement, and for good when the driver could not run it.
func (p *Pool) EventOffset() (offset time.Duration, ok bool) {
	ns := int64(C.gs_pool_event_offset_ns(C.gsgo_pool(p.h)))
	return time.Duration(ns), ns >= 0
}

// Identity is the device's UUID, PCI bus id and name, and the driver's CUDA
// version, read when the pool opened.
func (p *Pool) Identity() backend.Identity { return p.id }

// Device is the device ordinal the pool lives on.
func (p *Pool) Device() int { return p.device }

// Slots is the number of event pairs.
func (p *Pool) Slots() int { return p.slots }

// Capturing reports whether stream is being captured into a graph (an
// invalidated capture not yet ended counts); callable during captures. Not
// part of backend.Pool: records check the stream themselves. For tests and
// tools.
func (p *Pool) Capturing(stream backend.Stream) (bool, error) {
	r := C.gsgo_is_capturing(p.h, C.uint64_t(stream))
	if st := C.gs_status(r >> 32 & 0xff); st != C.GS_OK {
		return false, statusError("Capturing", st, int32(r))
	}
	return r>>40&1 == 1, nil
}

// RecordBegin records slot's begin event on stream, unless stream is being
// captured (then it records nothing and returns an error of Kind
// backend.ErrCapturing). It does not allocate on success or on refusal.
func (p *Pool) RecordBegin(slot int, stream backend.Stream) error {
	if uint(slot) >= uint(p.slots) {
		return p.badSlot("RecordBegin", slot)
	}
	r := C.gsgo_record_begin(p.h, C.uint32_t(slot), C.uint64_t(stream))
	if r == 0 {
		return nil
	}
	return recordError("RecordBegin", C.gs_status(r>>32), int32(r))
}

// RecordEnd records slot's end event on stream, with RecordBegin's rules.
func (p *Pool) RecordEnd(slot int, stream backend.Stream) error {
	if uint(slot) >= uint(p.slots) {
		return p.badSlot("RecordEnd", slot)
	}
	r := C.gsgo_record_end(p.h, C.uint32_t(slot), C.uint64_t(stream))
	if r == 0 {
		return nil
	}
	return recordError("RecordEnd", C.gs_status(r>>32), int32(r))
}

// RecordNext ends slot's span and begins next's at one event
// (backend.Chainer), with RecordBegin's rules.
func (p *Pool) RecordNext(slot, next int, stream backend.Stream) error {
	if uint(slot) >= uint(p.slots) {
		return p.badSlot("RecordNext", slot)
	}
	if uint(next) >= uint(p.slots) || next == slot {
		return p.badSlot("RecordNext", next)
	}
	r := C.gsgo_record_next(p.h, C.uint32_t(slot), C.uint32_t(next), C.uint64_t(stream))
	if r == 0 {
		return nil
	}
	return recordError("RecordNext", C.gs_status(r>>32), int32(r))
}

// Harvest fills in items' outputs in one call to the core, never waiting
// for the GPU. The slice is handed to C as it is (no copy, no allocation).
// It may hold at most Slots items, each slot in range (else an error of
// Kind backend.ErrBadSlot and no item changed). Callable during captures:
// it queries in relaxed capture mode.
func (p *Pool) Harvest(items []backend.HarvestItem) error {
	if len(items) == 0 {
		return nil
	}
	r := C.gsgo_harvest(p.h, (*C.gs_harvest_item)(unsafe.Pointer(&items[0])), C.size_t(len(items)))
	if r == 0 {
		return nil
	}
	st := C.gs_status(r >> 32)
	if st == C.GS_ERR_INVALID_ARGUMENT {
		return &backend.DriverError{Op: "Harvest", Msg: fmt.Sprintf("%d items for %d slots, or a slot out of range", len(items), p.slots), Kind: backend.ErrBadSlot}
	}
	return statusError("Harvest", st, int32(r))
}

// Close releases the pool's events and context. While any recorded event
// may still be in flight it returns an error of Kind backend.ErrBusy and the
// pool stays usable: harvest and try again later. Call it once no other
// call is running or can follow; after a nil return the pool is gone and
// further Close calls return nil.
func (p *Pool) Close() error {
	var e C.gs_error
	if C.gs_pool_destroy(C.gsgo_pool(p.h), &e) != C.GS_OK {
		return errorOf("Close", &e)
	}
	p.h = 0
	return nil
}

// recordError is the error of a record method named op for a core status
// other than GS_OK: a capturing stream's preallocated one, or statusError's.
func recordError(op string, st C.gs_status, cu int32) error {
	if st == C.GS_ERR_CAPTURING {
		switch op {
		case "RecordBegin":
			return errCapturingBegin
		case "RecordEnd":
			return errCapturingEnd
		case "RecordNext":
			return errCapturingNext
		}
	}
	return statusError(op, st, cu)
}

func (p *Pool) badSlot(op string, slot int) error {
	return &backend.DriverError{Op: op, Msg: fmt.Sprintf("slot %d outside 0..%d", slot, p.slots-1), Kind: backend.ErrBadSlot}
}

func statusError(op string, st C.gs_status, cu int32) error {
	msg := C.GoString(C.gs_status_name(C.int32_t(st)))
	if cu != 0 {
		msg = driverMessage(cu)
	}
	kind := kindOf(st)
	if st == C.GS_ERR_INVALID_ARGUMENT {
		kind = backend.ErrBadSlot
	}
	return &backend.DriverError{Op: op, Code: cu, Msg: msg, Kind: kind}
}

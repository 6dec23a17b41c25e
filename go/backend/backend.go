// Package backend defines what the control plane needs from a GPU: a fixed
// pool of event pairs that can be recorded on streams and harvested without
// waiting. The CUDA binding (package cuda), the simulated GPU (package sim)
// and the counting fake (package fake) implement it.
//
// The interface has no blocking method on purpose: nothing the control plane
// can call waits for the GPU.
package backend

import (
	"errors"
	"fmt"
	"time"
)

// MaxSlots is the most event pairs a Pool may have: the C core's limit
// (kMaxSlots in cuda/src/pool.cc, which gs_pool_create enforces; a test
// checks that they agree).
const MaxSlots = 1 << 20

// Stream is a GPU stream handle as an integer (a CUstream's pointer value).
// 0 is the legacy default stream.
type Stream uint64

// SpanState is the outcome of one slot in a harvest.
type SpanState int32

// States of a harvested slot; the values match the C core's gs_span_state.
const (
	Done     SpanState = 0 // both events complete; DurationNs is valid
	InFlight SpanState = 1 // not complete; ask again in a later harvest
	Failed   SpanState = 2 // the driver failed for this slot; Code says why
)

// String names the state.
func (s SpanState) String() string {
	switch s {
	case Done:
		return "done"
	case InFlight:
		return "in-flight"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("SpanState(%d)", int32(s))
}

// HarvestItem is one slot of a batched harvest. Slot and WantStart are
// inputs; the rest are outputs. Its layout matches the C core's
// gs_harvest_item, so the CUDA binding passes a slice of them to C without
// copying.
type HarvestItem struct {
	Slot       uint32    // in: the slot to check
	WantStart  uint32    // in: nonzero to also compute StartNs
	State      SpanState // out
	Code       int32     // out: driver error code when State is Failed
	DurationNs int64     // out: end - begin, when State is Done
	StartNs    int64     // out: begin on the host clock (Unix ns), 0 if unknown
}

// Pool is a fixed set of event pairs on one device.
//
// Concurrency: RecordBegin and RecordEnd may be called from any goroutine at
// once for distinct slots; the caller owns a slot from its RecordBegin until a
// harvest reports it Done or Failed, or until a record call on it failed (it
// may then record the slot again: re-recording an event is legal, and Close
// still checks that nothing is in flight). Harvest is called by one goroutine
// at a time, concurrently with records. Close is called once, when no other
// call is running or can follow.
type Pool interface {
	// Device is the device ordinal the pool lives on.
	Device() int
	// Slots is the number of event pairs, 1..MaxSlots.
	Slots() int
	// RecordBegin records slot's begin event on stream. It returns an error
	// wrapping ErrCapturing, and records nothing, on a capturing stream.
	RecordBegin(slot int, stream Stream) error
	// RecordEnd records slot's end event on stream, likewise.
	RecordEnd(slot int, stream Stream) error
	// Harvest fills in the outputs of items in one call, without waiting for
	// the GPU. A non-nil error concerns the whole pool (ErrSticky: it is dead).
	Harvest(items []HarvestItem) error
	// Close releases the pool. It returns an error wrapping ErrBusy, and stays
	// usable, while any recorded event may still be in flight.
	Close() error
}

// Chainer is implemented by pools that end one span and begin the next with
// a single event, for spans that follow each other on one stream (lanes
// that share their boundaries). Pools without it get RecordEnd and
// RecordBegin.
type Chainer interface {
	// RecordNext records slot's end event on stream, and next's span begins
	// at that same event, as if RecordBegin(next, stream) had recorded it
	// there. The caller owns both slots and records slot again only once a
	// harvest has reported next Done or Failed, or next was given up. On an
	// error neither span changed; ErrCapturing as for RecordEnd.
	RecordNext(slot, next int, stream Stream) error
}

// Identity names a device as fleet tools do, so telemetry joins with theirs
// (DCGM exporter's UUID and pci_bus_id labels, nvidia-smi). A field is empty
// when the driver cannot tell it.
type Identity struct {
	UUID     string // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
	PCIBusID string // "00000000:19:00.0", as NVML writes it
	Name     string // the product name, "NVIDIA H200"
	Driver   string // the driver's CUDA version, "13.0"
}

// Identifier is implemented by pools that know their device's identity; the
// control plane asks once, when the pool opens.
type Identifier interface {
	Identity() Identity
}

// Calibrated is implemented by pools that measure their device's event
// offset: how much longer an event pair reads than the kernel between them
// (on an H200, 2.5-5 us). The control plane subtracts it from kernel spans.
type Calibrated interface {
	// EventOffset returns the offset, with ok false until it is known.
	EventOffset() (offset time.Duration, ok bool)
}

// Opener creates a pool of slots event pairs (1..MaxSlots); the control
// plane calls it when spans are first needed (level Kernel), so nothing
// touches the GPU before then, with the size of the device's span ring
// (gpuspans.Options.Slots), so that the size is said once. A pool may have
// fewer slots than asked (Pool.Slots), never more.
type Opener func(slots int) (Pool, error)

// Sentinel errors; backends wrap them so errors.Is works.
var (
	// ErrNoDriver: the GPU driver library is not present (or cgo is off).
	ErrNoDriver = errors.New("gpuspans: CUDA driver not available")
	// ErrCapturing: the stream is being captured; nothing was recorded.
	ErrCapturing = errors.New("gpuspans: stream is being captured")
	// ErrSticky: the context hit a sticky error; the pool is dead.
	ErrSticky = errors.New("gpuspans: sticky CUDA error, pool disabled")
	// ErrBusy: an event may still be in flight; try again later.
	ErrBusy = errors.New("gpuspans: events still in flight")
	// ErrBadSlot: a slot index outside the pool.
	ErrBadSlot = errors.New("gpuspans: slot out of range")
	// ErrNoTracer: the kernel tracer's library (CUPTI) is not present, not
	// usable, or of a version whose records this build cannot read.
	ErrNoTracer = errors.New("gpuspans: kernel tracer (CUPTI) not available")
	// ErrTracerBusy: another client (a profiler, or another hub) holds the
	// process's kernel tracer, or a window's open or close met a launch
	// passed through the launch guard that did not end in time.
	ErrTracerBusy = errors.New("gpuspans: kernel tracer (CUPTI) in use by another client")
	// ErrGuardHeld: a kernel window's open or close met the launch guard
	// held by another thread past the window's wait (TracerStats.Guard
	// names it); errors.Is also matches ErrTracerBusy.
	ErrGuardHeld = fmt.Errorf("%w: the launch guard is held by another thread", ErrTracerBusy)
	// ErrWrongThread: a kernel window's Close from a thread other than the
	// one that opened it, while that one lives; nothing was done.
	ErrWrongThread = errors.New("gpuspans: a kernel window closes only on the thread that opened it")
	// ErrLeftAttached: a kernel window's Close did not detach CUPTI because
	// another thread replayed CUDA graphs during the window (a detach beside
	// such replays loses the CUDA context): CUPTI stays attached for the
	// rest of the process, and windows are off. The window's records were
	// delivered.
	ErrLeftAttached = errors.New("gpuspans: a kernel window was left attached beside another thread's CUDA graph replays")
)

// DriverError is a failed driver call.
type DriverError struct {
	Op   string // the operation, e.g. "cuEventRecord"
	Code int32  // the driver's error code (CUresult)
	Msg  string // the driver's name and description of Code
	Kind error  // a sentinel above this error also matches, or nil
}

// Error implements error.
func (e *DriverError) Error() string {
	if e.Msg != "" && e.Code == 0 {
		return e.Op + ": " + e.Msg // not from the driver: no CUresult to show
	}
	if e.Msg != "" {
		return fmt.Sprintf("%s: %s (%d)", e.Op, e.Msg, e.Code)
	}
	return fmt.Sprintf("%s: CUDA error %d", e.Op, e.Code)
}

// Unwrap lets errors.Is match Kind.
func (e *DriverError) Unwrap() error { return e.Kind }

// KernelRecord is one kernel execution reported by a KernelTracer. Its
// layout matches the C core's gs_kernel_record, so the CUDA binding reads
// records into a slice of them without copying.
type KernelRecord struct {
	StartNs     int64  // on the tracer's clock: add KernelTracer.ClockOffset for Unix ns
	EndNs       int64  // likewise
	Device      uint32 // device ordinal
	Stream      uint32 // the tracer's stream id (CUPTI's), not a Stream handle
	Name        uint32 // KernelTracer.Name's id; 0 when the tracer could not keep the name
	Graph       uint32 // id of the CUDA graph the kernel was replayed from; 0: none (launches: LaunchedGraph)
	Correlation uint32 // the tracer's id of the launch call
	Context     uint32 // the tracer's id of the CUDA context
	Kind        RecordKind
	Thread      uint32 // RecordLaunch: the calling thread's id; else 0
}

// RecordKind says what a KernelRecord is: a kernel run (the zero value), a
// copy or memset on the device, or a launch call on the host. A copy or
// memset has Device, Stream, StartNs and EndNs as a kernel has (Name 0). A
// launch is the host's side of a kernel or CUDA graph launch: StartNs and
// EndNs bracket the call on thread Thread, on the tracer's clock like the
// device's records; Correlation matches its kernels'; Device and Stream
// are 0.
type RecordKind uint32

// The kinds of KernelRecord; the values are the C core's GS_RECORD_*.
const (
	RecordKernel RecordKind = iota
	RecordMemcpy
	RecordMemset
	RecordLaunch
)

// LaunchedGraph is a RecordLaunch's Graph when it launched a CUDA graph
// (0: a kernel): the call's record does not say which graph, its kernels
// (of the same Correlation) do. Copies, memsets and launches come from
// kernel windows alone, launches of every thread; a runtime launch whose
// driver call the tracer also reports gives two records.
const LaunchedGraph uint32 = 0xffffffff

// MaxTracerDevices bounds TracerStats.DroppedByDevice.
const MaxTracerDevices = 64

// MaxTracerNames bounds a tracer's kernel name ids (KernelRecord.Name):
// 1..MaxTracerNames, 0 for a name past them.
const MaxTracerNames = 4096

// TracerStats are a KernelTracer's counters since it opened; each only grows.
type TracerStats struct {
	Records       uint64 // kernel records collected
	Dropped       uint64 // records lost: the tracer's (CUPTI's) and its ring's
	NameOverflows uint64 // records whose name was not kept (Name 0)
	Names         int    // distinct names kept
	// DroppedByDevice splits Dropped by device ordinal.
	DroppedByDevice [MaxTracerDevices]uint64
	// Guard is the process's launch guard, as the tracer read it.
	Guard LaunchGuard
}

// LaunchGuard is the state of the process's launch guard (hub.h,
// gs_launch_guard_enter): what other threads' CUDA graph launches pass
// through so that no kernel window attaches or detaches beside them.
type LaunchGuard struct {
	// Launches passed through it in the process's life, and those of them
	// that waited for a window's attach or detach.
	Launches, Waits uint64
	// InFlight counts launches inside it now; Holder is the thread (its
	// kernel id) inside it longest, for Held; 0 and 0 when none.
	InFlight int64
	Holder   uint32
	Held     time.Duration
	// UnmatchedExits counts exits refused because their thread was not
	// inside the guard; UnmatchedThread is the latest such thread.
	UnmatchedExits  uint64
	UnmatchedThread uint32
	// Backoffs counts window opens and closes refused at once, without a
	// wait, because a thread had been inside the guard longer than a
	// window waits for it (20 ms).
	Backoffs uint64
}

// TracerMode is how an open KernelTracer holds the process's CUPTI.
type TracerMode uint8

const (
	// TracerWindow: a kernel window. Collection is on from the open to
	// Close, which detaches CUPTI (cuptiFinalize), so that launches outside
	// windows cost what they did before CUPTI. Open and Close on the thread
	// that launches, at a step boundary, while no other thread launches:
	// the rules measured on an H200 (docs/design.md, kernel windows). Close
	// from another thread returns ErrWrongThread while the opener lives;
	// Enable(false) is refused.
	TracerWindow TracerMode = iota
	// TracerAttached: collection switched by Enable from any thread, and
	// CUPTI attached to the process for good from the open on, so that no
	// window can open after it (its detach could break a CUDA graph).
	TracerAttached
	// TracerWindowTakeOver is TracerWindow where another client's CUPTI
	// subscriber is registered but known to be done (torch.profiler keeps
	// its subscriber after it stops): the window opens anyway, and its
	// detach clears that subscriber.
	TracerWindowTakeOver
)

// KernelTracer reports every kernel the process runs while collection is
// on, graph replays included, with the GPU's own times and no call per
// kernel (CUPTI's activity records: package cuda). Collection is process
// wide, so a process has one open tracer at a time.
//
// Concurrency: Read, Name, ClockOffset and Stats may be called from any
// goroutine at any time, also after Close (records left by the close stay
// readable), and make no CUPTI call while a window is open. Enable, Close
// and Abandon follow the rules of the tracer's mode. None waits for the GPU.
type KernelTracer interface {
	// Enable turns an attached tracer's collection on or off. Kernels
	// launched while it is on are reported once they have run, even if it
	// is off by then. About 1-2 us: the control plane calls it only when
	// arming changes. A window refuses off.
	Enable(on bool) error
	// Read moves the records collected so far into dst and returns how
	// many, without blocking.
	Read(dst []KernelRecord) int
	// Name returns the readable name of a record's Name id ("" for 0 or an
	// unknown id). Names are short (at most 127 bytes) and printable.
	Name(id uint32) string
	// ClockOffset is Unix time in ns minus the tracer's clock.
	ClockOffset() int64
	// Stats returns the tracer's counters.
	Stats() TracerStats
	// Close ends the open: collection off, what is left delivered for
	// Read, CUPTI given back (a window also detaches it). A window's Close
	// on the wrong thread returns an error wrapping ErrWrongThread and
	// does nothing.
	Close() error
	// Abandon ends a window whose thread will not close it: collection off
	// and records delivered, without a detach (CUPTI stays attached for the
	// rest of the process, and no window opens again). Attached: Close.
	Abandon() error
}

// TracerOpener opens a KernelTracer in mode; the control plane calls it on
// the stepping thread, inside BeginStep, so nothing loads before the first
// step at level Kernel.
type TracerOpener func(mode TracerMode) (KernelTracer, error)

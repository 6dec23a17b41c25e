// Package cuda is the CUDA backend of gpuspans: a backend.Pool of CUDA event
// pairs, implemented by the C++ core in cuda/ and reached through cgo. It is
// the only package of the module that imports "C"; built without cgo it
// keeps its API and every call reports backend.ErrNoDriver.
//
// The driver is loaded at run time (libcuda.so.1), so programs using this
// package start on machines without a GPU. Besides the pool, the package has
// a GPU test kit (Kit) for GPU tests, benchmarks and demos, and hooks that
// switch the core to a fake driver for CPU tests (UseFakeDriverForTesting).
package cuda

import "github.com/gpuspans/gpuspans/go/backend"

// CaptureMode is a CUDA stream capture mode (CUstreamCaptureMode).
type CaptureMode int32

// Capture modes; values match the driver's.
const (
	CaptureGlobal      CaptureMode = 0 // unsafe calls from any thread break the capture
	CaptureThreadLocal CaptureMode = 1 // only this thread's unsafe calls do
	CaptureRelaxed     CaptureMode = 2 // no call is checked
)

// Graph is a captured CUDA graph (CUgraph) as an integer.
type Graph uint64

// GraphExec is an instantiated CUDA graph (CUgraphExec) as an integer.
type GraphExec uint64

// Opener returns a backend.Opener that opens a pool of slots event pairs on
// device when first called. It may be called from any goroutine.
func Opener(device, slots int) backend.Opener {
	return func() (backend.Pool, error) {
		p, err := Open(device, slots)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}

// FakeOp selects the fake driver calls FakeDriver.Force applies to.
type FakeOp int32

// Fake driver operations; they may be combined with |.
const (
	FakeQuery   FakeOp = 1 // cuEventQuery
	FakeElapsed FakeOp = 2 // cuEventElapsedTime
)

// FakeCounters counts the fake driver's calls since UseFakeDriverForTesting
// or FakeDriver.ResetCounters. LiveEvents, LiveStreams and RetainedContexts
// are levels, kept across resets, for leak checks.
type FakeCounters struct {
	DriverCalls         int64 // every fake driver call
	Inits               int64
	EventCreates        int64 // successful ones
	EventDestroys       int64
	LiveEvents          int64 // created and not destroyed
	EventRecords        int64 // successful ones
	RecordsIntoCapture  int64 // records on a capturing stream: must stay 0
	EventQueries        int64
	EventElapsed        int64
	IsCapturing         int64
	ModeExchanges       int64 // cuThreadExchangeStreamCaptureMode calls
	UnrelaxedQueries    int64 // queries made outside RELAXED capture mode
	CapturesInvalidated int64 // pretend captures a call broke: must stay 0
	CtxPushes           int64
	CtxPops             int64
	CtxSets             int64 // a thread with no current context adopting the pool's
	RetainedContexts    int64 // primary context retains minus releases
	LiveStreams         int64 // created and not destroyed
	DestroysInFlight    int64 // events destroyed while recorded and not complete: must stay 0 but after a sticky error
	LiveModules         int64 // modules loaded and not unloaded
}

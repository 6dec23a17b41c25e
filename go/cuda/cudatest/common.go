// Package cudatest is test support for go/cuda, kept out of it so that
// production binaries link no test code: a fake CUDA driver the core
// switches to for CPU tests (UseFakeDriver), and a GPU test kit (NewKit:
// streams, spin kernels, graph capture) for GPU tests, benchmarks and demos.
// Production code never imports it.
//
// It imports "C" itself and compiles the fake driver and the kit
// (//cuda:core_testing, //cuda:testkit), which call into the core that
// go/cuda links. Built without cgo it keeps its API: NewKit and the kit
// report backend.ErrNoDriver, and the fake's knobs do nothing.
package cudatest

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

// FakeOp selects the fake driver calls FakeDriver.Force applies to.
type FakeOp int32

// Fake driver operations; they may be combined with |.
const (
	FakeQuery   FakeOp = 1 // cuEventQuery
	FakeElapsed FakeOp = 2 // cuEventElapsedTime
)

// FakeCounters counts the fake driver's calls since UseFakeDriver
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

// NewKitStream is NewKit and a stream of the kit's: what a benchmark or a
// demo on one stream starts with. On error nothing is left open.
func NewKitStream(device int) (*Kit, backend.Stream, error) {
	k, err := NewKit(device)
	if err != nil {
		return nil, 0, err
	}
	s, err := k.NewStream()
	if err != nil {
		_ = k.Close()
		return nil, 0, err
	}
	return k, s, nil
}

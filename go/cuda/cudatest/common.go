// Package cudatest is test support for go/cuda, kept out of it so that
// production binaries link no test code: a fake CUDA driver and a fake
// CUPTI the core switches to for CPU tests (UseFakeDriver, UseFakeCUPTI),
// and the hooks that steer them. Known GPU work for GPU tests is
// go/cuda/cudakit's.
//
// It imports "C" itself and compiles the fakes (//cuda:core_testing),
// which call into the core that go/cuda links. Built without cgo it keeps
// its API: the fakes' knobs do nothing.
package cudatest

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

// The callback ids of the launch calls LaunchCall plays.
const (
	CallLaunchKernel uint32 = 211 // cudaLaunchKernel (runtime)
	CallGraphLaunch  uint32 = 311 // cudaGraphLaunch (runtime)
)

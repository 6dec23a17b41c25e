//go:build !cgo

package cudatest

import (
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
)

// FakeDriver is the fake driver's stand-in in a build without cgo: there is
// no core to fake, so its methods do nothing.
type FakeDriver struct{}

// UseFakeDriver returns a FakeDriver that does nothing: this build has no
// cgo.
func UseFakeDriver() *FakeDriver { return &FakeDriver{} }

// UseRealDriver does nothing: this build has no cgo.
func UseRealDriver() {}

// SetCaptureModeExchange does nothing: this build has no cgo.
func SetCaptureModeExchange(bool) {}

// SetAnchorInterval does nothing: this build has no cgo.
func SetAnchorInterval(*cuda.Pool, time.Duration) {}

// FailOpen does nothing: this build has no cgo.
func (*FakeDriver) FailOpen(bool) {}

// DropSymbol does nothing: this build has no cgo.
func (*FakeDriver) DropSymbol(string) {}

// InitResult does nothing: this build has no cgo.
func (*FakeDriver) InitResult(int32) {}

// SetDeviceCount does nothing: this build has no cgo.
func (*FakeDriver) SetDeviceCount(int) {}

// Kernels does nothing: this build has no cgo.
func (*FakeDriver) Kernels(time.Duration) {}

// FailEventCreate does nothing: this build has no cgo.
func (*FakeDriver) FailEventCreate(int, int32) {}

// RecordResult does nothing: this build has no cgo.
func (*FakeDriver) RecordResult(int32, int) {}

// Force does nothing: this build has no cgo.
func (*FakeDriver) Force(*cuda.Pool, int, bool, FakeOp, int32, int) {}

// SetSticky does nothing: this build has no cgo.
func (*FakeDriver) SetSticky(int32) {}

// Advance does nothing: this build has no cgo.
func (*FakeDriver) Advance(time.Duration) {}

// Now is always 0: this build has no cgo.
func (*FakeDriver) Now() time.Duration { return 0 }

// StreamWork does nothing: this build has no cgo.
func (*FakeDriver) StreamWork(backend.Stream, time.Duration) {}

// SetCapturing does nothing: this build has no cgo.
func (*FakeDriver) SetCapturing(backend.Stream, cudakit.CaptureMode) {}

// EndCapture does nothing: this build has no cgo.
func (*FakeDriver) EndCapture(backend.Stream) {}

// Counters returns zero counts: this build has no cgo.
func (*FakeDriver) Counters() FakeCounters { return FakeCounters{} }

// ResetCounters does nothing: this build has no cgo.
func (*FakeDriver) ResetCounters() {}

// FakeCUPTI is the fake CUPTI's stand-in in a build without cgo: its knobs
// do nothing, and cuda.OpenTracer fails anyway.
type FakeCUPTI struct{}

// UseFakeCUPTI does nothing: this build has no cgo.
func UseFakeCUPTI() *FakeCUPTI { return &FakeCUPTI{} }

// UseRealCUPTI does nothing: this build has no cgo.
func UseRealCUPTI() {}

// SetVersion does nothing: this build has no cgo.
func (*FakeCUPTI) SetVersion(uint32) {}

// FailOpen does nothing: this build has no cgo.
func (*FakeCUPTI) FailOpen(bool) {}

// OtherSubscriber does nothing: this build has no cgo.
func (*FakeCUPTI) OtherSubscriber(bool) {}

// FailEnable does nothing: this build has no cgo.
func (*FakeCUPTI) FailEnable(int32) {}

// Kernel records nothing: this build has no cgo.
func (*FakeCUPTI) Kernel(device, stream uint32, start, end int64, name string, graph uint32) bool {
	return false
}

// Drop does nothing: this build has no cgo.
func (*FakeCUPTI) Drop(uint32, uint64) {}

// Deliver delivers nothing: this build has no cgo.
func (*FakeCUPTI) Deliver(int) int { return 0 }

// SetClockOffset does nothing: this build has no cgo.
func (*FakeCUPTI) SetClockOffset(int64) {}

// Enabled is false: this build has no cgo.
func (*FakeCUPTI) Enabled() bool { return false }

// Calls are zero: this build has no cgo.
func (*FakeCUPTI) Calls() (int64, int64) { return 0, 0 }

// Finalizes is 0: this build has no cgo.
func (*FakeCUPTI) Finalizes() int64 { return 0 }

// GraphLaunch does nothing: this build has no cgo.
func (*FakeCUPTI) GraphLaunch() int { return 0 }

// Copy records nothing: this build has no cgo.
func (*FakeCUPTI) Copy(uint32, uint32, int64, int64, bool, uint32) bool { return false }

// LaunchCall records nothing: this build has no cgo.
func (*FakeCUPTI) LaunchCall(uint32, int64, int64) uint32 { return 0 }

// BadFinalizes is 0: this build has no cgo.
func (*FakeCUPTI) BadFinalizes() int64 { return 0 }

// Attached is false: this build has no cgo.
func (*FakeCUPTI) Attached() bool { return false }

// ExpectThread does nothing: this build has no cgo.
func (*FakeCUPTI) ExpectThread(int64) {}

// StrayCalls is 0: this build has no cgo.
func (*FakeCUPTI) StrayCalls() int64 { return 0 }

// ThreadID is 0: this build has no cgo.
func ThreadID() int64 { return 0 }

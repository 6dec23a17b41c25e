//go:build !cgo

package cudatest

import (
	"fmt"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
)

// errNoCgo is every kit call's error in a build without cgo.
var errNoCgo = fmt.Errorf("gpuspans/cuda/cudatest: built without cgo: %w", backend.ErrNoDriver)

// Kit is the GPU test kit's stand-in in a build without cgo; NewKit never
// returns one.
type Kit struct{}

// Timer is the kit timer's stand-in in a build without cgo.
type Timer struct{}

// NewKit fails: this build has no cgo.
func NewKit(device int) (*Kit, error) { return nil, errNoCgo }

// Close does nothing: this build has no cgo.
func (k *Kit) Close() error { return nil }

// NewStream fails: this build has no cgo.
func (k *Kit) NewStream() (backend.Stream, error) { return 0, errNoCgo }

// DestroyStream fails: this build has no cgo.
func (k *Kit) DestroyStream(backend.Stream) error { return errNoCgo }

// Spin fails: this build has no cgo.
func (k *Kit) Spin(backend.Stream, time.Duration, *Timer) error { return errNoCgo }

// Empty fails: this build has no cgo.
func (k *Kit) Empty(backend.Stream) error { return errNoCgo }

// SpinGrid fails: this build has no cgo.
func (k *Kit) SpinGrid(backend.Stream, time.Duration, *Timer) error { return errNoCgo }

// NewGridTimer fails: this build has no cgo.
func (k *Kit) NewGridTimer(int) (*Timer, error) { return nil, errNoCgo }

// Sync fails: this build has no cgo.
func (k *Kit) Sync(backend.Stream) error { return errNoCgo }

// NewTimer fails: this build has no cgo.
func (k *Kit) NewTimer() (*Timer, error) { return nil, errNoCgo }

// Read fails: this build has no cgo.
func (t *Timer) Read() (start, end uint64, err error) { return 0, 0, errNoCgo }

// Free fails: this build has no cgo.
func (t *Timer) Free() error { return errNoCgo }

// CaptureBegin fails: this build has no cgo.
func (k *Kit) CaptureBegin(backend.Stream, CaptureMode) error { return errNoCgo }

// CaptureEnd fails: this build has no cgo.
func (k *Kit) CaptureEnd(backend.Stream) (Graph, error) { return 0, errNoCgo }

// Instantiate fails: this build has no cgo.
func (k *Kit) Instantiate(Graph) (GraphExec, error) { return 0, errNoCgo }

// Launch fails: this build has no cgo.
func (k *Kit) Launch(GraphExec, backend.Stream) error { return errNoCgo }

// DestroyGraph fails: this build has no cgo.
func (k *Kit) DestroyGraph(Graph) error { return errNoCgo }

// DestroyGraphExec fails: this build has no cgo.
func (k *Kit) DestroyGraphExec(GraphExec) error { return errNoCgo }

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
func (*FakeDriver) SetCapturing(backend.Stream, CaptureMode) {}

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

// Counter is the kit counter's stand-in in a build without cgo.
type Counter struct{}

// NewCounter fails: this build has no cgo.
func (k *Kit) NewCounter() (*Counter, error) { return nil, errNoCgo }

// Count fails: this build has no cgo.
func (k *Kit) Count(backend.Stream, *Counter) error { return errNoCgo }

// Read fails: this build has no cgo.
func (c *Counter) Read() (uint64, error) { return 0, errNoCgo }

// Free does nothing: this build has no cgo.
func (c *Counter) Free() error { return nil }

//go:build !cgo

package cuda

import (
	"fmt"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// errNoCgo is every call's error in a build without cgo.
var errNoCgo = fmt.Errorf("gpuspans/cuda: built without cgo: %w", backend.ErrNoDriver)

// Load reports that the driver cannot be loaded: this build has no cgo.
func Load() error { return errNoCgo }

// DeviceCount reports no device: this build has no cgo.
func DeviceCount() (int, error) { return 0, errNoCgo }

// DeviceIdentity reports nothing: this build has no cgo.
func DeviceIdentity(int) (backend.Identity, error) { return backend.Identity{}, errNoCgo }

// Pool is the CUDA pool's stand-in in a build without cgo; Open never
// returns one.
type Pool struct {
	device, slots int
}

var (
	_ backend.Pool       = (*Pool)(nil)
	_ backend.Identifier = (*Pool)(nil)
	_ backend.Calibrated = (*Pool)(nil)
)

// EventOffset is unknown: this build has no cgo.
func (p *Pool) EventOffset() (time.Duration, bool) { return 0, false }

// Identity is empty: this build has no cgo.
func (p *Pool) Identity() backend.Identity { return backend.Identity{} }

// Open fails: this build has no cgo.
func Open(device, slots int) (*Pool, error) { return nil, errNoCgo }

// Device is the device ordinal the pool lives on.
func (p *Pool) Device() int { return p.device }

// Slots is the number of event pairs.
func (p *Pool) Slots() int { return p.slots }

// Capturing fails: this build has no cgo.
func (p *Pool) Capturing(backend.Stream) (bool, error) { return false, errNoCgo }

// RecordBegin fails: this build has no cgo.
func (p *Pool) RecordBegin(int, backend.Stream) error { return errNoCgo }

// RecordEnd fails: this build has no cgo.
func (p *Pool) RecordEnd(int, backend.Stream) error { return errNoCgo }

// Harvest fails: this build has no cgo.
func (p *Pool) Harvest([]backend.HarvestItem) error { return errNoCgo }

// SetAnchorInterval does nothing: this build has no cgo.
func (p *Pool) SetAnchorInterval(time.Duration) {}

// Close does nothing: this build has no cgo.
func (p *Pool) Close() error { return nil }

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
// no core to fake, so its methods do nothing. For tests only.
type FakeDriver struct{}

// UseFakeDriverForTesting returns a FakeDriver that does nothing: this build
// has no cgo. For tests only.
func UseFakeDriverForTesting() *FakeDriver { return &FakeDriver{} }

// UseRealDriverForTesting does nothing: this build has no cgo. For tests
// only.
func UseRealDriverForTesting() {}

// SetCaptureModeExchangeForTesting does nothing: this build has no cgo. For
// tests only.
func SetCaptureModeExchangeForTesting(bool) {}

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
func (*FakeDriver) Force(*Pool, int, bool, FakeOp, int32, int) {}

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

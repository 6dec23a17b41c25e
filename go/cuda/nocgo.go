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

// RecordNext fails: this build has no cgo.
func (p *Pool) RecordNext(int, int, backend.Stream) error { return errNoCgo }

// Harvest fails: this build has no cgo.
func (p *Pool) Harvest([]backend.HarvestItem) error { return errNoCgo }

// Close does nothing: this build has no cgo.
func (p *Pool) Close() error { return nil }

// Tracer is the kernel tracer's stand-in in a build without cgo; OpenTracer
// never returns one.
type Tracer struct{}

var _ backend.KernelTracer = (*Tracer)(nil)

var errNoCgoTracer = fmt.Errorf("gpuspans/cuda: built without cgo: %w", backend.ErrNoTracer)

// OpenTracer fails: this build has no cgo.
func OpenTracer(path string, mode backend.TracerMode) (*Tracer, error) { return nil, errNoCgoTracer }

// GuardLaunch runs launch: without cgo no kernel window ever opens.
func GuardLaunch(launch func()) { launch() }

// TracerOpener returns an opener that fails: this build has no cgo.
func TracerOpener(path string) backend.TracerOpener {
	return func(backend.TracerMode) (backend.KernelTracer, error) { return nil, errNoCgoTracer }
}

// Enable fails: this build has no cgo.
func (t *Tracer) Enable(bool) error { return errNoCgoTracer }

// Read reads nothing: this build has no cgo.
func (t *Tracer) Read([]backend.KernelRecord) int { return 0 }

// Name knows no name: this build has no cgo.
func (t *Tracer) Name(uint32) string { return "" }

// ClockOffset is 0: this build has no cgo.
func (t *Tracer) ClockOffset() int64 { return 0 }

// Stats are zero: this build has no cgo.
func (t *Tracer) Stats() backend.TracerStats { return backend.TracerStats{} }

// Close does nothing: this build has no cgo.
func (t *Tracer) Close() error { return nil }

// Abandon does nothing: this build has no cgo.
func (t *Tracer) Abandon() error { return nil }

// FullName knows no name: this build has no cgo.
func (t *Tracer) FullName(uint32) string { return "" }

//go:build !cgo

package cudakit

import (
	"fmt"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// errNoCgo is every kit call's error in a build without cgo.
var errNoCgo = fmt.Errorf("gpuspans/cuda/cudakit: built without cgo: %w", backend.ErrNoDriver)

// Kit is the GPU kit's stand-in in a build without cgo; NewKit never
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

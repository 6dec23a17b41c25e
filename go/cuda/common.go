// Package cuda is the CUDA backend of gpuspans: a backend.Pool of CUDA event
// pairs, implemented by the C++ core in cuda/ and reached through cgo. It is
// the only production library package that imports "C"; built without cgo
// it keeps its API and every call reports backend.ErrNoDriver.
//
// The driver is loaded at run time (libcuda.so.1), so programs using this
// package start on machines without a GPU. Test support (the fake driver)
// lives in go/cuda/cudatest and known GPU work in go/cuda/cudakit, which
// production code never imports: this package links the core (//cuda:core)
// and nothing else.
//
// The package's functions are safe for concurrent use; a Pool's methods
// follow backend.Pool's rules (see Pool).
package cuda

import "github.com/gpuspans/gpuspans/go/backend"

// TracerFlushPeriodMs is how often an attached tracer asks CUPTI for its
// completed buffers (gs_tracer_open's flush_period_ms): kernel spans land
// at most about this much after they ran. A window's records are delivered
// at its close.
const TracerFlushPeriodMs = 100

// Opener returns a backend.Opener that opens a pool on device, of as many
// event pairs as the hub asks, when first called. It may be called from any
// goroutine.
func Opener(device int) backend.Opener {
	return func(slots int) (backend.Pool, error) {
		p, err := Open(device, slots)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}

package fake

import (
	"fmt"
	"sync"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
)

// Tracer is a backend.KernelTracer that reports the kernels a test feeds it,
// for tests of code above the hub (exporters, pages, the window logic) that
// need kernel spans from a tracer without CUPTI. Times are Unix ns on the
// hub's clock (Options.Now): its ClockOffset is 0. It keeps the rules of a
// window as CUPTI needs them and counts what breaks them (Misuse). Safe for
// concurrent use.
type Tracer struct {
	sim.Records // the read side: Read, Name, Stats, ClockOffset

	mu        sync.Mutex
	open      bool
	mode      backend.TracerMode
	on        bool
	opens     [3]int // by mode
	closes    int
	abandons  int
	openErr   error
	refuse    int // closes still to refuse, with refuseErr
	refuseErr error
	misuse    int
}

var _ backend.KernelTracer = (*Tracer)(nil)

// Opener returns an opener that hands out t (Options.KernelTracer): a
// window opens with collection on, an attached open with it off.
func (t *Tracer) Opener() backend.TracerOpener {
	return func(mode backend.TracerMode) (backend.KernelTracer, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.openErr != nil {
			return nil, t.openErr
		}
		if t.open {
			t.misuse++
			return nil, fmt.Errorf("fake: the tracer is open already: %w", backend.ErrTracerBusy)
		}
		if mode > backend.TracerWindowTakeOver {
			return nil, fmt.Errorf("fake: tracer mode %d: %w", mode, backend.ErrNoTracer)
		}
		if mode == backend.TracerWindowTakeOver {
			mode = backend.TracerWindow
		}
		t.open, t.mode, t.on = true, mode, mode == backend.TracerWindow
		t.opens[mode]++
		return t, nil
	}
}

// FailOpen makes later opens fail with err (nil: succeed again).
func (t *Tracer) FailOpen(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.openErr = err
}

// RefuseCloses makes the next n window closes answer ErrWrongThread, as a
// close from another thread than the window's would.
func (t *Tracer) RefuseCloses(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refuse, t.refuseErr = n, backend.ErrWrongThread
}

// HoldGuard makes the next n window closes answer ErrGuardHeld, as while
// another thread stays inside the launch guard.
func (t *Tracer) HoldGuard(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refuse, t.refuseErr = n, backend.ErrGuardHeld
}

// Kernel reports a kernel that ran on device and stream from startNs to
// endNs, replayed from graph (0: none), if collection is on, as CUPTI
// records only kernels launched while it is; it reports whether it did.
func (t *Tracer) Kernel(device int, stream uint32, startNs, endNs int64, name string, graph uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return false
	}
	sim.Keep(&t.Records, device, stream, startNs, endNs, name, graph)
	return true
}

// Enable turns an attached open's collection on or off; a window refuses
// off (counted as misuse).
func (t *Tracer) Enable(on bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.open {
		t.misuse++
		return fmt.Errorf("fake: Enable(%v) on a closed tracer", on)
	}
	if t.mode == backend.TracerWindow && !on {
		t.misuse++
		return fmt.Errorf("fake: Enable(false) inside a window")
	}
	t.on = on
	return nil
}

// Close ends the open: collection off. A window's close answers
// ErrWrongThread while RefuseCloses has refusals left.
func (t *Tracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.open {
		return nil
	}
	if t.mode == backend.TracerWindow && t.refuse > 0 {
		t.refuse--
		return fmt.Errorf("fake: close refused: %w", t.refuseErr)
	}
	t.open, t.on = false, false
	t.closes++
	return nil
}

// Abandon ends the open without a detach.
func (t *Tracer) Abandon() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.open {
		return nil
	}
	t.open, t.on = false, false
	t.abandons++
	return nil
}

// TracerCounts are what a fake Tracer went through.
type TracerCounts struct {
	Windows, Attached int // opens by mode
	Closes, Abandons  int
	Open, On          bool // open now; collecting now
	Misuse            int  // calls that break the tracer's rules
}

// Counts returns what t went through so far.
func (t *Tracer) Counts() TracerCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	return TracerCounts{Windows: t.opens[backend.TracerWindow], Attached: t.opens[backend.TracerAttached],
		Closes: t.closes, Abandons: t.abandons, Open: t.open, On: t.on, Misuse: t.misuse}
}

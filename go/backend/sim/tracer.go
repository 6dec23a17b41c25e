package sim

import (
	"fmt"
	"sync"

	"github.com/gpuspans/gpuspans/go/backend"
)

// Tracer is the kernel tracer of simulated GPUs (backend.KernelTracer),
// what CUPTI is to real ones: while it collects, every kernel a GPU made
// with it (Options.Tracer) launches is recorded with the times the GPU
// runs it, so that kernel windows, their GPU time and the pages that show
// them run on the simulator. Times are on the GPUs' clock (Options.Now),
// so ClockOffset is 0. Safe for concurrent use.
type Tracer struct {
	mu      sync.Mutex
	open    bool
	window  bool
	on      bool
	recs    []backend.KernelRecord
	names   []string // id-1
	ids     map[string]uint32
	records uint64
	dropped [backend.MaxTracerDevices]uint64
}

// TracerRing bounds the records a Tracer holds until they are read, as
// the CUDA core's ring does; a record past it is counted as dropped.
const TracerRing = 1 << 16

// NewTracer returns a closed tracer.
func NewTracer() *Tracer { return &Tracer{ids: make(map[string]uint32)} }

// Opener opens t (gpuspans.Options.KernelTracer): a window with collection
// on, an attached open with it off until Enable. One open at a time, as
// CUPTI is one per process.
func (t *Tracer) Opener() backend.TracerOpener {
	return func(mode backend.TracerMode) (backend.KernelTracer, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.open {
			return nil, fmt.Errorf("sim: the tracer is open already: %w", backend.ErrTracerBusy)
		}
		switch mode {
		case backend.TracerWindow, backend.TracerWindowTakeOver:
			t.window, t.on = true, true
		case backend.TracerAttached:
			t.window, t.on = false, false
		default:
			return nil, fmt.Errorf("sim: tracer mode %d: %w", mode, backend.ErrNoTracer)
		}
		t.open = true
		return t, nil
	}
}

// record keeps one kernel if collection is on.
func (t *Tracer) record(device int, stream backend.Stream, startNs, endNs int64, name string, graph uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return
	}
	if len(t.recs) >= TracerRing || device < 0 || device >= backend.MaxTracerDevices {
		if device >= 0 && device < backend.MaxTracerDevices {
			t.dropped[device]++
		}
		return
	}
	id := t.ids[name]
	if id == 0 && name != "" && len(t.names) < backend.MaxTracerNames {
		t.names = append(t.names, name)
		id = uint32(len(t.names))
		t.ids[name] = id
	}
	t.recs = append(t.recs, backend.KernelRecord{StartNs: startNs, EndNs: endNs, Device: uint32(device),
		Stream: uint32(stream), Name: id, Graph: graph})
	t.records++
}

// Enable switches an attached open's collection; a window refuses off.
func (t *Tracer) Enable(on bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !t.open:
		return fmt.Errorf("sim: Enable(%v): the tracer is not open", on)
	case t.window && !on:
		return fmt.Errorf("sim: Enable(false) inside a window: a window collects until its close")
	}
	t.on = on
	return nil
}

// Read moves the records collected so far into dst, oldest first.
func (t *Tracer) Read(dst []backend.KernelRecord) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := copy(dst, t.recs)
	t.recs = t.recs[:copy(t.recs, t.recs[n:])]
	return n
}

// Name returns the kernel name of id, "" for 0 or an unknown id.
func (t *Tracer) Name(id uint32) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id == 0 || int(id) > len(t.names) {
		return ""
	}
	return t.names[id-1]
}

// ClockOffset is 0: records are on the GPUs' clock, the hub's.
func (t *Tracer) ClockOffset() int64 { return 0 }

// Stats returns the records kept and dropped since t was made.
func (t *Tracer) Stats() backend.TracerStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := backend.TracerStats{Records: t.records, Names: len(t.names), DroppedByDevice: t.dropped}
	for _, d := range t.dropped {
		s.Dropped += d
	}
	return s
}

// Close ends the open: collection off; records stay readable.
func (t *Tracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open, t.on = false, false
	return nil
}

// Abandon is Close: a simulated GPU has no detach to skip.
func (t *Tracer) Abandon() error { return t.Close() }

package fake

import (
	"sync"

	"github.com/gpuspans/gpuspans/go/backend"
)

// Tracer is a backend.KernelTracer that reports the kernels a test feeds it,
// for tests of code above the hub (exporters, pages) that need kernel spans
// from a tracer without CUPTI. Times are Unix ns on the hub's clock
// (Options.Now): its ClockOffset is 0. Safe for concurrent use.
type Tracer struct {
	mu      sync.Mutex
	on      bool
	recs    []backend.KernelRecord
	names   []string // id-1
	ids     map[string]uint32
	records uint64
}

var _ backend.KernelTracer = (*Tracer)(nil)

// Opener returns an opener that hands out t (Options.KernelTracer).
func (t *Tracer) Opener() backend.TracerOpener {
	return func() (backend.KernelTracer, error) { return t, nil }
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
	id, ok := t.ids[name]
	if !ok {
		if t.ids == nil {
			t.ids = make(map[string]uint32)
		}
		t.names = append(t.names, name)
		id = uint32(len(t.names))
		t.ids[name] = id
	}
	t.recs = append(t.recs, backend.KernelRecord{StartNs: startNs, EndNs: endNs, Device: uint32(device),
		Stream: stream, Name: id, Graph: graph})
	t.records++
	return true
}

// Enable turns collection on or off.
func (t *Tracer) Enable(on bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on = on
	return nil
}

// Read moves the kernels fed so far into dst.
func (t *Tracer) Read(dst []backend.KernelRecord) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := copy(dst, t.recs)
	t.recs = t.recs[:copy(t.recs, t.recs[n:])]
	return n
}

// Name returns the name Kernel was given for id.
func (t *Tracer) Name(id uint32) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id == 0 || int(id) > len(t.names) {
		return ""
	}
	return t.names[id-1]
}

// ClockOffset is 0: times are fed on the hub's clock.
func (t *Tracer) ClockOffset() int64 { return 0 }

// Stats counts the kernels fed while collection was on.
func (t *Tracer) Stats() backend.TracerStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return backend.TracerStats{Records: t.records, Names: len(t.names)}
}

// Close turns collection off.
func (t *Tracer) Close() error { return t.Enable(false) }

package sim

import (
	"fmt"
	"sync"

	"github.com/gpuspans/gpuspans/go/backend"
)

// Records holds kernel records until they are read, with their names
// interned: a kernel tracer's store, the simulator's and go/backend/fake's.
// A tracer embeds it for the read side of backend.KernelTracer (Read, Name,
// Stats, ClockOffset); Keep adds to it. At most TracerRing records wait;
// one past them is counted as dropped. Safe for concurrent use.
type Records struct {
	mu      sync.Mutex
	recs    []backend.KernelRecord
	names   []string // id-1
	ids     map[string]uint32
	records uint64
	dropped [backend.MaxTracerDevices]uint64
}

// Keep adds one record to r: a kernel that ran on device and stream from
// startNs to endNs, replayed from graph (0: none). An empty name, or one
// past backend.MaxTracerNames, has id 0. It is a function rather than a
// method so that a tracer embedding Records publishes only its read side:
// what a tracer keeps is its own rule (collection on).
func Keep(r *Records, device int, stream uint32, startNs, endNs int64, name string, graph uint32) {
	KeepRecord(r, backend.KernelRecord{StartNs: startNs, EndNs: endNs, Device: uint32(device), Stream: stream, Graph: graph}, name)
}

// KeepRecord adds rec, of any kind, to r, with its Name the id of name (as
// Keep). A record of a device past backend.MaxTracerDevices is not kept.
func KeepRecord(r *Records, rec backend.KernelRecord, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	device := int(rec.Device)
	if device >= backend.MaxTracerDevices {
		return
	}
	if len(r.recs) >= TracerRing {
		r.dropped[device]++
		return
	}
	id := r.ids[name]
	if id == 0 && name != "" && len(r.names) < backend.MaxTracerNames {
		if r.ids == nil {
			r.ids = make(map[string]uint32)
		}
		r.names = append(r.names, name)
		id = uint32(len(r.names))
		r.ids[name] = id
	}
	rec.Name = id
	r.recs = append(r.recs, rec)
	r.records++
}

// Read moves the records kept so far into dst, oldest first.
func (r *Records) Read(dst []backend.KernelRecord) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := copy(dst, r.recs)
	r.recs = r.recs[:copy(r.recs, r.recs[n:])]
	return n
}

// Name returns the name of id, "" for 0 or an unknown id.
func (r *Records) Name(id uint32) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id == 0 || int(id) > len(r.names) {
		return ""
	}
	return r.names[id-1]
}

// ClockOffset is 0: records are kept on the hub's clock.
func (r *Records) ClockOffset() int64 { return 0 }

// Stats returns the records kept and dropped, and the names interned.
func (r *Records) Stats() backend.TracerStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := backend.TracerStats{Records: r.records, Names: len(r.names), DroppedByDevice: r.dropped}
	for _, d := range r.dropped {
		s.Dropped += d
	}
	return s
}

// TracerRing bounds the records a Records holds until they are read, as
// the CUDA core's ring does.
const TracerRing = 1 << 16

// Tracer is the kernel tracer of simulated GPUs (backend.KernelTracer),
// what CUPTI is to real ones: while it collects, every kernel a GPU made
// with it (Options.Tracer) launches is recorded with the times the GPU
// runs it, with the launch call that queued it (backend.RecordLaunch) and
// the copies the GPU runs, so that kernel windows, their GPU time and idle
// by cause, and the pages that show them run on the simulator. Times are on the GPUs' clock (Options.Now),
// so ClockOffset is 0. Safe for concurrent use.
type Tracer struct {
	Records // the read side: Read, Name, Stats, ClockOffset

	mu     sync.Mutex
	open   bool
	window bool
	on     bool
	corr   uint32 // the latest correlation id given
}

// NewTracer returns a closed tracer.
func NewTracer() *Tracer { return &Tracer{} }

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

// namedRecord is a record and its kernel's name ("" for none).
type namedRecord struct {
	rec  backend.KernelRecord
	name string
}

// record keeps one launch's records if collection is on: its launch call
// and kernels get a correlation of their own.
func (t *Tracer) record(recs ...namedRecord) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return
	}
	t.corr++
	for _, r := range recs {
		if r.rec.Kind == backend.RecordKernel || r.rec.Kind == backend.RecordLaunch {
			r.rec.Correlation = t.corr
		}
		KeepRecord(&t.Records, r.rec, r.name)
	}
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

// Close ends the open: collection off; records stay readable.
func (t *Tracer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open, t.on = false, false
	return nil
}

// Abandon is Close: a simulated GPU has no detach to skip.
func (t *Tracer) Abandon() error { return t.Close() }

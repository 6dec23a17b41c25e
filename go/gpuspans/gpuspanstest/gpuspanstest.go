// Package gpuspanstest helps tests of code that uses gpuspans: a check of
// the hub's span accounting, a pool that does no GPU work, a kernel tracer
// fed by the test (Tracer), and a log sink for Options.Logf.
//
// It does not import package testing, so benchmark programs can use
// NopOpener too; the checks take any value with testing.TB's Helper and
// Fatalf.
package gpuspanstest

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// TB is the part of testing.TB the checks use.
type TB interface {
	Helper()
	Fatalf(format string, args ...interface{})
}

// Accounting returns an error unless every begun span in s is accounted
// for exactly, in total and on each device (Begun == Landed + dropped +
// InFlight + Errored), and the devices add up to the totals. The identity
// holds only in a snapshot taken while no span call runs (see
// gpuspans.Counters).
func Accounting(s *gpuspans.Snapshot) error {
	c := &s.Counters
	if sum := c.Landed + c.DroppedTotal() + c.InFlight + c.Errored; c.Begun != sum {
		return fmt.Errorf("begun %d != landed %d + dropped %v + in flight %d + errored %d = %d",
			c.Begun, c.Landed, c.Dropped, c.InFlight, c.Errored, sum)
	}
	var all gpuspans.DeviceCounters
	for _, d := range s.PerDevice {
		if sum := d.Landed + d.DroppedTotal() + d.InFlight + d.Errored; d.Begun != sum {
			return fmt.Errorf("device %d: begun %d != landed %d + dropped %v + in flight %d + errored %d = %d",
				d.Device, d.Begun, d.Landed, d.Dropped, d.InFlight, d.Errored, sum)
		}
		all.Begun += d.Begun
		all.Landed += d.Landed
		all.Errored += d.Errored
		all.InFlight += d.InFlight
		for i := range all.Dropped {
			all.Dropped[i] += d.Dropped[i]
		}
	}
	if all.Begun != c.Begun || all.Landed != c.Landed || all.Errored != c.Errored || all.InFlight != c.InFlight || all.Dropped != c.Dropped {
		return fmt.Errorf("devices add up to begun %d, landed %d, dropped %v, in flight %d, errored %d; totals are %d, %d, %v, %d, %d",
			all.Begun, all.Landed, all.Dropped, all.InFlight, all.Errored, c.Begun, c.Landed, c.Dropped, c.InFlight, c.Errored)
	}
	return nil
}

// CheckAccounting fails t (Fatalf) unless Accounting(s) is nil.
func CheckAccounting(t TB, s *gpuspans.Snapshot) {
	t.Helper()
	if err := Accounting(s); err != nil {
		t.Fatalf("gpuspans accounting: %v", err)
	}
}

// Snapshot takes a snapshot of h and checks its accounting with
// CheckAccounting: call it while no span call runs.
func Snapshot(t TB, h *gpuspans.Hub) gpuspans.Snapshot {
	t.Helper()
	s := h.Snapshot()
	CheckAccounting(t, &s)
	return s
}

// NopDuration is the duration of every span a NopPool lands.
const NopDuration = 1000 // ns

// NopPool is a backend.Pool that does no GPU work: every record succeeds at
// once and every harvest finds each span done, NopDuration long. A hub on
// it costs only the hub's own work. It is a plain value, safe from any
// goroutine, on device 0 with gpuspans.MaxSlots slots.
type NopPool struct{}

// NopOpener is a backend.Opener of NopPools.
func NopOpener() (backend.Pool, error) { return NopPool{}, nil }

// Device returns 0.
func (NopPool) Device() int { return 0 }

// Slots returns gpuspans.MaxSlots, so the hub's Options.Slots decides.
func (NopPool) Slots() int { return gpuspans.MaxSlots }

// RecordBegin does nothing.
func (NopPool) RecordBegin(int, backend.Stream) error { return nil }

// RecordEnd does nothing.
func (NopPool) RecordEnd(int, backend.Stream) error { return nil }

// Close does nothing.
func (NopPool) Close() error { return nil }

// Harvest reports every item done, NopDuration long.
func (NopPool) Harvest(items []backend.HarvestItem) error {
	for i := range items {
		items[i].State, items[i].DurationNs = backend.Done, NopDuration
	}
	return nil
}

// Log records log lines, as gpuspans.Options.Logf (or any printf-style
// logger) writes them. Unlike a test's t.Logf it stays usable after the
// test ends, as a hub may log from any goroutine. Its zero value is ready;
// its methods are safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	lines []string
}

// Logf records one line, formatted as fmt.Sprintf does.
func (l *Log) Logf(format string, args ...interface{}) {
	line := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
}

// Lines returns a copy of the lines recorded so far, in order.
func (l *Log) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Count returns how many recorded lines contain sub.
func (l *Log) Count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n
}

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

package gpuspans

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/fake"
	"github.com/gpuspans/gpuspans/go/sim"
)

// logSink collects a hub's log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(format string, args ...interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// count returns how many lines contain sub.
func (l *logSink) count(sub string) int {
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

// newHub returns a hub with o, logging to t unless o.Logf is set.
func newHub(t testing.TB, o Options) *Hub {
	t.Helper()
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	h, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h
}

// newFake returns a fake pool that fails t on any contract breach.
func newFake(t testing.TB, o fake.Options) *fake.Pool {
	if o.Errorf == nil {
		o.Errorf = t.Errorf
	}
	return fake.New(o)
}

// kernelHub returns a hub at level Kernel with kernel spans armed on every
// step, and a fake pool installed on device 0 and opened.
func kernelHub(t testing.TB, o Options, fo fake.Options) (*Hub, *fake.Pool) {
	t.Helper()
	o.Level = LevelKernel
	if o.KernelSpanEvery == 0 {
		o.KernelSpanEvery = 1
	}
	h := newHub(t, o)
	f := newFake(t, fo)
	if err := h.Install(fo.Device, laneStream, f.Opener()); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	return h, f
}

const (
	laneStream   backend.Stream = 0x100
	kernelStream backend.Stream = 0x200
)

// checkBalance fails t unless every begun span is accounted for exactly.
func checkBalance(t testing.TB, s *Snapshot) {
	t.Helper()
	c := &s.Counters
	if sum := c.Landed + c.DroppedTotal() + c.InFlight + c.Errored; c.Begun != sum {
		t.Fatalf("begun %d != landed %d + dropped %v + in flight %d + errored %d = %d",
			c.Begun, c.Landed, c.Dropped, c.InFlight, c.Errored, sum)
	}
	// Per device: the same identity, and the devices add up to the totals.
	var all DeviceCounters
	for _, d := range s.PerDevice {
		if sum := d.Landed + d.DroppedTotal() + d.InFlight + d.Errored; d.Begun != sum {
			t.Fatalf("device %d: begun %d != landed %d + dropped %v + in flight %d + errored %d = %d",
				d.Device, d.Begun, d.Landed, d.Dropped, d.InFlight, d.Errored, sum)
		}
		all.Begun, all.Landed, all.Errored, all.InFlight = all.Begun+d.Begun, all.Landed+d.Landed, all.Errored+d.Errored, all.InFlight+d.InFlight
		for i := range all.Dropped {
			all.Dropped[i] += d.Dropped[i]
		}
	}
	if all.Begun != c.Begun || all.Landed != c.Landed || all.Errored != c.Errored || all.InFlight != c.InFlight || all.Dropped != c.Dropped {
		t.Fatalf("devices add up to %+v, totals are %+v", all, *c)
	}
}

func snap(t testing.TB, h *Hub) Snapshot {
	t.Helper()
	s := h.Snapshot()
	checkBalance(t, &s)
	return s
}

// simHub returns a hub at level Kernel on a simulated GPU driven by a manual
// clock, with lane spans on a stream of that GPU, opened.
func simHub(t testing.TB, o Options) (*Hub, *sim.GPU, *sim.Clock, backend.Stream) {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	s := gpu.NewStream()
	o.Level = LevelKernel
	if o.KernelSpanEvery == 0 {
		o.KernelSpanEvery = 1
	}
	h := newHub(t, o)
	if err := h.Install(0, s, gpu.Opener(64)); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	return h, gpu, clock, s
}

// nonEmpty counts the aggregates with a span: snapshots list the empty
// ones too.
func nonEmpty(aggs []Aggregate) int {
	n := 0
	for i := range aggs {
		if aggs[i].Count > 0 {
			n++
		}
	}
	return n
}

package gpuspans

import (
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
)

// The helpers of package gpuspanstest, which package gpuspans's own tests
// cannot import (it imports gpuspans): gpuspanstest_test.go, an external
// test file, sets them before any test runs.
var (
	// CheckBalance is gpuspanstest.CheckAccounting.
	CheckBalance func(t testing.TB, s *Snapshot)
	// NewLog returns a new gpuspanstest.Log.
	NewLog func() Log
)

// Log is the part of gpuspanstest.Log the tests use.
type Log interface {
	Logf(format string, args ...interface{})
	Count(sub string) int
	Lines() []string
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

func snap(t testing.TB, h *Hub) Snapshot {
	t.Helper()
	s := h.Snapshot()
	CheckBalance(t, &s)
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
	if err := h.Install(0, s, gpu.Opener()); err != nil {
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

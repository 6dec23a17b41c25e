package gpuspans

import (
	"math"
	"strings"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
)

// TestMisuseAtTheExtremes: bad arguments at the ends of their types have the
// same defined results as the ordinary bad ones (TestBadAPIUse,
// TestSetLevel, TestKernelSpanEvery): ignored and counted, or refused with
// an error, never a backend call or a panic.
func TestMisuseAtTheExtremes(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	before := f.Calls()
	for _, lane := range []int{math.MaxInt, math.MinInt, MaxLanes, -MaxLanes} {
		h.LaneBegin(lane)
		h.LaneEnd(lane)
	}
	for _, dev := range []int{-1, math.MaxInt, math.MinInt, MaxDevices} {
		if sp := h.Device(dev).KernelBegin(1, kernelStream); sp != (KernelSpan{}) {
			t.Errorf("Device(%d) opened a span", dev)
		}
		h.Uninstall(dev)
	}
	if d := f.Calls().Sub(before); d.Total() != 0 {
		t.Errorf("bad calls reached the backend: %+v", d)
	}
	if c := snap(t, h).Counters; c.UnknownLane != 4 || c.Begun != 0 {
		t.Errorf("counters %+v", c)
	}

	for _, l := range []Level{3, 4, math.MaxUint32} {
		if err := h.SetLevel(l); err == nil || !strings.Contains(err.Error(), "invalid level") {
			t.Errorf("SetLevel(%d) = %v", uint32(l), err)
		}
	}
	if _, err := New(Options{Level: math.MaxUint32}); err == nil {
		t.Error("New with a junk level succeeded")
	}
	if h.Level() != LevelKernel {
		t.Errorf("level %v after refused changes", h.Level())
	}

	for _, n := range []int{0, -1, math.MinInt, MaxKernelSpanEvery + 1, math.MaxInt} {
		if err := h.SetKernelSpanEvery(n); err == nil {
			t.Errorf("SetKernelSpanEvery(%d) succeeded", n)
		}
		if _, err := New(Options{KernelSpanEvery: n}); n != 0 && err == nil {
			t.Errorf("New with KernelSpanEvery %d succeeded", n)
		}
	}
	// The largest period is valid and arms no step for as long as anyone
	// will run.
	if err := h.SetKernelSpanEvery(MaxKernelSpanEvery); err != nil {
		t.Fatal(err)
	}
	armed := snap(t, h).ArmedSteps
	for i := 0; i < 100; i++ {
		h.BeginStep()
		h.KernelEnd(h.KernelBegin(1, kernelStream))
	}
	if s := snap(t, h); s.ArmedSteps != armed || s.Counters.Begun != 0 || s.KernelSpanEvery != MaxKernelSpanEvery {
		t.Errorf("snapshot %+v", s)
	}
}

// TestMaxLanesOnASmallRing: a hub with the most lanes, all open at once on
// a ring smaller than that, records what fits and drops the rest, counted.
func TestMaxLanesOnASmallRing(t *testing.T) {
	lanes := make([]string, MaxLanes)
	for i := range lanes {
		lanes[i] = "lane" + string(rune('A'+i%26)) + string(rune('a'+i/26))
	}
	const ring = 16
	h, f := kernelHub(t, Options{Lanes: lanes, Slots: ring}, fake.Options{})
	for step := 0; step < 3; step++ {
		h.BeginStep()
		for i := range lanes {
			h.LaneBegin(i)
		}
		for i := range lanes {
			h.LaneEnd(i)
		}
	}
	h.Harvest()
	s := snap(t, h)
	if c := s.Counters; c.Begun != 3*MaxLanes || c.Landed != 3*ring || c.Dropped[DropSlotBusy] != 3*(MaxLanes-ring) || c.InFlight != 0 {
		t.Errorf("counters %+v", c)
	}
	if c := f.Calls(); c.RecordBegin != 3*ring || c.RecordEnd != 3*ring {
		t.Errorf("calls %+v", c)
	}
	if n := nonEmpty(s.Lanes); n != ring {
		t.Errorf("%d lane aggregates with spans, want %d", n, ring)
	}
}

// TestOpenerReturnsNothing: an opener that returns neither a pool nor an
// error fails the device like any failed open.
func TestOpenerReturnsNothing(t *testing.T) {
	log := NewLog()
	h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 1, Logf: log.Logf})
	if err := h.Install(0, laneStream, func(int) (backend.Pool, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	exercise(h, 5)
	s := snap(t, h)
	if s.Devices[0].State != DeviceFailed || s.Counters.InstallFailures != 1 || s.Counters.Begun != 0 {
		t.Errorf("snapshot %+v", s)
	}
	if n := log.Count("no pool and no error"); n != 1 {
		t.Errorf("logged %d times: %q", n, log.Lines())
	}
}

func TestOpenerPanics(t *testing.T) {
	log := NewLog()
	h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 1, Logf: log.Logf})
	if err := h.Install(0, laneStream, func(int) (backend.Pool, error) { panic("driver wrapper bug") }); err != nil {
		t.Fatal(err)
	}
	exercise(h, 5) // must not panic
	s := snap(t, h)
	if s.Devices[0].State != DeviceFailed || s.Counters.InstallFailures != 1 || s.Counters.Begun != 0 {
		t.Errorf("snapshot %+v", s)
	}
	if n := log.Count("opener panicked: driver wrapper bug"); n != 1 {
		t.Errorf("logged %d times: %q", n, log.Lines())
	}
}

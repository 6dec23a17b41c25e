package gpuspans

import (
	"errors"
	"math/rand"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
)

var threeLanes = []string{"prefill", "decode", "sample"}

// Lanes that share their boundaries time exactly what separate lanes time,
// on the simulated GPU: each lane's span is its work, the next begins where
// it ended, and a step boundary joins the last lane to the next step's first.
func TestNextLaneOnSim(t *testing.T) {
	h, gpu, clock, s := simHub(t, Options{Lanes: threeLanes, StartTimes: StartTimesAlways})
	start := clock.Now()
	work := []time.Duration{3 * time.Millisecond, 2 * time.Millisecond, time.Millisecond}
	const steps = 4
	h.LaneBegin(0)
	for step := 0; step < steps; step++ {
		for lane, d := range work {
			gpu.Launch(s, d)
			if lane < 2 {
				h.NextLane(lane, lane+1)
			}
		}
		if step < steps-1 {
			h.NextStep(2, 0)
		}
	}
	h.LaneEnd(2)
	clock.Advance(time.Second)
	h.Harvest()
	st := snap(t, h)
	if st.Counters.Landed != 3*steps || st.Counters.InFlight != 0 {
		t.Fatalf("counters %+v", st.Counters)
	}
	for i, want := range work {
		a := st.Lanes[i]
		if a.Count != steps || a.Min != want || a.Max != want {
			t.Errorf("lane %s: %+v; want %d spans of %v", threeLanes[i], a, steps, want)
		}
	}
	spans := h.RecentSpans(0, nil)
	if len(spans) != 3*steps {
		t.Fatalf("%d recent spans", len(spans))
	}
	at := start
	for k, sp := range spans {
		lane := k % 3
		if sp.Name != threeLanes[lane] || sp.StartNs != at.UnixNano() || sp.Step != uint64(k/3+1) {
			t.Errorf("span %d: %+v; want %s at %v in step %d", k, sp, threeLanes[lane], at, k/3+1)
		}
		at = at.Add(work[lane])
	}
}

// One event per boundary: a step of three lanes joined by NextLane and
// NextStep costs three records where separate lanes cost six, and the fake
// pool sees no borrowed event recorded again before its borrower landed,
// while harvests leave spans in flight at random and the ring wraps.
func TestNextLaneOneEventPerBoundary(t *testing.T) {
	h, f := kernelHub(t, Options{Lanes: threeLanes, Slots: 8}, fake.Options{Slots: 8})
	rng := rand.New(rand.NewSource(1))
	f.SetOutcome(func(int) (backend.SpanState, int64) {
		if rng.Intn(3) == 0 {
			return backend.InFlight, 0
		}
		return backend.Done, 1000
	})
	before := f.Calls()
	const steps = 2000
	h.LaneBegin(0)
	for step := 0; step < steps; step++ {
		h.NextLane(0, 1)
		h.NextLane(1, 2)
		if step < steps-1 {
			h.NextStep(2, 0) // harvests: the fake is synchronous
		}
	}
	h.LaneEnd(2)
	f.SetOutcome(nil)
	for i := 0; i < 4; i++ {
		h.Harvest()
	}
	d := f.Calls().Sub(before)
	st := snap(t, h)
	c := st.Counters
	if c.InFlight != 0 || c.Errored != 0 || c.Begun != c.Landed+c.DroppedTotal() {
		t.Fatalf("counters %+v", c)
	}
	if c.Dropped[DropSlotBusy] == 0 || c.Landed < steps {
		t.Fatalf("want the 8-slot ring to wrap and drop some: %+v", c)
	}
	// Every landed span but the first began at another's end.
	if uint64(d.RecordBegin+d.RecordNext+d.RecordEnd) > 2*c.Begun || uint64(d.RecordNext) < c.Landed/2 {
		t.Errorf("records %+v for %d spans begun", d, c.Begun)
	}
	if v := f.Violations(); len(v) != 0 {
		t.Fatalf("contract breaches: %v", v[0])
	}
}

// The steady state: with a ring that never fills, exactly one record per
// boundary.
func TestNextLaneRecordCount(t *testing.T) {
	h, f := kernelHub(t, Options{Lanes: threeLanes}, fake.Options{})
	before := f.Calls()
	const steps = 100
	h.LaneBegin(0)
	for step := 0; step < steps; step++ {
		h.NextLane(0, 1)
		h.NextLane(1, 2)
		if step < steps-1 {
			h.NextStep(2, 0)
		}
	}
	h.LaneEnd(2)
	h.Harvest()
	d := f.Calls().Sub(before)
	if d.RecordBegin != 1 || d.RecordEnd != 1 || d.RecordNext != 3*steps-1 {
		t.Errorf("records %+v; want 1 begin, %d next, 1 end", d, 3*steps-1)
	}
	if c := snap(t, h).Counters; c.Landed != 3*steps || c.Begun != 3*steps {
		t.Errorf("counters %+v", c)
	}
}

// NextLane's edges follow LaneBegin's and LaneEnd's rules.
func TestNextLaneEdges(t *testing.T) {
	h, f := kernelHub(t, Options{Lanes: threeLanes}, fake.Options{})
	c0 := f.Calls()
	h.NextLane(0, 1) // from not open: begins to
	h.NextLane(-1, 2)
	h.NextLane(1, 2) // to already open: counted, from still ends
	h.NextLane(2, -1)
	h.NextLane(-1, 3) // unknown lane: counted
	h.NextLane(7, -1) // no such lane open: nothing
	h.NextLane(-1, -1)
	d := f.Calls().Sub(c0)
	if d.RecordBegin != 2 || d.RecordEnd != 2 || d.RecordNext != 0 {
		t.Errorf("records %+v", d)
	}
	c := snap(t, h).Counters
	if c.LaneAlreadyOpen != 1 || c.UnknownLane != 1 || c.InFlight != 0 && c.Landed+c.InFlight != 2 {
		t.Errorf("counters %+v", c)
	}

	// The same lane again: ends and begins it at one event.
	h.LaneBegin(0)
	h.NextLane(0, 0)
	h.LaneEnd(0)
	// Below Kernel only the end is made.
	h.LaneBegin(1)
	h.SetLevel(LevelStep)
	c1 := f.Calls()
	h.NextLane(1, 2)
	h.NextStep(-1, 0)
	d = f.Calls().Sub(c1)
	if d.RecordEnd != 1 || d.RecordBegin != 0 || d.RecordNext != 0 {
		t.Errorf("below Kernel: %+v", d)
	}
	h.SetLevel(LevelKernel)
	h.BeginStep()
	h.Harvest()
	if c := snap(t, h).Counters; c.InFlight != 0 || c.Begun != c.Landed {
		t.Errorf("counters %+v", c)
	}
	// Every lane is closed: LaneEnd's fast path has nothing to do again.
	if n := h.openLanes.Load(); n != 0 {
		t.Errorf("open-lane count %d with no lane open", n)
	}
}

// A capturing stream drops both spans, a sticky error kills the recorder,
// and neither loses count.
func TestNextLaneFailures(t *testing.T) {
	h, f := kernelHub(t, Options{Lanes: threeLanes}, fake.Options{})
	h.LaneBegin(0)
	f.SetCapturing(laneStream, true)
	h.NextLane(0, 1)
	f.SetCapturing(laneStream, false)
	c := snap(t, h).Counters
	if c.Dropped[DropCapturing] != 2 || c.InFlight != 0 {
		t.Errorf("capturing: %+v", c)
	}
	h.LaneBegin(0)
	f.SetRecordError(func(op fake.Op, slot int, s backend.Stream) error {
		if op == fake.OpRecordNext {
			return errors.New("a plain driver error")
		}
		return nil
	})
	h.NextLane(0, 1)
	f.SetRecordError(nil)
	c = snap(t, h).Counters
	if c.Errored != 2 || c.InFlight != 0 {
		t.Errorf("record error: %+v", c)
	}
	h.LaneBegin(0)
	f.SetSticky(true)
	h.NextLane(0, 1)
	h.NextLane(1, 2)
	f.SetSticky(false)
	c = snap(t, h).Counters
	if c.StickyDisables != 1 || c.InFlight != 0 || c.Begun != c.Landed+c.DroppedTotal()+c.Errored {
		t.Errorf("sticky: %+v", c)
	}
	// Each failed hand-off gave the lane's place in the open-lane count up.
	if n := h.openLanes.Load(); n != 0 {
		t.Errorf("open-lane count %d with no lane open", n)
	}
}

// A borrower never ended is reclaimed as leaked and gives its event back, so
// the lender's slot serves again; so does uninstalling with lanes chained.
func TestNextLaneLeakedAndRetired(t *testing.T) {
	h, f := kernelHub(t, Options{Lanes: threeLanes, Slots: 4}, fake.Options{Slots: 4})
	h.leakSteps = 4
	h.LaneBegin(0)
	h.NextLane(0, 1) // lane 1 never ends
	for i := 0; i < 12; i++ {
		h.BeginStep()
	}
	c := snap(t, h).Counters
	if c.Dropped[DropLeaked] != 1 || c.Landed != 1 || c.InFlight != 0 {
		t.Fatalf("leaked: %+v", c)
	}
	for i := 0; i < 8; i++ { // every slot serves again
		h.LaneBegin(0)
		h.NextLane(0, 1)
		h.LaneEnd(1)
		h.BeginStep()
	}
	if c := snap(t, h).Counters; c.Dropped[DropSlotBusy] != 0 || c.Landed != 17 {
		t.Fatalf("after the leak: %+v", c)
	}
	h.LaneBegin(0)
	h.NextLane(0, 1)
	h.Uninstall(0)
	for i := 0; i < 4; i++ {
		h.BeginStep()
	}
	c = snap(t, h).Counters
	if c.InFlight != 0 || c.Begun != c.Landed+c.DroppedTotal() || !f.Closed() {
		t.Errorf("retired: %+v, pool closed %v", c, f.Closed())
	}
	if v := f.Violations(); len(v) != 0 {
		t.Fatalf("contract breaches: %v", v)
	}
}

func TestNextLaneNoAllocs(t *testing.T) {
	h, _ := kernelHub(t, Options{Lanes: threeLanes}, fake.Options{})
	h.LaneBegin(0)
	allocs := testing.AllocsPerRun(1000, func() {
		h.NextLane(0, 1)
		h.NextLane(1, 2)
		h.NextStep(2, 0)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per step of shared boundaries", allocs)
	}
	off := newHub(t, Options{Lanes: threeLanes})
	allocs = testing.AllocsPerRun(1000, func() {
		off.NextLane(0, 1)
		off.NextStep(2, 0)
	})
	if allocs != 0 {
		t.Errorf("%v allocations at Off", allocs)
	}
}

// BenchmarkLaneBoundaries compares a step of three lanes with separate
// begins and ends against the same step with shared boundaries, on a pool
// that does no GPU work: the hub's own cost per step.
func BenchmarkLaneBoundaries(b *testing.B) {
	for _, shared := range []bool{false, true} {
		name := "separate"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			h := newHub(b, Options{Lanes: threeLanes, Level: LevelKernel, KernelSpanEvery: 1000000})
			if err := h.Install(0, laneStream, sim.NopOpener); err != nil {
				b.Fatal(err)
			}
			h.BeginStep()
			b.ReportAllocs()
			b.ResetTimer()
			if shared {
				h.LaneBegin(0)
				for i := 0; i < b.N; i++ {
					h.NextLane(0, 1)
					h.NextLane(1, 2)
					h.NextStep(2, 0)
				}
				return
			}
			for i := 0; i < b.N; i++ {
				h.LaneBegin(0)
				h.LaneEnd(0)
				h.LaneBegin(1)
				h.LaneEnd(1)
				h.LaneBegin(2)
				h.LaneEnd(2)
				h.BeginStep()
			}
		})
	}
}

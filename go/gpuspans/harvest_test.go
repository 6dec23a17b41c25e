package gpuspans

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
)

func TestHarvestCallsOnlyHarvest(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	f.SetOutcome(func(int) (backend.SpanState, int64) { return backend.InFlight, 0 })
	for i := 0; i < 10; i++ {
		h.KernelEnd(h.KernelBegin(1, kernelStream))
	}
	h.LaneBegin(0) // open, not closed: not harvested
	for i := 0; i < 3; i++ {
		before := f.Calls()
		h.Harvest()
		if d := f.Calls().Sub(before); d.Total() != 1 || d.Harvest != 1 || d.Items != 10 {
			t.Fatalf("harvest %d made %+v; want one Harvest of 10 items", i, d)
		}
	}
	if c := snap(t, h).Counters; c.InFlight != 11 || c.Landed != 0 {
		t.Fatalf("counters %+v", c)
	}
	f.SetOutcome(nil)
	h.Harvest()
	if c := snap(t, h).Counters; c.InFlight != 1 || c.Landed != 10 {
		t.Fatalf("counters %+v", c)
	}
	// Nothing closed: no call at all.
	before := f.Calls()
	h.Harvest()
	h.BeginStep()
	if d := f.Calls().Sub(before); d.Total() != 0 {
		t.Errorf("idle harvests made %+v", d)
	}
}

func TestFullRingIsOneHarvestCall(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	for i := 0; i < DefaultSlots; i++ {
		h.KernelEnd(h.KernelBegin(1, kernelStream))
	}
	// The ring is full: one more is dropped, not waited for.
	if sp := h.KernelBegin(1, kernelStream); sp != (KernelSpan{}) {
		t.Fatal("a span began on a full ring")
	}
	before := f.Calls()
	h.Harvest()
	if d := f.Calls().Sub(before); d.Harvest != 1 || d.Items != DefaultSlots || d.Total() != 1 {
		t.Fatalf("harvest of a full ring made %+v", d)
	}
	c := snap(t, h).Counters
	if c.Landed != DefaultSlots || c.Dropped[DropSlotBusy] != 1 || c.InFlight != 0 {
		t.Errorf("counters %+v", c)
	}
}

func TestHarvestReturnsWhileInFlight(t *testing.T) {
	h, gpu, clock, _ := simHub(t, Options{})
	ks := gpu.NewStream()
	sp := h.KernelBegin(1, ks)
	gpu.Launch(ks, 10*time.Second)
	h.KernelEnd(sp)
	for i := 0; i < 5; i++ {
		h.BeginStep()
		clock.Advance(time.Second)
	}
	if c := snap(t, h).Counters; c.InFlight != 1 || c.Landed != 0 || c.Harvests != 6 {
		t.Fatalf("while the kernel runs: %+v", c)
	}
	clock.Advance(5 * time.Second)
	h.Harvest()
	s := snap(t, h)
	if s.Counters.Landed != 1 || s.Kernels[0].Max != 10*time.Second {
		t.Fatalf("after it ends: %+v %+v", s.Counters, s.Kernels)
	}
}

func TestHarvestSkipsWhenLocked(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	h.KernelEnd(h.KernelBegin(1, kernelStream))
	h.mu.Lock() // a reader holds the lock
	before := f.Calls()
	h.Harvest()
	h.BeginStep()
	h.mu.Unlock()
	if d := f.Calls().Sub(before); d.Harvest != 0 {
		t.Fatalf("harvest ran under a held lock: %+v", d)
	}
	s := snap(t, h)
	if s.Counters.HarvestsSkipped != 2 || s.Counters.InFlight != 1 {
		t.Fatalf("counters %+v", s.Counters)
	}
	h.Harvest()
	if c := snap(t, h).Counters; c.Landed != 1 {
		t.Errorf("the span was lost: %+v", c)
	}
}

func TestHarvestFindsSpansAfterDrops(t *testing.T) {
	// A long span pins its slot while the ring wraps: later spans on that
	// slot are dropped, the others land, and the long one lands when done.
	const slots = 8
	h, f := kernelHub(t, Options{Slots: slots}, fake.Options{})
	long := h.KernelBegin(1, kernelStream) // position 0, slot 0
	h.KernelEnd(long)
	f.SetOutcome(func(slot int) (backend.SpanState, int64) {
		if slot == 0 {
			return backend.InFlight, 0
		}
		return backend.Done, 10
	})
	for round := 0; round < 5; round++ {
		for i := 0; i < slots; i++ {
			h.KernelEnd(h.KernelBegin(1, kernelStream))
		}
		h.Harvest()
	}
	c := snap(t, h).Counters
	if c.Dropped[DropSlotBusy] != 5 || c.Landed != 35 || c.InFlight != 1 {
		t.Fatalf("counters %+v", c)
	}
	f.SetOutcome(nil)
	h.Harvest()
	if c := snap(t, h).Counters; c.Landed != 36 || c.InFlight != 0 {
		t.Fatalf("counters %+v", c)
	}
}

func TestRecentSpans(t *testing.T) {
	h, _ := kernelHub(t, Options{RecentSpans: 4}, fake.Options{})
	land := func(n int) {
		for i := 0; i < n; i++ {
			h.KernelEnd(h.KernelBegin(uint64(i), kernelStream))
		}
		h.Harvest()
	}
	land(3)
	got := h.RecentSpans(0, nil)
	if len(got) != 3 || got[0].Seq != 1 || got[2].Seq != 3 || got[0].Kind != KindKernel || got[0].Step != 1 {
		t.Fatalf("first poll %+v", got)
	}
	if more := h.RecentSpans(3, got[:0]); len(more) != 0 {
		t.Fatalf("nothing new, got %+v", more)
	}
	land(2)
	got = h.RecentSpans(3, got[:0])
	if len(got) != 2 || got[0].Seq != 4 || got[1].Seq != 5 {
		t.Fatalf("incremental poll %+v", got)
	}
	land(6) // seqs 6..11; the ring of 4 keeps 8..11
	got = h.RecentSpans(5, got[:0])
	if len(got) != 4 || got[0].Seq != 8 || got[3].Seq != 11 {
		t.Fatalf("after overflow %+v", got)
	}
	if c := snap(t, h).Counters; c.RecentOverwritten != 2 {
		t.Errorf("overwritten %d; want 2 (seqs 6 and 7)", c.RecentOverwritten)
	}
	if got := h.RecentSpans(100, nil); len(got) != 0 {
		t.Errorf("a future afterSeq returned %+v", got)
	}
	if got := h.RecentSpans(math.MaxUint64, nil); len(got) != 0 {
		t.Errorf("afterSeq MaxUint64 returned %+v", got)
	}
}

// TestStartTimes: spans are placed on the host clock always, never, or by
// default only while a reader has asked for spans within StartTimesIdle.
func TestStartTimes(t *testing.T) {
	type step struct {
		read   bool          // a RecentSpans (or KeepStartTimes) call before the span lands
		keep   bool          // KeepStartTimes instead of RecentSpans
		wait   time.Duration // clock moved on after the read
		placed bool          // the span carries a start time
	}
	for _, c := range []struct {
		name  string
		o     Options
		steps []step
	}{
		{"auto", Options{}, []step{
			{placed: false}, // nobody has read yet
			{read: true, placed: true},
			{wait: StartTimesIdle - time.Second, placed: true},
			{wait: 2 * time.Second, placed: false}, // the reader went away
			{read: true, keep: true, placed: true},
		}},
		{"always", Options{StartTimes: StartTimesAlways}, []step{{placed: true}, {wait: time.Hour, placed: true}}},
		{"never", Options{StartTimes: StartTimesNever}, []step{{placed: false}, {read: true, placed: false}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := sim.NewClock(time.Unix(1_700_000_000, 0))
			gpu := sim.New(sim.Options{Now: clock.Now})
			s := gpu.NewStream()
			c.o.Level, c.o.Now = LevelKernel, clock.Now
			h := newHub(t, c.o)
			if err := h.Install(0, s, gpu.Opener()); err != nil {
				t.Fatal(err)
			}
			h.BeginStep()
			var seq uint64
			for i, st := range c.steps {
				switch {
				case st.keep:
					h.KeepStartTimes()
				case st.read:
					h.RecentSpans(seq, nil)
				}
				clock.Advance(st.wait)
				h.LaneBegin(0)
				gpu.Launch(s, time.Millisecond)
				h.LaneEnd(0)
				clock.Advance(2 * time.Millisecond)
				h.Harvest()
				h.mu.Lock() // read the ring without counting as a reader
				sp := h.recent[h.recentSeq%uint64(len(h.recent))]
				h.mu.Unlock()
				seq = sp.Seq
				if sp.DurationNs != int64(time.Millisecond) {
					t.Fatalf("step %d: span %+v", i, sp)
				}
				if placed := sp.StartNs != 0; placed != st.placed {
					t.Errorf("step %d: StartNs %d, want placed %v", i, sp.StartNs, st.placed)
				}
			}
		})
	}
	if _, err := New(Options{StartTimes: StartTimesAlways + 1}); err == nil || !strings.Contains(err.Error(), "Options.StartTimes") {
		t.Errorf("a junk start-time mode: %v", err)
	}
	for s, want := range map[StartTimes]string{StartTimesAuto: "auto", StartTimesNever: "never", StartTimesAlways: "always", 7: "StartTimes(7)"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", uint8(s), s.String(), want)
		}
	}
}

// TestEventOffsetCorrection: on a GPU whose event pairs read 3 us long,
// kernel spans land corrected (clamped at 0) and lane spans raw; with
// RawKernelSpans both land as read. The offset is in the device status.
func TestEventOffsetCorrection(t *testing.T) {
	const offset = 3 * time.Microsecond
	for _, raw := range []bool{false, true} {
		clock := sim.NewClock(time.Unix(1_700_000_000, 0))
		gpu := sim.New(sim.Options{Now: clock.Now, EventOffset: offset})
		s := gpu.NewStream()
		h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 1, RawKernelSpans: raw})
		if err := h.Install(0, s, gpu.Opener()); err != nil {
			t.Fatal(err)
		}
		if st := snap(t, h); st.Devices[0].EventOffset != -1 {
			t.Errorf("offset %v before the pool opened, want -1", st.Devices[0].EventOffset)
		}
		h.BeginStep()
		h.LaneBegin(0)
		sp := h.KernelBegin(7, s)
		gpu.Launch(s, 10*time.Microsecond)
		h.KernelEnd(sp)
		sp = h.KernelBegin(7, s) // an empty kernel: reads exactly the offset
		h.KernelEnd(sp)
		h.LaneEnd(0)
		clock.Advance(time.Millisecond)
		h.Harvest()
		st := snap(t, h)
		if st.Devices[0].EventOffset != offset {
			t.Errorf("raw=%v: device offset %v, want %v", raw, st.Devices[0].EventOffset, offset)
		}
		wantMin, wantMax := time.Duration(0), 10*time.Microsecond
		if raw {
			wantMin, wantMax = offset, 10*time.Microsecond+offset
		}
		if k := st.Kernels[0]; k.Count != 2 || k.Min != wantMin || k.Max != wantMax {
			t.Errorf("raw=%v: kernel %s: %d spans, min %v max %v; want 2, min %v max %v", raw, k.Name, k.Count, k.Min, k.Max, wantMin, wantMax)
		}
		if l := st.Lanes[0]; l.Count != 1 || l.Max != 10*time.Microsecond+offset {
			t.Errorf("raw=%v: lane %s: %d spans, max %v; want 1, the raw %v", raw, l.Name, l.Count, l.Max, 10*time.Microsecond+offset)
		}
	}
}

// TestRunHarvester: while a harvester runs, BeginStep makes no backend
// call; the harvester lands the spans; one harvester at a time; BeginStep
// harvests again once it returns.
func TestRunHarvester(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	if err := h.RunHarvester(context.Background(), 0); err == nil {
		t.Error("RunHarvester ran with a zero interval")
	}
	run := func(interval time.Duration) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- h.RunHarvester(ctx, interval) }()
		for !h.background.Load() {
			time.Sleep(time.Millisecond)
		}
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("RunHarvester: %v", err)
			}
		}
	}

	stop := run(time.Hour) // never ticks: every call below is BeginStep's
	if err := h.RunHarvester(context.Background(), time.Millisecond); err == nil {
		t.Error("a second harvester ran")
	}
	before := f.Calls()
	for i := 0; i < 100; i++ {
		h.BeginStep()
		h.KernelEnd(h.KernelBegin(1, kernelStream))
	}
	if d := f.Calls().Sub(before); d.Harvest != 0 {
		t.Errorf("BeginStep harvested %d times beside a harvester", d.Harvest)
	}
	stop()

	stop = run(time.Millisecond)
	deadline := time.Now().Add(time.Minute)
	for snap(t, h).Counters.Landed < 100 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	stop()
	if c := snap(t, h).Counters; c.Landed != 100 || c.InFlight != 0 {
		t.Errorf("the harvester left %+v", c)
	}
	before = f.Calls()
	h.KernelEnd(h.KernelBegin(1, kernelStream))
	h.BeginStep()
	if d := f.Calls().Sub(before); d.Harvest != 1 {
		t.Errorf("after the harvester stopped, BeginStep harvested %d times, want 1", d.Harvest)
	}
}

// TestPerDeviceCounters: outcomes are split by the device they happened on,
// and each device's add up (checked by snap for every test).
func TestPerDeviceCounters(t *testing.T) {
	h, _ := kernelHub(t, Options{}, fake.Options{})
	f1 := newFake(t, fake.Options{Device: 1})
	if err := h.Install(1, laneStream, f1.Opener()); err != nil {
		t.Fatal(err)
	}
	h.BeginStep() // opens device 1's pool
	f1.SetCapturing(kernelStream, true)
	for i := 0; i < 3; i++ {
		h.KernelEnd(h.Device(0).KernelBegin(1, kernelStream))
		h.KernelEnd(h.Device(1).KernelBegin(1, kernelStream)) // refused: capturing
	}
	h.Harvest()
	s := snap(t, h)
	if len(s.PerDevice) != 2 {
		t.Fatalf("per device %+v", s.PerDevice)
	}
	d0, d1 := s.PerDevice[0], s.PerDevice[1]
	if d0.Device != 0 || d0.Landed != 3 || d0.DroppedTotal() != 0 {
		t.Errorf("device 0: %+v", d0)
	}
	if d1.Device != 1 || d1.Landed != 0 || d1.Dropped[DropCapturing] != 3 {
		t.Errorf("device 1: %+v", d1)
	}
}

package gpuspans

import (
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
)

// exercise calls every entry point a serving engine would, many times.
func exercise(h *Hub, steps int) {
	var last uint64
	var buf []Span
	for i := 0; i < steps; i++ {
		h.BeginStep()
		for lane := -1; lane <= len(h.lanes); lane++ {
			h.LaneBegin(lane)
		}
		for k := uint64(0); k < 4; k++ {
			h.KernelEnd(h.KernelBegin(k, kernelStream))
			h.KernelEnd(h.Device(0).KernelBegin(k, kernelStream))
			h.KernelEnd(h.Device(MaxDevices).KernelBegin(k, kernelStream))
		}
		for lane := -1; lane <= len(h.lanes); lane++ {
			h.LaneEnd(lane)
		}
		h.Harvest()
		buf = h.RecentSpans(last, buf[:0])
		if len(buf) > 0 {
			last = buf[len(buf)-1].Seq
		}
	}
	h.Snapshot()
}

func TestBelowKernelNoBackendCalls(t *testing.T) {
	for _, level := range []Level{LevelOff, LevelStep} {
		t.Run(level.String(), func(t *testing.T) {
			h := newHub(t, Options{Level: level, KernelSpanEvery: 1})
			f := newFake(t, fake.Options{})
			if err := h.Install(0, laneStream, f.Opener()); err != nil {
				t.Fatal(err)
			}
			if err := h.RegisterKernel(1, "gemm"); err != nil {
				t.Fatal(err)
			}
			exercise(h, 100)
			if c := f.Calls(); c.Total() != 0 {
				t.Fatalf("below Kernel the backend saw %+v", c)
			}
			s := snap(t, h)
			wantSteps := uint64(100)
			if level == LevelOff {
				wantSteps = 0
			}
			if s.Step != wantSteps || s.ArmedSteps != 0 || s.Counters.Begun != 0 || s.Counters.UnknownLane != 0 {
				t.Errorf("snapshot %+v", s)
			}
			if s.Devices[0].State != DevicePending {
				t.Errorf("device state %v; want pending", s.Devices[0].State)
			}
			// The first step at Kernel opens the pool.
			if err := h.SetLevel(LevelKernel); err != nil {
				t.Fatal(err)
			}
			if f.Calls().Opens != 0 {
				t.Fatal("SetLevel opened the pool")
			}
			h.BeginStep()
			if c := f.Calls(); c.Opens != 1 {
				t.Errorf("opens after a step at Kernel: %d", c.Opens)
			}
		})
	}
}

func TestLaneSpanOnSim(t *testing.T) {
	h, gpu, clock, s := simHub(t, Options{StartTimes: StartTimesAlways})
	start := clock.Now()
	h.LaneBegin(0)
	gpu.Launch(s, 3*time.Millisecond)
	h.LaneEnd(0)
	h.LaneBegin(1)
	gpu.Launch(s, 2*time.Millisecond)
	h.LaneEnd(1)

	h.BeginStep() // harvests; the GPU has not got there
	st := snap(t, h)
	if st.Counters.InFlight != 2 || st.Counters.Landed != 0 {
		t.Fatalf("before the work ends: %+v", st.Counters)
	}
	clock.Advance(4 * time.Millisecond) // prefill done, decode not
	h.Harvest()
	st = snap(t, h)
	if st.Counters.Landed != 1 || st.Counters.InFlight != 1 {
		t.Fatalf("after 4ms: %+v", st.Counters)
	}
	clock.Advance(time.Millisecond)
	h.Harvest()
	st = snap(t, h)
	if len(st.Lanes) != 2 {
		t.Fatalf("lane aggregates %+v", st.Lanes)
	}
	for i, want := range []time.Duration{3 * time.Millisecond, 2 * time.Millisecond} {
		a := st.Lanes[i]
		if a.Name != h.lanes[i] || a.Count != 1 || a.Sum != want || a.Min != want || a.Max != want {
			t.Errorf("lane %d aggregate %+v; want one span of %v", i, a, want)
		}
	}
	spans := h.RecentSpans(0, nil)
	if len(spans) != 2 {
		t.Fatalf("recent spans %+v", spans)
	}
	want := Span{Seq: 1, Kind: KindLane, Name: "prefill", Stream: s, Step: 1,
		StartNs: start.UnixNano(), DurationNs: int64(3 * time.Millisecond)}
	if spans[0] != want {
		t.Errorf("recent[0] = %+v\nwant %+v", spans[0], want)
	}
	if spans[1].Name != "decode" || spans[1].StartNs != start.Add(3*time.Millisecond).UnixNano() {
		t.Errorf("recent[1] = %+v", spans[1])
	}
}

func TestKernelSpansOnArmedStepsOnly(t *testing.T) {
	h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 4})
	f := newFake(t, fake.Options{})
	if err := h.Install(0, laneStream, f.Opener()); err != nil {
		t.Fatal(err)
	}
	var armed []int
	for step := 1; step <= 12; step++ {
		h.BeginStep()
		sp := h.KernelBegin(7, kernelStream)
		if sp != (KernelSpan{}) {
			armed = append(armed, step)
		}
		h.KernelEnd(sp)
	}
	if len(armed) != 3 || armed[0] != 4 || armed[1] != 8 || armed[2] != 12 {
		t.Errorf("armed steps %v; want [4 8 12]", armed)
	}
	h.Harvest()
	s := snap(t, h)
	if s.ArmedSteps != 3 || s.Counters.Landed != 3 || len(s.Kernels) != 1 || s.Kernels[0].Name != OtherKernel {
		t.Errorf("snapshot %+v", s)
	}
	// Named kernels aggregate under their name; the rest under "other".
	if err := h.RegisterKernel(7, "gemm"); err != nil {
		t.Fatal(err)
	}
	if err := h.SetKernelSpanEvery(1); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	h.KernelEnd(h.KernelBegin(7, kernelStream))
	h.KernelEnd(h.KernelBegin(8, kernelStream))
	h.Harvest()
	s = snap(t, h)
	if len(s.Kernels) != 2 || s.Kernels[0].Name != OtherKernel || s.Kernels[0].Count != 4 ||
		s.Kernels[1].Name != "gemm" || s.Kernels[1].Count != 1 {
		t.Errorf("kernel aggregates %+v", s.Kernels)
	}
	// Lowering the level disarms at once, before the next step.
	if err := h.SetLevel(LevelStep); err != nil {
		t.Fatal(err)
	}
	if sp := h.KernelBegin(7, kernelStream); sp != (KernelSpan{}) {
		t.Error("kernel span opened below Kernel")
	}
}

func TestNoKernelSpanOnCapturingStream(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	f.SetCapturing(kernelStream, true)
	if sp := h.KernelBegin(1, kernelStream); sp != (KernelSpan{}) {
		t.Error("span opened on a capturing stream")
	}
	// The pool checks the stream and refuses: nothing is recorded.
	c := f.Calls()
	if c.RecordBegin != 1 || c.RecordsWhileCapturing != 1 {
		t.Errorf("calls %+v", c)
	}
	s := snap(t, h)
	if s.Counters.Dropped[DropCapturing] != 1 {
		t.Errorf("capture skipped %d", s.Counters.Dropped[DropCapturing])
	}
	// A lane stream being captured is skipped too.
	f.SetCapturing(laneStream, true)
	h.LaneBegin(0)
	h.LaneEnd(0)
	if c := f.Calls(); c.RecordBegin != c.RecordsWhileCapturing || c.RecordEnd != 0 {
		t.Errorf("calls %+v", c)
	}
	f.SetCapturing(kernelStream, false)
	h.KernelEnd(h.KernelBegin(1, kernelStream))
	if c := f.Calls(); c.RecordBegin != 3 || c.RecordsWhileCapturing != 2 || c.RecordEnd != 1 {
		t.Errorf("after capture: %+v", c)
	}
	// An ErrCapturing from a record call counts the same way, whatever the
	// backend's reason.
	f.SetCapturing(kernelStream, false)
	f.SetRecordError(func(op fake.Op, slot int, s backend.Stream) error {
		return backend.ErrCapturing
	})
	h.KernelBegin(1, kernelStream)
	s = snap(t, h)
	if s.Counters.Dropped[DropCapturing] != 3 || s.Counters.Errored != 0 {
		t.Errorf("counters %+v", s.Counters)
	}
}

func TestNoKernelSpanOnCapturingSimStream(t *testing.T) {
	h, gpu, _, _ := simHub(t, Options{})
	ks := gpu.NewStream()
	gpu.BeginCapture(ks)
	if sp := h.KernelBegin(1, ks); sp != (KernelSpan{}) {
		t.Error("span opened on a capturing stream")
	}
	gpu.EndCapture(ks)
	sp := h.KernelBegin(1, ks)
	gpu.Launch(ks, time.Microsecond)
	h.KernelEnd(sp)
	if sp == (KernelSpan{}) {
		t.Error("no span after the capture ended")
	}
	s := snap(t, h)
	if s.Counters.Dropped[DropCapturing] != 1 || s.Counters.InFlight != 1 {
		t.Errorf("counters %+v", s.Counters)
	}
}

func TestBadAPIUse(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	before := f.Calls()

	h.LaneBegin(2)
	h.LaneBegin(-1)
	h.LaneEnd(99) // no lane, so nothing open: ignored, not counted
	h.LaneEnd(0)  // end without begin
	if d := f.Calls().Sub(before); d.Total() != 0 {
		t.Errorf("bad lane calls reached the backend: %+v", d)
	}

	h.LaneBegin(0)
	h.LaneBegin(0) // second begin while open: ignored
	h.LaneEnd(0)
	h.LaneEnd(0) // double end
	if d := f.Calls().Sub(before); d.RecordBegin != 1 || d.RecordEnd != 1 {
		t.Errorf("lane calls %+v; want one begin and one end", d)
	}

	sp := h.KernelBegin(1, kernelStream)
	h.KernelEnd(sp)
	h.KernelEnd(sp)           // double end
	h.KernelEnd(KernelSpan{}) // zero span: the unarmed-step pattern, not counted
	other, _ := kernelHub(t, Options{}, fake.Options{})
	foreign := other.KernelBegin(1, kernelStream)
	h.KernelEnd(foreign) // another hub's span: ignored here
	other.KernelEnd(foreign)
	h.Harvest()
	h.KernelEnd(sp) // long landed: stale

	s := snap(t, h)
	c := s.Counters
	if c.UnknownLane != 2 || c.LaneAlreadyOpen != 1 || c.BadEnd != 3 || c.Landed != 2 {
		t.Errorf("counters %+v", c)
	}
	if os := snap(t, other); os.Counters.Landed != 0 || os.Counters.InFlight != 1 || os.Counters.BadEnd != 0 {
		t.Errorf("the other hub: %+v", os.Counters)
	}
}

func TestLaneEndAfterLevelDrops(t *testing.T) {
	h, gpu, clock, s := simHub(t, Options{})
	h.LaneBegin(0)
	gpu.Launch(s, time.Millisecond)
	if err := h.SetLevel(LevelOff); err != nil {
		t.Fatal(err)
	}
	h.LaneEnd(0) // ends the span begun at Kernel, at its step's end
	clock.Advance(time.Hour)
	h.BeginStep() // at Off, still harvests the open pool's spans
	st := snap(t, h)
	if st.Counters.Landed != 1 || st.Lanes[0].Max != time.Millisecond {
		t.Fatalf("span did not land with its own length: %+v %+v", st.Counters, st.Lanes)
	}
	// Back at Kernel the lane is free, not stuck open.
	if err := h.SetLevel(LevelKernel); err != nil {
		t.Fatal(err)
	}
	h.LaneBegin(0)
	h.LaneEnd(0)
	if c := snap(t, h).Counters; c.LaneAlreadyOpen != 0 || c.InFlight != 1 {
		t.Errorf("counters %+v", c)
	}
}

func TestMultiDevice(t *testing.T) {
	h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 1})
	f1 := newFake(t, fake.Options{Device: 1})
	f3 := newFake(t, fake.Options{Device: 3})
	if err := h.Install(3, 0x33, f3.Opener()); err != nil {
		t.Fatal(err)
	}
	if err := h.Install(1, 0x11, f1.Opener()); err != nil {
		t.Fatal(err)
	}
	for _, dev := range []int{-1, MaxDevices} {
		if err := h.Install(dev, 0, f1.Opener()); err == nil {
			t.Errorf("Install(%d) succeeded", dev)
		}
	}
	if err := h.Install(2, 0, nil); err == nil {
		t.Error("Install with a nil opener succeeded")
	}
	h.BeginStep()
	h.KernelEnd(h.KernelBegin(1, kernelStream)) // lowest device: 1
	h.KernelEnd(h.Device(3).KernelBegin(1, kernelStream))
	h.KernelEnd(h.Device(2).KernelBegin(1, kernelStream)) // nothing installed
	h.LaneBegin(0)                                        // both devices
	h.LaneEnd(0)
	if c1, c3 := f1.Calls(), f3.Calls(); c1.RecordBegin != 2 || c3.RecordBegin != 2 {
		t.Errorf("device 1 %+v\ndevice 3 %+v", c1, c3)
	}
	h.Harvest()
	s := snap(t, h)
	if len(s.Devices) != 2 || s.Devices[0].Device != 1 || s.Devices[1].Device != 3 {
		t.Fatalf("devices %+v", s.Devices)
	}
	// Both lanes of both installed devices, the one with no span too.
	if len(s.Lanes) != 4 || nonEmpty(s.Lanes) != 2 || s.Lanes[0].Device != 1 || s.Lanes[0].Count != 1 || s.Lanes[2].Device != 3 || s.Lanes[2].Count != 1 ||
		len(s.Kernels) != 2 || s.Kernels[0].Device != 1 || s.Kernels[1].Device != 3 {
		t.Errorf("aggregates %+v %+v", s.Lanes, s.Kernels)
	}
}

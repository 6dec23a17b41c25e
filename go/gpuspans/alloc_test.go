package gpuspans

import (
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
)

// TestZeroAllocs pins the paths that run on every step or launch, and the
// exporter's reads in steady state, at zero allocations.
func TestZeroAllocs(t *testing.T) {
	off := newHub(t, Options{})
	if err := off.Install(0, laneStream, newFake(t, fake.Options{}).Opener()); err != nil {
		t.Fatal(err)
	}
	h, _ := kernelHub(t, Options{}, fake.Options{})
	if err := h.RegisterKernel(1, "gemm"); err != nil {
		t.Fatal(err)
	}
	gh := gpuTimeHub(t)
	var s, gs Snapshot
	var recent []Span
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"disabled/step", func() { off.BeginStep() }},
		{"disabled/lane span", func() { off.LaneBegin(0); off.LaneEnd(0) }},
		{"disabled/kernel span", func() { off.KernelEnd(off.KernelBegin(1, kernelStream)) }},
		{"enabled/lane span", func() { h.LaneBegin(0); h.LaneEnd(0) }},
		{"enabled/shared boundaries", func() { h.LaneBegin(0); h.NextLane(0, 1); h.NextStep(1, 0); h.LaneEnd(0) }},
		{"enabled/kernel span", func() { h.KernelEnd(h.KernelBegin(1, kernelStream)) }},
		{"enabled/device kernel span", func() { h.KernelEnd(h.Device(0).KernelBegin(2, kernelStream)) }},
		{"enabled/step and harvest", func() {
			h.LaneBegin(0)
			h.LaneEnd(0)
			h.KernelEnd(h.KernelBegin(1, kernelStream))
			h.BeginStep()
		}},
		{"snapshot into", func() { h.SnapshotInto(&s) }},
		{"snapshot into, with GPU time", func() { gh.SnapshotInto(&gs) }},
		{"recent spans", func() { recent = h.RecentSpans(0, recent[:0]) }},
	} {
		c.f() // warm up: the exporter's slices grow once
		if n := testing.AllocsPerRun(200, c.f); n != 0 {
			t.Errorf("%s: %v allocations per run", c.name, n)
		}
	}
	if len(s.Lanes) == 0 || len(s.Kernels) == 0 || len(recent) == 0 {
		t.Errorf("nothing landed: %+v", s)
	}
	if g := &gs.GPUTime; len(g.Lanes) == 0 || len(g.Timelines) == 0 || len(g.Gaps) == 0 || len(g.Lanes[0].Kernels) == 0 {
		t.Errorf("no GPU time measured: %+v", g)
	}
}

// gpuTimeHub is a hub on a simulated GPU with its tracer, whose kernel
// windows have measured both lanes, gaps between kernels included.
func gpuTimeHub(t *testing.T) *Hub {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	tracer := sim.NewTracer()
	gpu := sim.New(sim.Options{Now: clock.Now, Tracer: tracer})
	h := newHub(t, Options{Level: LevelKernel, Now: clock.Now, KernelTracer: tracer.Opener(), KernelTiming: KernelTimingAuto,
		KernelWindowEvery: MinKernelWindowEvery})
	if err := h.Install(0, laneStream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 6; step++ {
		h.BeginStep()
		for lane := 0; lane < 2; lane++ {
			h.LaneBegin(lane)
			for k, name := range []string{"gemm", "softmax"} {
				gpu.LaunchKernel(laneStream, time.Duration(10+k)*time.Microsecond, name, 0)
				clock.Advance(15 * time.Microsecond)
			}
			h.LaneEnd(lane)
		}
		clock.Advance(time.Millisecond)
	}
	h.BeginStep()
	h.Harvest()
	return h
}

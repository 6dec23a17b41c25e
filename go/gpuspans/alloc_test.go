package gpuspans

import (
	"testing"

	"github.com/gpuspans/gpuspans/go/backend/fake"
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
	var s Snapshot
	var recent []Span
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"disabled/step", func() { off.BeginStep() }},
		{"disabled/lane span", func() { off.LaneBegin(0); off.LaneEnd(0) }},
		{"disabled/kernel span", func() { off.KernelEnd(off.KernelBegin(1, kernelStream)) }},
		{"enabled/lane span", func() { h.LaneBegin(0); h.LaneEnd(0) }},
		{"enabled/kernel span", func() { h.KernelEnd(h.KernelBegin(1, kernelStream)) }},
		{"enabled/device kernel span", func() { h.KernelEnd(h.Device(0).KernelBegin(2, kernelStream)) }},
		{"enabled/step and harvest", func() {
			h.LaneBegin(0)
			h.LaneEnd(0)
			h.KernelEnd(h.KernelBegin(1, kernelStream))
			h.BeginStep()
		}},
		{"snapshot into", func() { h.SnapshotInto(&s) }},
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
}

package gpuspans_test

import (
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

// gpuRig is a hub at Kernel on a simulated GPU whose kernels a fake tracer
// reports with the GPU's own times, one window of one step every second.
type gpuRig struct {
	t      *testing.T
	h      *gpuspans.Hub
	g      *sim.GPU
	clock  *sim.Clock
	tracer *fake.Tracer
}

const (
	rigMain  backend.Stream = 1
	rigOther backend.Stream = 2
)

func newGPURig(t *testing.T) *gpuRig {
	t.Helper()
	r := &gpuRig{t: t, clock: sim.NewClock(time.Unix(1_700_000_000, 0)), tracer: new(fake.Tracer)}
	r.g = sim.New(sim.Options{Now: r.clock.Now})
	h, err := gpuspans.New(gpuspans.Options{
		Lanes: []string{"prefill", "decode"}, Level: gpuspans.LevelKernel, Now: r.clock.Now,
		Logf: new(gpuspanstest.Log).Logf, KernelTracer: r.tracer.Opener(), KernelTiming: gpuspans.KernelTimingAuto,
		KernelWindowEvery: time.Second, KernelWindowSteps: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, rigMain, r.g.Opener()); err != nil {
		t.Fatal(err)
	}
	r.h = h
	return r
}

// launch runs a kernel of d on s as the GPU queues it, reported to the
// tracer while it collects.
func (r *gpuRig) launch(s backend.Stream, name string, d time.Duration) {
	start, end := r.g.Launch(s, d)
	r.tracer.Kernel(0, uint32(s), start, end, name, 0)
}

const us = time.Microsecond

// decodeStep is one step: a prefill lane of one kernel, then a decode lane
// of two launches of "mm" with k2 between them, whose host stalls before
// the second mm, with a short kernel on another stream inside the stall.
// Decode's events read 420 us: mm and k2 back to back (200 us), the GPU
// idle 50 us, "side" 30 us, idle 40 us, mm again (100 us, or mm2).
func (r *gpuRig) decodeStep(k2, mm2 time.Duration) {
	r.h.BeginStep()
	r.h.LaneBegin(0)
	r.launch(rigMain, "pre", 50*us)
	r.h.LaneEnd(0)
	r.clock.Advance(100 * us) // prefill ran: the GPU waits for decode
	r.h.LaneBegin(1)
	r.launch(rigMain, "mm", 100*us)
	r.clock.Advance(20 * us)
	r.launch(rigMain, "k2", k2)
	r.clock.Advance(k2 + 130*us)
	r.launch(rigOther, "side", 30*us)
	r.clock.Advance(70 * us)
	r.launch(rigMain, "mm", mm2)
	r.h.LaneEnd(1)
	r.clock.Advance(time.Second)
}

func TestGPUTimeBusyIdleAndGaps(t *testing.T) {
	r := newGPURig(t)
	if g := r.h.GPUTime(); len(g.Lanes) != 0 || g.Windows != 0 {
		t.Fatalf("before any window: %+v, want nothing measured", g)
	}
	r.decodeStep(100*us, 100*us) // a window's step
	r.h.BeginStep()              // closes the window, lands its lanes and kernels
	r.h.Harvest()                // analyses it
	g := r.h.GPUTime()
	if g.Windows != 1 || len(g.Lanes) != 2 {
		t.Fatalf("GPUTime: %+v, want one window measuring two lanes", g)
	}
	pre, dec := g.Lanes[0], g.Lanes[1]
	if pre.Lane != "prefill" || pre.Time != 50*us || pre.Busy != 50*us || pre.Idle != 0 || pre.BusyRatio() != 1 {
		t.Errorf("prefill: %+v, want 50 us, all busy", pre)
	}
	if dec.Lane != "decode" || dec.Spans != 1 || dec.Time != 420*us || dec.Busy != 330*us || dec.Idle != 90*us || dec.Gaps != 90*us {
		t.Errorf("decode: %+v, want 420 us: 330 busy, 90 idle, all between kernels", dec)
	}
	if r := dec.BusyRatio(); r < 0.785 || r > 0.786 {
		t.Errorf("decode busy ratio %v, want 330/420", r)
	}
	if len(dec.Kernels) != 3 || dec.Kernels[0].Kernel != "mm" || dec.Kernels[0].Time != 200*us || dec.Kernels[2].Kernel != "side" || dec.Kernels[2].Time != 30*us {
		t.Errorf("decode's kernels: %+v", dec.Kernels)
	}
	if len(g.Gaps) != 1 || g.Gaps[0].Count != 2 || g.Gaps[0].Sum != 90*us {
		t.Errorf("gaps: %+v, want 50 and 40 us", g.Gaps)
	}
	if len(g.LargestGaps) != 2 {
		t.Fatalf("largest gaps: %+v", g.LargestGaps)
	}
	if top := g.LargestGaps[0]; top.Duration != 50*us || top.Before != "k2" || top.After != "side" || top.Lane != "decode" {
		t.Errorf("largest gap: %+v, want 50 us between k2 and side", top)
	}
	if len(g.Steps) != 1 || g.Steps[0].Extent != 520*us || g.Steps[0].Busy != 380*us || g.Steps[0].Kernels != 5 {
		t.Errorf("steps: %+v, want an extent of 520 us, 380 busy, 5 kernels", g.Steps)
	}
	if len(g.Timelines) != 1 || len(g.Timelines[0].Lanes) != 2 || len(g.Timelines[0].Kernels) != 5 {
		t.Errorf("timelines: %+v", g.Timelines)
	}
	// The window's lane spans reach the recent ring measured.
	var timed int
	for _, s := range r.h.RecentSpans(0, nil) {
		if s.Kind == gpuspans.KindLane && s.Name == "decode" && s.GPUTimed {
			timed++
			if s.BusyNs != int64(330*us) || s.IdleNs != int64(90*us) {
				t.Errorf("decode span: busy %d idle %d", s.BusyNs, s.IdleNs)
			}
		}
	}
	if timed != 1 {
		t.Errorf("%d measured decode spans in the recent ring, want 1", timed)
	}
	// Steps outside windows add nothing.
	r.decodeStep(100*us, 100*us)
	r.h.Harvest()
	if g := r.h.GPUTime(); g.Windows != 1 || g.Lanes[1].Spans != 1 {
		t.Errorf("a step outside windows was measured: %+v", g.Lanes)
	}
}

// One launch taking twice as long is the one named as moved, also when
// another launch of its kernel in the lane does not change.
func TestGPUTimeNamesTheKernelThatMoved(t *testing.T) {
	r := newGPURig(t)
	run := func(n int, k2, mm2 time.Duration) {
		for i := 0; i < n; i++ {
			r.decodeStep(k2, mm2)
		}
		r.h.BeginStep()
		r.h.Harvest()
	}
	run(200, 100*us, 100*us)
	g := r.h.GPUTime()
	if g.Windows < 90 || len(g.Moved) != 0 {
		t.Fatalf("steady: %d windows, moved %+v, want none", g.Windows, g.Moved)
	}
	run(400, 100*us, 200*us)
	g = r.h.GPUTime()
	if len(g.Moved) != 1 || g.Moved[0].Kernel != "mm" || g.Moved[0].Launch != 2 || g.Moved[0].Lane != "decode" {
		t.Fatalf("moved: %+v, want mm's second launch alone", g.Moved)
	}
	if m := g.Moved[0]; m.Recent < 195*us || m.Baseline > 110*us {
		t.Errorf("mm #2 moved from %v to %v, want about 100 to 200 us", m.Baseline, m.Recent)
	}
}

// The gaps a kernel window measured land in the recent window open at its
// analysis, as the gap aggregate counts them, and age out with it: what
// the Prometheus exporter's recent gap quantiles read.
func TestGPUTimeGapsInRecentWindows(t *testing.T) {
	r := newGPURig(t)
	r.decodeStep(100*us, 100*us)
	r.h.BeginStep()
	r.h.Harvest()
	gaps := func() (n uint64, keys []int) {
		for _, w := range r.h.Windows() {
			for _, a := range w.Gaps {
				if a.Device != 0 || a.Name != "gap" {
					t.Errorf("window gaps %+v: want device 0's, named gap", a)
				}
				n += a.Count
				keys = append(keys, a.Keys...)
			}
		}
		return n, keys
	}
	n, keys := gaps()
	if n != 2 || len(keys) != 2 {
		t.Fatalf("recent windows hold %d gaps in buckets %v, want the window's 2 (50 and 40 us)", n, keys)
	}
	var agg gpuspans.Aggregate
	for _, w := range r.h.Windows() {
		for i := range w.Gaps {
			w.Gaps[i].AddTo(&agg)
		}
	}
	if q := agg.Quantile(0.99); q < 49*us || q > 51*us {
		t.Errorf("recent gaps' p99 %v, want 50 us within 1.1%%", q)
	}
	// The gap aggregate counts the same gaps; the windows, unlike it, let
	// them go once they leave the ring.
	if g := r.h.GPUTime(); len(g.Gaps) != 1 || g.Gaps[0].Count != n {
		t.Errorf("gap aggregate %+v, want the %d gaps of the windows", g.Gaps, n)
	}
	for i := 0; i <= gpuspans.NumWindows+1; i++ {
		r.clock.Advance(gpuspans.WindowLength)
		r.h.Harvest()
	}
	if n, _ := gaps(); n != 0 {
		t.Errorf("%d gaps still in the recent windows after they all closed", n)
	}
	if g := r.h.GPUTime(); g.Gaps[0].Count != 2 {
		t.Errorf("gap aggregate lost its gaps: %+v", g.Gaps)
	}
}

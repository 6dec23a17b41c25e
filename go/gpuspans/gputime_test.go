package gpuspans_test

import (
	"fmt"
	"math/rand/v2"
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

func newGPURig(t *testing.T) *gpuRig { return newGPURigLog(t, new(gpuspanstest.Log)) }

// newGPURigLog is newGPURig with the hub's log lines going to log.
func newGPURigLog(t *testing.T, log *gpuspanstest.Log) *gpuRig {
	t.Helper()
	r := &gpuRig{t: t, clock: sim.NewClock(time.Unix(1_700_000_000, 0)), tracer: new(fake.Tracer)}
	r.g = sim.New(sim.Options{Now: r.clock.Now})
	h, err := gpuspans.New(gpuspans.Options{
		Lanes: []string{"prefill", "decode"}, Level: gpuspans.LevelKernel, Now: r.clock.Now,
		Logf: log.Logf, KernelTracer: r.tracer.Opener(), KernelTiming: gpuspans.KernelTimingAuto,
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
	r.h.Harvest()                // finds it finished: its analysis waits for the lanes' spans after it
	if g := r.h.GPUTime(); g.Windows != 0 {
		t.Fatalf("analysed before its after side or its wait: %+v", g)
	}
	r.clock.Advance(gpuspans.GPUTimeServedWait)
	r.h.Harvest() // the wait is over: analyses it
	g := r.h.GPUTime()
	if g.Windows != 1 || len(g.Lanes) != 2 {
		t.Fatalf("GPUTime: %+v, want one window measuring two lanes", g)
	}
	pre, dec := g.Lanes[0], g.Lanes[1]
	if pre.Lane != "prefill" || pre.Time != 50*us || pre.Busy != 50*us || pre.Idle != 0 {
		t.Errorf("prefill: %+v, want 50 us, all busy", pre)
	}
	if dec.Lane != "decode" || dec.Spans != 1 || dec.Time != 420*us || dec.Busy != 330*us || dec.Idle != 90*us || dec.Gaps != 90*us {
		t.Errorf("decode: %+v, want 420 us: 330 busy, 90 idle, all between kernels", dec)
	}
	// No span of either lane ran outside a window: no served time.
	for _, l := range g.Lanes {
		if l.Unsettled != 1 || l.Served != 0 || l.RecentTime != 0 || l.BusyRatio() != 0 {
			t.Errorf("%s: %+v, want the window unsettled, nothing served", l.Lane, l)
		}
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
			if s.BusyNs != int64(330*us) || s.IdleNs != int64(90*us) || s.ServedNs != 0 {
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

// A lane's idle split by cause, from the window's records: a copy, the
// host launching late, launch latency on the stream, a wait on another
// stream, and the idle after the last kernel, which nothing explains.
func TestGPUTimeIdleByCause(t *testing.T) {
	r := newGPURig(t)
	r.h.BeginStep()
	r.h.LaneBegin(1)
	t0 := r.clock.Now().UnixNano()
	r.g.Launch(rigMain, 400*us) // the lane's events bracket 400 us of work
	r.h.LaneEnd(1)
	at := func(u int64) int64 { return t0 + u*int64(us) }
	kernel := func(stream uint32, name string, from, to int64, corr uint32) {
		r.tracer.Record(backend.KernelRecord{StartNs: at(from), EndNs: at(to), Stream: stream, Correlation: corr}, name)
	}
	call := func(corr uint32, end int64) {
		r.tracer.Record(backend.KernelRecord{StartNs: at(end) - 500, EndNs: at(end), Correlation: corr, Kind: backend.RecordLaunch}, "")
	}
	main, other := uint32(rigMain), uint32(rigOther)
	kernel(main, "a", 0, 100, 1)
	call(1, 0)
	r.tracer.Record(backend.KernelRecord{StartNs: at(100), EndNs: at(130), Stream: main, Kind: backend.RecordMemcpy}, "")
	kernel(main, "b", 150, 200, 2)
	call(2, 140) // the host launched b 10 us after the copy: host, and b's latency after it too
	kernel(main, "c", 220, 260, 3)
	call(3, 160) // queued before b ended, on b's stream: launch latency
	kernel(other, "d", 300, 340, 4)
	call(4, 170) // queued long before, on another stream: a wait
	// The lane as long outside windows: the window cost nothing, so the
	// served causes are the window's own.
	for i := 0; i < gpuspans.GPUTimeServedSpans; i++ {
		r.clock.Advance(time.Millisecond)
		r.h.BeginStep()
		r.h.LaneBegin(1)
		r.g.Launch(rigMain, 400*us)
		r.h.LaneEnd(1)
	}
	r.clock.Advance(time.Millisecond)
	r.h.BeginStep()
	r.h.Harvest()
	g := r.h.GPUTime()
	if len(g.Lanes) != 1 {
		t.Fatalf("lanes %+v, want decode alone", g.Lanes)
	}
	l := g.Lanes[0]
	want := gpuspans.IdleCauses{Host: 20 * us, Launch: 20 * us, Copy: 30 * us, Wait: 40 * us, Other: 60 * us}
	if l.Time != 400*us || l.Busy != 230*us || l.Idle != 170*us || l.Causes != want {
		t.Errorf("decode: time %v busy %v idle %v causes %+v, want 400, 230, 170 us split %+v", l.Time, l.Busy, l.Idle, l.Causes, want)
	}
	// Copies and launch calls are no kernel spans.
	for _, s := range r.h.RecentSpans(0, nil) {
		if s.Kind == gpuspans.KindKernel && s.Name != "a" && s.Name != "b" && s.Name != "c" && s.Name != "d" {
			t.Errorf("a kernel span %+v from a record that is no kernel", s)
		}
	}
}

// On the simulator, whose tracer records launch calls: a host stall
// before a graph replay reads as the host's, and graph kernels queued back
// to back leave nothing idle. Launch calls report device 0, also where
// the hub has no device 0.
func TestGPUTimeIdleByCauseOnTheSimulator(t *testing.T) {
	for _, dev := range []int{0, 1} {
		t.Run(fmt.Sprintf("device=%d", dev), func(t *testing.T) { idleByCauseOnTheSimulator(t, dev) })
	}
}

func idleByCauseOnTheSimulator(t *testing.T, dev int) {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	tr := sim.NewTracer()
	g := sim.New(sim.Options{Device: dev, Now: clock.Now, Tracer: tr})
	h, err := gpuspans.New(gpuspans.Options{
		Lanes: []string{"decode"}, Level: gpuspans.LevelKernel, Now: clock.Now,
		Logf: new(gpuspanstest.Log).Logf, KernelTracer: tr.Opener(), KernelTiming: gpuspans.KernelTimingAuto,
		KernelWindowEvery: time.Second, KernelWindowSteps: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(dev, rigMain, g.Opener()); err != nil {
		t.Fatal(err)
	}
	graph := []sim.GraphKernel{{Name: "mm", Duration: 50 * us}, {Name: "add", Duration: 10 * us}}
	step := func() {
		h.BeginStep()
		h.LaneBegin(0)
		g.LaunchKernel(rigMain, 100*us, "embed", 0)
		clock.Advance(300 * us) // the host works 300 us: the GPU runs dry for 200
		g.LaunchGraph(rigMain, 1, graph)
		h.LaneEnd(0)
	}
	for i := 0; i < 3; i++ {
		step() // a window's, one a second
		for j := 0; j < gpuspans.GPUTimeServedSpans; j++ {
			clock.Advance(time.Millisecond)
			step() // outside windows, as long: the windows cost nothing
		}
		clock.Advance(time.Second)
	}
	h.BeginStep()
	h.Harvest()
	gt := h.GPUTime()
	if gt.Windows == 0 || len(gt.Lanes) != 1 || gt.Lanes[0].Device != dev {
		t.Fatalf("GPU time %+v, want the decode lane measured", gt)
	}
	l := gt.Lanes[0]
	n := time.Duration(l.Spans)
	if l.Spans == 0 || l.Time != n*360*us || l.Busy != n*160*us || l.Causes != (gpuspans.IdleCauses{Host: n * 200 * us}) {
		t.Errorf("decode: %d spans, time %v busy %v causes %+v, want 360 us a span: 160 busy, 200 host", l.Spans, l.Time, l.Busy, l.Causes)
	}
}

// servedRig drives one lane, decode, of 600 us of kernels that the host
// launches host after the lane begins: its events read host + 600 us.
// Steps run every 10 ms, a window of one step every second; in a window
// the host also pays inflate before its first launch, as CUPTI attached
// makes every launch slower.
type servedRig struct {
	*gpuRig
	inflate time.Duration
	extra   time.Duration // a kernel more in a window's lane
	windows int           // window steps run
}

func newServedRig(t *testing.T, inflate time.Duration) *servedRig {
	return &servedRig{gpuRig: newGPURig(t), inflate: inflate}
}

// step runs one step; it reports whether a window measured it.
func (r *servedRig) step(host time.Duration) bool {
	r.h.BeginStep()
	win := r.h.Snapshot().KernelTiming.Windows.Open
	if win {
		host += r.inflate
		r.windows++
	}
	r.h.LaneBegin(1)
	r.clock.Advance(host)
	r.launch(rigMain, "a", 400*us)
	r.clock.Advance(50 * us)
	r.launch(rigMain, "b", 200*us) // queued behind a: no gap
	if win && r.extra > 0 {
		r.launch(rigMain, "c", r.extra)
	}
	r.h.LaneEnd(1)
	r.clock.Advance(10 * time.Millisecond)
	return win
}

func decodeLane(t *testing.T, g gpuspans.GPUTime) gpuspans.LaneGPUTime {
	t.Helper()
	for _, l := range g.Lanes {
		if l.Lane == "decode" {
			return l
		}
	}
	t.Fatalf("no decode lane in %+v", g.Lanes)
	return gpuspans.LaneGPUTime{}
}

// A window's steps are 300 us slower than the engine's: the busy ratio is
// busy over the lane's time outside windows, the window's cost is the
// 300 us, and one outlier step outside windows moves neither.
func TestGPUTimeServedStep(t *testing.T) {
	r := newServedRig(t, 300*us)
	if !r.step(100 * us) {
		t.Fatal("the first step is not a window's")
	}
	// The first window has no spans before it: it waits for 16 after it.
	for i := 0; i < gpuspans.GPUTimeServedSpans-1; i++ {
		r.step(100 * us)
	}
	if g := r.h.GPUTime(); g.Windows != 0 {
		t.Fatalf("analysed with %d spans after it: %+v", gpuspans.GPUTimeServedSpans-1, g)
	}
	r.step(100 * us)
	r.h.Harvest()
	if g := r.h.GPUTime(); g.Windows != 1 {
		t.Fatalf("not analysed with %d spans after it: %+v", gpuspans.GPUTimeServedSpans, g)
	}
	for i := 0; i < 600; i++ {
		host := 100 * us
		if i%37 == 0 {
			host = 20 * time.Millisecond // an outlier: the median ignores it
		}
		if r.step(host) && host != 100*us {
			t.Fatal("the outlier fell on a window's step: the rig's cadence changed")
		}
	}
	g := r.h.GPUTime()
	l := decodeLane(t, g)
	n := time.Duration(min(g.Windows, gpuspans.GPUTimeRecentWindows))
	if g.Windows < 6 || l.Unsettled != 0 {
		t.Fatalf("%d windows, %d unsettled: want 6 or more, all settled", g.Windows, l.Unsettled)
	}
	if uint64(n) != l.RecentSpans || g.Windows != l.ServedSpans {
		t.Errorf("%d recent spans, %d served ones over %d windows of one span", l.RecentSpans, l.ServedSpans, g.Windows)
	}
	if l.RecentTime != n*1000*us || l.RecentBusy != n*600*us || l.RecentServed != n*700*us || l.RecentWindowCost != n*300*us {
		t.Errorf("recent: time %v busy %v served %v cost %v over %d windows, want 1000, 600, 700, 300 us each",
			l.RecentTime, l.RecentBusy, l.RecentServed, l.RecentWindowCost, n)
	}
	if got, want := l.BusyRatio(), 600.0/700; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("busy ratio %v, want busy over the served lane, 600/700 = %v (over the window's own: 0.6)", got, want)
	}
	w := time.Duration(g.Windows)
	if l.Time != w*1000*us || l.Served != w*700*us || l.ServedBusy != w*600*us || l.WindowCost != w*300*us {
		t.Errorf("totals: time %v served %v busy %v cost %v over %d windows", l.Time, l.Served, l.ServedBusy, l.WindowCost, w)
	}
	// The served idle, 100 us a window, by cause: the analysis splits
	// none yet, so all of it is other once the cost is out.
	if want := (gpuspans.IdleCauses{Other: n * 100 * us}); l.RecentCauses != want || l.Causes.Total() != w*100*us {
		t.Errorf("recent causes %+v, causes %+v: want %v of other, %v in all", l.RecentCauses, l.Causes, want.Other, w*100*us)
	}
	// The spans carry it too, and the timeline.
	var timed int
	for _, s := range r.h.RecentSpans(0, nil) {
		if s.GPUTimed {
			timed++
			if s.DurationNs != int64(1000*us) || s.ServedNs != int64(700*us) || s.Causes.Other != 100*us || s.Causes.Total() != 100*us {
				t.Errorf("window span: %+v, want 1000 us measured, 700 served, 100 idle", s)
			}
		}
	}
	if timed == 0 {
		t.Error("no measured span in the recent ring")
	}
	if len(g.Timelines) != 1 || len(g.Timelines[0].Lanes) != 1 || g.Timelines[0].Lanes[0].Served != 700*us || g.Timelines[0].Lanes[0].Causes.Other != 100*us {
		t.Errorf("timeline: %+v, want decode served 700 us, 100 idle", g.Timelines)
	}
}

// A lane whose time moves across a window by more than the shift bound
// leaves that window unsettled: out of the served totals, counted.
func TestGPUTimeServedUnsettledWhenTheLaneShifts(t *testing.T) {
	r := newServedRig(t, 300*us)
	host := 100 * us
	shiftAt := 0
	for i := 0; i < 400; i++ {
		if r.step(host) && r.windows == 2 {
			host = 300 * us // from the second window on: 900 us outside windows, 28% more
			shiftAt = i
		}
	}
	if shiftAt == 0 {
		t.Fatal("no second window")
	}
	g := r.h.GPUTime()
	l := decodeLane(t, g)
	if l.Unsettled != 1 || g.Windows < 4 {
		t.Fatalf("%d windows, %d unsettled, want the second alone", g.Windows, l.Unsettled)
	}
	settled := time.Duration(g.Windows - 1)
	// The first window (before: none; after: 700 us) and the third on
	// (900 us either side).
	if want := 700*us + (settled-1)*900*us; l.Served != want {
		t.Errorf("served %v over %d settled windows, want %v", l.Served, settled, want)
	}
	// The second window ran before the shift: 1000 us, as the first.
	if l.Time != 2*1000*us+(settled-1)*1200*us || l.ServedBusy != settled*600*us {
		t.Errorf("time %v, busy settled %v: the unsettled window's spans belong in the one, not the other", l.Time, l.ServedBusy)
	}
	var unsettled int
	for _, s := range r.h.RecentSpans(0, nil) {
		if s.GPUTimed && s.ServedNs == 0 {
			unsettled++
		}
	}
	if unsettled != 1 {
		t.Errorf("%d spans unsettled in the recent ring, want the second window's", unsettled)
	}
}

// A window's span is served for the lane's estimate, at least its busy
// time (a step is not served in less time than its kernels ran); a span
// shows no more than its own event time, while the lane's totals keep
// the estimate, and the cost counter carries a negative cost rather than
// decrease.
func TestGPUTimeServedWithinBusyAndTime(t *testing.T) {
	for _, c := range []struct {
		name                     string
		inflate, extra           time.Duration
		time, served, cost, span time.Duration // per span; span: a span's ServedNs
		counted                  time.Duration // the cost counter's, per span
	}{
		{"faster in the window", -50 * us, 0, 650 * us, 700 * us, -50 * us, 650 * us, 0},
		{"more kernels in the window", 0, 200 * us, 900 * us, 800 * us, 100 * us, 800 * us, 100 * us},
	} {
		r := newServedRig(t, c.inflate)
		r.extra = c.extra
		for i := 0; i < 300; i++ {
			r.step(100 * us)
		}
		l := decodeLane(t, r.h.GPUTime())
		n := time.Duration(l.RecentSpans)
		if n == 0 || l.Unsettled != 0 {
			t.Fatalf("%s: %+v, want settled windows", c.name, l)
		}
		if l.RecentTime != n*c.time || l.RecentServed != n*c.served || l.RecentWindowCost != n*c.cost || l.RecentCauses.Total() != l.RecentServed-l.RecentBusy {
			t.Errorf("%s: time %v served %v cost %v causes %v over %d spans, want %v, %v, %v each", c.name,
				l.RecentTime, l.RecentServed, l.RecentWindowCost, l.RecentCauses.Total(), n, c.time, c.served, c.cost)
		}
		if w := time.Duration(l.ServedSpans); l.WindowCost != w*c.counted || l.Causes.Total() != l.Served-l.ServedBusy {
			t.Errorf("%s: cost counter %v, causes %v of %v served idle over %d spans: want %v each", c.name, l.WindowCost, l.Causes.Total(), l.Served-l.ServedBusy, w, c.counted)
		}
		for _, s := range r.h.RecentSpans(0, nil) {
			if s.GPUTimed && (s.ServedNs != int64(c.span) || s.Causes.Total() != time.Duration(s.ServedNs-s.BusyNs)) {
				t.Errorf("%s: span served %v, causes %v: want %v, its idle", c.name, time.Duration(s.ServedNs), s.Causes.Total(), c.span)
				break
			}
		}
	}
}

// A host stall drawn per step from 0, 250, 500 and 1000 us (issue 50's
// graph_varying): the busy ratio is busy over the mean served step, as a
// run without windows would measure it, neither the typical step nor one
// that reads the window's short steps short; the cost counter only grows.
// On an H100 the GPU's first graph hid most of the stall: the lane read
// 893, 893, 964 and 1,480 us, a quarter of the steps far above a tight
// centre; "hidden" draws that shape.
func TestGPUTimeServedVaryingStall(t *testing.T) {
	for _, c := range []struct {
		name   string
		stalls []time.Duration
	}{
		{"spread", []time.Duration{0, 250 * us, 500 * us, 1000 * us}},
		{"hidden", []time.Duration{0, 0, 71 * us, 587 * us}},
	} {
		t.Run(c.name, func(t *testing.T) { servedVaryingStall(t, c.stalls) })
	}
}

func servedVaryingStall(t *testing.T, stalls []time.Duration) {
	r := newServedRig(t, 300*us)
	rng := rand.New(rand.NewPCG(50, 50))
	var bare, bareSpans, inWindows, windows time.Duration
	var cost time.Duration
	for i := 0; i < 6000; i++ {
		host := 100*us + stalls[rng.IntN(len(stalls))]
		if !r.step(host) {
			bare += host + 600*us // the rig's lane: the host, then 600 us of kernels
			bareSpans++
		} else {
			inWindows += host + 600*us
			windows++
		}
		if i%500 == 499 {
			l := decodeLane(t, r.h.GPUTime())
			if l.WindowCost < cost {
				t.Fatalf("step %d: the cost counter fell from %v to %v", i, cost, l.WindowCost)
			}
			cost = l.WindowCost
		}
	}
	l := decodeLane(t, r.h.GPUTime())
	if l.ServedSpans < 50 || l.Unsettled > l.ServedSpans/10 {
		t.Fatalf("%d spans settled, %d windows unsettled: want 50 or more, few unsettled", l.ServedSpans, l.Unsettled)
	}
	truth := float64(600*us) / float64(bare/bareSpans)
	all := float64(l.ServedBusy) / float64(l.Served)
	t.Logf("truth %.4f; busy ratio %.4f over %d settled spans, %.4f over the latest; window cost %v a span",
		truth, all, l.ServedSpans, l.BusyRatio(), l.WindowCost/time.Duration(l.ServedSpans))
	if all < truth-0.01 || all > truth+0.01 || l.BusyRatio() < truth-0.02 || l.BusyRatio() > truth+0.02 {
		t.Errorf("busy ratio %.4f over every settled window, %.4f over the latest: want within 1 and 2 points of %.4f (busy over the mean step outside windows)",
			all, l.BusyRatio(), truth)
	}
	// The cost a span is the rig's 300 us and what the windows' own steps
	// drew over the mean step: the stalls that fell on them.
	want := 300*us + inWindows/windows - bare/bareSpans
	if c := l.WindowCost / time.Duration(l.ServedSpans); c < want-40*us || c > want+40*us || l.Causes.Total() != l.Served-l.ServedBusy {
		t.Errorf("window cost %v a span, causes %v of %v served idle: want %v (300 us, and the stalls the windows drew), all of the idle",
			c, l.Causes.Total(), l.Served-l.ServedBusy, want)
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
	r.clock.Advance(gpuspans.GPUTimeServedWait) // no span after the window: its wait ends
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

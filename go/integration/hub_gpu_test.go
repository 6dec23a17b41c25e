//go:build cgo

package integration

import (
	"context"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest/gputest"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// The seed's behaviours end to end through the public API on a real stream:
// lane spans every step, kernel spans on one step in N, a CUDA graph
// captured and replayed on the kernel stream, and harvests that never wait.
// GPU only: skipped unless GPUSPANS_GPU=1.

const (
	e2eSteps     = 400
	e2eEvery     = 4
	e2eKernels   = 3
	e2eSpin      = 40 * time.Microsecond
	e2eSpinSlack = 30 * time.Microsecond // launch latency inside a kernel pair
)

func TestGPUHubEndToEnd(t *testing.T) {
	gputest.Only(t)
	e := gputest.NewEngine(t, 0)
	var logs []string
	h, err := gpuspans.New(gpuspans.Options{
		Lanes:           []string{"prefill", "decode"},
		Level:           gpuspans.LevelKernel,
		KernelSpanEvery: e2eEvery,
		Logf:            func(f string, a ...interface{}) { logs = append(logs, f) },
	})
	if err != nil {
		t.Fatal(err)
	}
	h.KeepStartTimes() // a reader of start times attaches before the first span: every span is placed
	for i := 0; i < e2eKernels; i++ {
		if err := h.RegisterKernel(uint64(100+i), "spin"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Install(0, e.Lane, cuda.Opener(0)); err != nil {
		t.Fatal(err)
	}

	// A graph of two spins, captured once on the kernel stream. While the
	// capture runs, kernel spans on that stream must be refused.
	runtime.LockOSThread()
	if err := h.SetKernelSpanEvery(1); err != nil { // arm step 1
		t.Fatal(err)
	}
	h.BeginStep() // opens the pool; step 1, armed
	if err := h.SetKernelSpanEvery(e2eEvery); err != nil {
		t.Fatal(err)
	}
	if err := e.Kit.CaptureBegin(e.Kernel, cudakit.CaptureGlobal); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		sp := h.KernelBegin(100, e.Kernel)
		if sp != (gpuspans.KernelSpan{}) {
			t.Error("kernel span opened on a capturing stream")
		}
		if err := e.Kit.Spin(e.Kernel, 10*time.Microsecond, nil); err != nil {
			t.Fatal(err)
		}
		h.KernelEnd(sp)
	}
	g, err := e.Kit.CaptureEnd(e.Kernel)
	runtime.UnlockOSThread()
	if err != nil {
		t.Fatalf("capture broken: %v", err)
	}
	x, err := e.Kit.Instantiate(g)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = e.Kit.Sync(e.Kernel)
		_ = e.Kit.DestroyGraphExec(x)
		_ = e.Kit.DestroyGraph(g)
	}()

	var slowest time.Duration
	for step := 0; step < e2eSteps; step++ {
		start := time.Now()
		h.BeginStep()
		if d := time.Since(start); d > slowest {
			slowest = d
		}
		for lane := 0; lane < 2; lane++ {
			h.LaneBegin(lane)
			if err := e.Kit.Spin(e.Lane, e2eSpin, nil); err != nil {
				t.Fatal(err)
			}
			h.LaneEnd(lane)
		}
		for k := 0; k < e2eKernels; k++ {
			sp := h.KernelBegin(uint64(100+k), e.Kernel)
			if err := e.Kit.Spin(e.Kernel, e2eSpin, nil); err != nil {
				t.Fatal(err)
			}
			h.KernelEnd(sp)
		}
		if err := e.Kit.Launch(x, e.Kernel); err != nil {
			t.Fatal(err)
		}
	}
	// Harvest until everything landed (the GPU needs a moment to drain).
	if err := e.Kit.Sync(e.Lane); err != nil {
		t.Fatal(err)
	}
	if err := e.Kit.Sync(e.Kernel); err != nil {
		t.Fatal(err)
	}
	h.Harvest()

	s := h.Snapshot()
	c := s.Counters
	t.Logf("counters %+v; slowest BeginStep %v; logs %q", c, slowest, logs)
	if c.Begun != c.Landed+c.DroppedTotal()+c.InFlight+c.Errored {
		t.Errorf("accounting: %+v", c)
	}
	if c.Errored != 0 || c.InFlight != 0 || c.Dropped[gpuspans.DropSlotBusy] != 0 {
		t.Errorf("spans lost: %+v", c)
	}
	if got := c.Dropped[gpuspans.DropCapturing]; got != 2 {
		t.Errorf("capture refusals %d, want 2", got)
	}
	// Steps: the capture step (armed), then e2eSteps, armed when
	// step % every == 0.
	armed := int(s.ArmedSteps) - 1
	if want := (e2eSteps + 1) / e2eEvery; armed != want {
		t.Errorf("armed loop steps %d, want %d", armed, want)
	}
	var lanes, kernels uint64
	for _, a := range s.Lanes {
		lanes += a.Count
		checkSpinAggregate(t, "lane "+a.Name, a, 0)
		if a.Count != e2eSteps {
			t.Errorf("lane %s landed %d spans, want %d", a.Name, a.Count, e2eSteps)
		}
	}
	for _, a := range s.Kernels {
		if a.Count == 0 {
			continue // a registered kernel (or "other") with no span: a zero row
		}
		kernels += a.Count
		// Kernel spans have the pool's event offset (measured on a busy
		// stream) subtracted. Here the GPU often waits for the host between
		// kernels, and a pair then reads up to ~2 us less than on a busy
		// stream: such spans may read under the kernel's own time.
		checkSpinAggregate(t, "kernel "+a.Name, a, 3*time.Microsecond)
	}
	if want := uint64(e2eKernels * armed); kernels != want {
		t.Errorf("kernel spans landed %d, want %d (armed steps %d)", kernels, want, armed)
	}
	if lanes+kernels != c.Landed {
		t.Errorf("aggregates hold %d spans, counters say %d", lanes+kernels, c.Landed)
	}
	// Recent spans carry host-clock start times close to now.
	now := time.Now().UnixNano()
	recent := h.RecentSpans(0, nil)
	placed := 0
	for _, sp := range recent {
		if sp.StartNs != 0 {
			placed++
			if age := now - sp.StartNs; age < 0 || age > int64(time.Minute) {
				t.Errorf("span %d starts %v from now", sp.Seq, time.Duration(age))
			}
		}
	}
	if placed < len(recent)/2 {
		t.Errorf("only %d of %d recent spans placed on the host clock", placed, len(recent))
	}
}

// TestGPUHubSharedBoundaries: three lanes a step that follow each other on
// the stream, each boundary one event (NextStep, NextLane), beside the
// background harvester: every lane lands every step, each span times its
// own spin, and each lane span starts where the one before it ended.
func TestGPUHubSharedBoundaries(t *testing.T) {
	gputest.Only(t)
	e := gputest.NewEngine(t, 0)
	h, err := gpuspans.New(gpuspans.Options{Lanes: []string{"prefill", "decode", "sample"}, Level: gpuspans.LevelKernel})
	if err != nil {
		t.Fatal(err)
	}
	h.KeepStartTimes()
	if err := h.Install(0, e.Lane, cuda.Opener(0)); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	harvested := make(chan error, 1)
	go func() { harvested <- h.RunHarvester(ctx, time.Millisecond) }()
	defer stop()
	const steps = 400
	for step := 0; step < steps; step++ {
		h.NextStep(2, 0) // the first step: no lane 2 open, lane 0 begins
		for lane := 0; lane < 3; lane++ {
			if err := e.Kit.Spin(e.Lane, e2eSpin, nil); err != nil {
				t.Fatal(err)
			}
			if lane < 2 {
				h.NextLane(lane, lane+1)
			}
		}
	}
	h.LaneEnd(2)
	if err := e.Kit.Sync(e.Lane); err != nil {
		t.Fatal(err)
	}
	stop()
	<-harvested
	h.Harvest()
	s := h.Snapshot()
	c := s.Counters
	t.Logf("counters %+v", c)
	if c.Begun != c.Landed+c.DroppedTotal()+c.InFlight+c.Errored {
		t.Errorf("accounting: %+v", c)
	}
	if c.Begun != 3*steps || c.Landed != 3*steps {
		t.Errorf("begun %d, landed %d: want %d each", c.Begun, c.Landed, 3*steps)
	}
	for _, a := range s.Lanes {
		if a.Name == "other" {
			continue
		}
		// The host runs ahead of 40 us spins, so the GPU runs them back
		// to back: a span is its spin, as with separate events.
		checkSpinAggregate(t, "lane "+a.Name, a, 0)
		if a.Count != steps {
			t.Errorf("lane %s landed %d spans, want %d", a.Name, a.Count, steps)
		}
	}
	// The spans of the first steps land before the pool's first anchor and
	// carry no start time; the rest are placed from the events themselves.
	var recent []gpuspans.Span
	for _, sp := range h.RecentSpans(0, nil) {
		if sp.StartNs != 0 {
			recent = append(recent, sp)
		}
	}
	sort.Slice(recent, func(i, j int) bool { return recent[i].StartNs < recent[j].StartNs })
	worst := int64(0)
	for i := 1; i < len(recent); i++ {
		a, b := recent[i-1], recent[i]
		gap := b.StartNs - (a.StartNs + a.DurationNs)
		if gap < 0 {
			gap = -gap
		}
		if gap > worst {
			worst = gap
		}
	}
	t.Logf("%d recent lane spans: the largest gap between one's end and the next's start %d ns", len(recent), worst)
	if len(recent) < steps || worst > int64(time.Microsecond) {
		t.Errorf("%d recent spans, largest gap %d ns: want them to tile the stream within 1 us", len(recent), worst)
	}
}

// checkSpinAggregate checks that spans of e2eSpin kernels measured about
// e2eSpin: never less, and no more than launch latency above.
func checkSpinAggregate(t *testing.T, what string, a gpuspans.Aggregate, under time.Duration) {
	t.Helper()
	t.Logf("%s: n=%d min=%v p50=%v max=%v", what, a.Count, a.Min, a.Quantile(0.5), a.Max)
	if a.Min < e2eSpin-under || a.Quantile(0.5) > e2eSpin+e2eSpinSlack {
		t.Errorf("%s: min %v p50 %v for %v kernels", what, a.Min, a.Quantile(0.5), e2eSpin)
	}
}

// TestGPUHubHarvestDoesNotWait: a harvest while a 50 ms kernel runs returns
// at once and leaves its span in flight.
func TestGPUHubHarvestDoesNotWait(t *testing.T) {
	gputest.Only(t)
	e := gputest.NewEngine(t, 0)
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, e.Lane, cuda.Opener(0)); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	sp := h.KernelBegin(1, e.Kernel)
	if err := e.Kit.Spin(e.Kernel, 50*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	h.KernelEnd(sp)
	start := time.Now()
	h.Harvest()
	took := time.Since(start)
	s := h.Snapshot()
	t.Logf("harvest during a 50 ms kernel took %v; in flight %d", took, s.Counters.InFlight)
	if s.Counters.InFlight != 1 || s.Counters.Landed != 0 {
		t.Errorf("counters %+v", s.Counters)
	}
	if took > 5*time.Millisecond {
		t.Errorf("harvest took %v: it waited for the GPU", took)
	}
	if err := e.Kit.Sync(e.Kernel); err != nil {
		t.Fatal(err)
	}
	h.Harvest()
	if s := h.Snapshot(); s.Counters.Landed != 1 || s.Kernels[0].Max < 50*time.Millisecond {
		t.Errorf("after the kernel: %+v", s.Counters)
	}
}

// TestGPUHubTwoDevices: one process, a pool per GPU, spans carry the right
// device. Skipped on a machine with one GPU.
func TestGPUHubTwoDevices(t *testing.T) {
	gputest.Only(t)
	n, err := cuda.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Skipf("%d device(s)", n)
	}
	engines := []*gputest.Engine{gputest.NewEngine(t, 0), gputest.NewEngine(t, 1)}
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	for d, e := range engines {
		if err := h.Install(d, e.Lane, cuda.Opener(d)); err != nil {
			t.Fatal(err)
		}
	}
	const steps = 50
	for step := 0; step < steps; step++ {
		h.BeginStep()
		h.LaneBegin(0)
		for d, e := range engines {
			if err := e.Kit.Spin(e.Lane, 20*time.Microsecond, nil); err != nil {
				t.Fatal(err)
			}
			// Device 1 runs kernels twice as long, so a mix-up shows.
			sp := h.Device(d).KernelBegin(7, e.Kernel)
			if err := e.Kit.Spin(e.Kernel, time.Duration(d+1)*100*time.Microsecond, nil); err != nil {
				t.Fatal(err)
			}
			h.KernelEnd(sp)
		}
		h.LaneEnd(0)
	}
	for _, e := range engines {
		_ = e.Kit.Sync(e.Lane)
		_ = e.Kit.Sync(e.Kernel)
	}
	h.Harvest()
	s := h.Snapshot()
	t.Logf("counters %+v", s.Counters)
	if len(s.Kernels) != 2 || len(s.Lanes) != 2 {
		t.Fatalf("kernels %+v lanes %+v", s.Kernels, s.Lanes)
	}
	for _, a := range s.Kernels {
		want := time.Duration(a.Device+1) * 100 * time.Microsecond
		t.Logf("device %d kernel: n=%d min=%v max=%v", a.Device, a.Count, a.Min, a.Max)
		if a.Count != steps || a.Min < want || a.Max > want+e2eSpinSlack+20*time.Microsecond {
			t.Errorf("device %d: %d spans, min %v max %v; want about %v", a.Device, a.Count, a.Min, a.Max, want)
		}
	}
	for _, a := range s.Lanes {
		if a.Count != steps {
			t.Errorf("device %d lane: %d spans", a.Device, a.Count)
		}
	}
}

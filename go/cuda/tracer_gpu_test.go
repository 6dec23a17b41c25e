//go:build cgo

package cuda_test

import (
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest/gputest"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

// Kernel spans from the real CUPTI, attached (KernelTimingAttached): every
// kernel of armed steps, CUDA graph replays included, and none of the
// others; captures unbroken; durations against the kernel's own
// %globaltimer. GPU only: skipped unless GPUSPANS_GPU=1. Once attached,
// CUPTI stays attached for the rest of the process, and windows stay off:
// the window tests on the GPU (go/integration's kernelwindows_gpu_test.go)
// run in a binary of their own.

const graphKernels = 100

// tracedGPUHub is a hub on device 0 with kernel spans from the tracer.
func tracedGPUHub(t *testing.T, e *gputest.Engine, every int) (*gpuspans.Hub, *gpuspanstest.Log) {
	t.Helper()
	cudatest.UseRealCUPTI()
	log := new(gpuspanstest.Log)
	h, err := gpuspans.New(gpuspans.Options{
		Lanes: []string{"decode"}, Level: gpuspans.LevelKernel, KernelSpanEvery: every, Logf: log.Logf,
		KernelTiming: gpuspans.KernelTimingAttached, KernelTracer: cuda.TracerOpener(""),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, e.Lane, cuda.Opener(0)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.CloseKernelTracer() })
	return h, log
}

func kernelNames(s *gpuspans.Snapshot) []string {
	var n []string
	for _, a := range s.Kernels {
		n = append(n, a.Name)
	}
	return n
}

// settle waits for the tracer's flush and lands everything: at most a few
// flush periods.
func settle(t *testing.T, h *gpuspans.Hub, want uint64) gpuspans.Snapshot {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		time.Sleep(2 * cuda.TracerFlushPeriodMs * time.Millisecond)
		h.Harvest()
		s := gpuspanstest.Snapshot(t, h)
		var n uint64
		for _, a := range s.Kernels {
			n += a.Count
		}
		if n >= want || time.Now().After(deadline) {
			return s
		}
	}
}

func TestGPUTracerEveryKernelOfArmedSteps(t *testing.T) {
	gputest.Only(t)
	e := gputest.NewEngine(t, 0)
	// A graph captured and instantiated before CUPTI is first touched.
	capture := func() cudakit.GraphExec {
		return e.Capture(t, graphKernels, func() error { return e.Kit.Empty(e.Kernel) })
	}
	before := capture()
	h, log := tracedGPUHub(t, e, 2)
	const steps = 20
	var later cudakit.GraphExec
	for step := 1; step <= steps; step++ {
		h.BeginStep()
		h.LaneBegin(0)
		if step == 1 {
			if s := h.Snapshot(); !s.KernelTiming.Tracing {
				t.Fatalf("the tracer did not open: %v (log %q)", s.KernelTiming.Err, log.Lines())
			}
		}
		if step == 3 {
			later = capture() // captured with the tracer open, on an unarmed step
		}
		if step == 6 {
			// Captured inside an armed window: collection on must not break it.
			runtime.LockOSThread()
			if err := e.Kit.CaptureBegin(e.Kernel, cudakit.CaptureGlobal); err != nil {
				t.Fatal(err)
			}
			if err := e.Kit.Empty(e.Kernel); err != nil {
				t.Fatal(err)
			}
			g, err := e.Kit.CaptureEnd(e.Kernel)
			runtime.UnlockOSThread()
			if err != nil {
				t.Fatalf("a capture in an armed window broke: %v", err)
			}
			_ = e.Kit.DestroyGraph(g)
		}
		if err := e.Kit.Launch(before, e.Kernel); err != nil {
			t.Fatal(err)
		}
		if later != 0 {
			if err := e.Kit.Launch(later, e.Kernel); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Kit.Empty(e.Kernel); err != nil { // one eager kernel
			t.Fatal(err)
		}
		h.LaneEnd(0)
		if err := e.Kit.Sync(e.Kernel); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.SetLevel(gpuspans.LevelStep); err != nil { // collection off
		t.Fatal(err)
	}
	// Armed steps 2..20: graph "before" every one; "later" from step 4.
	armed := steps / 2
	want := uint64(armed*(graphKernels+1) + (armed-1)*graphKernels)
	s := settle(t, h, want)
	gpuspanstest.CheckAccounting(t, &s)
	var got, other uint64
	for _, a := range s.Kernels {
		got += a.Count
		if a.Name == gpuspans.OtherKernel {
			other += a.Count
		}
	}
	if got != want {
		t.Errorf("%d kernel spans landed, want %d: every kernel of the armed steps and none of the others", got, want)
	}
	if other != 0 {
		t.Errorf("%d kernel spans landed as %q: names %v", other, gpuspans.OtherKernel, kernelNames(&s))
	}
	if d := s.Counters.Dropped[gpuspans.DropTracerLost]; d != 0 {
		t.Errorf("%d records lost", d)
	}
	graphSpans := 0
	for _, sp := range h.RecentSpans(0, nil) {
		if sp.Kind == gpuspans.KindKernel && sp.Graph != 0 {
			graphSpans++
			if sp.DurationNs > 50_000 {
				t.Errorf("an empty kernel replayed from a graph read %d ns", sp.DurationNs)
			}
			if sp.Step%2 != 0 || sp.Step == 0 {
				t.Fatalf("graph kernel in step %d: not an armed step", sp.Step)
			}
		}
	}
	if want := armed*graphKernels + (armed-1)*graphKernels; graphSpans != want {
		t.Errorf("%d spans from graph replays, want %d", graphSpans, want)
	}
	t.Logf("%d kernels landed, names %v, tracer records %d", got, kernelNames(&s), s.KernelTiming.Records)
}

func TestGPUTracerDurations(t *testing.T) {
	gputest.Only(t)
	e := gputest.NewEngine(t, 0)
	h, _ := tracedGPUHub(t, e, 1)
	h.BeginStep() // opens the pool and the tracer
	const reps = 20
	type probe struct {
		ctas int
		spin time.Duration
	}
	var probes []probe
	var truth []int64
	for _, ctas := range []int{1, 264} {
		for _, d := range []time.Duration{0, 10 * time.Microsecond, 100 * time.Microsecond} {
			tm, err := e.Kit.NewGridTimer(ctas)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < reps; i++ {
				h.BeginStep()
				if ctas == 1 {
					err = e.Kit.Spin(e.Kernel, d, tm)
				} else {
					err = e.Kit.SpinGrid(e.Kernel, d, tm)
				}
				if err != nil {
					t.Fatal(err)
				}
				if err := e.Kit.Sync(e.Kernel); err != nil {
					t.Fatal(err)
				}
				a, b, err := tm.Read()
				if err != nil {
					t.Fatal(err)
				}
				probes = append(probes, probe{ctas, d})
				truth = append(truth, int64(b-a))
			}
			_ = tm.Free()
		}
	}
	if err := h.SetLevel(gpuspans.LevelStep); err != nil {
		t.Fatal(err)
	}
	settle(t, h, uint64(len(truth)))
	var spans []gpuspans.Span
	for _, sp := range h.RecentSpans(0, nil) {
		if sp.Kind == gpuspans.KindKernel {
			spans = append(spans, sp)
		}
	}
	if len(spans) != len(truth) {
		t.Fatalf("%d kernel spans, want %d", len(spans), len(truth))
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].StartNs < spans[j].StartNs })
	extra := map[probe][]int64{}
	for i, sp := range spans {
		extra[probes[i]] = append(extra[probes[i]], sp.DurationNs-truth[i])
	}
	for p, xs := range extra {
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		lo, mid, hi := xs[0], xs[len(xs)/2], xs[len(xs)-1]
		t.Logf("%d CTAs, spin %v: CUPTI - %%globaltimer: min %d ns, p50 %d ns, max %d ns", p.ctas, p.spin, lo, mid, hi)
		if lo < 0 || hi > 3000 {
			t.Errorf("%d CTAs, spin %v: CUPTI's duration is %d..%d ns off the kernel's own interval, want 0..3000", p.ctas, p.spin, lo, hi)
		}
	}
}

// Kernels replayed from a graph launched far ahead of the GPU, as behind a
// busy engine, with collection switched on and off every other step: each
// span is its kernel's own run, not the wait in the queue nor an earlier
// replay's start.
func TestGPUTracerGraphDurations(t *testing.T) {
	gputest.Only(t)
	e := gputest.NewEngine(t, 0)
	const spin = 20 * time.Microsecond
	x := e.Capture(t, 5, func() error { return e.Kit.Spin(e.Kernel, spin, nil) })
	h, _ := tracedGPUHub(t, e, 2)
	const steps = 20
	for i := 0; i < steps; i++ {
		h.BeginStep()
		if err := e.Kit.Spin(e.Kernel, 2*time.Millisecond, nil); err != nil { // the queue ahead
			t.Fatal(err)
		}
		if err := e.Kit.Launch(x, e.Kernel); err != nil {
			t.Fatal(err)
		}
		if err := e.Kit.Sync(e.Kernel); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.SetLevel(gpuspans.LevelStep); err != nil {
		t.Fatal(err)
	}
	settle(t, h, steps/2*6)
	n := 0
	for _, sp := range h.RecentSpans(0, nil) {
		if sp.Kind != gpuspans.KindKernel || sp.Graph == 0 {
			continue
		}
		if n < 5 {
			t.Logf("graph %d span: %d ns", sp.Graph, sp.DurationNs)
		}
		n++
		if d := time.Duration(sp.DurationNs); d < spin || d > spin+3*time.Microsecond {
			t.Errorf("a %v kernel replayed from a graph read %v", spin, d)
		}
	}
	if n != steps/2*5 {
		t.Errorf("%d graph kernel spans, want %d", n, steps/2*5)
	}
	if s := gpuspanstest.Snapshot(t, h); s.Counters.Dropped[gpuspans.DropTracerLost] != 0 {
		t.Errorf("%d records lost", s.Counters.Dropped[gpuspans.DropTracerLost])
	}
}

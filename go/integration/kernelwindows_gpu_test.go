//go:build cgo

package integration

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest/gputest"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

// Kernel windows on the real CUPTI: CUPTI attached for one step every
// millisecond or so, for GPUSPANS_WINDOWS windows (default 1,000), beside
// eager kernels and CUDA graphs captured before the first window, inside
// windows and between them, lane spans on every step and a background
// harvester querying events on another thread. Every kernel counts itself
// on the device, so the test knows every launch ran; every kernel of every
// window must land, in its step, and none of the others; no CUDA call may
// fail. GPU only: skipped unless GPUSPANS_GPU=1. The attached tests
// (go/cuda's tracer_gpu_test.go), which leave CUPTI attached for good, run
// in go/cuda's test binary, never in this one.

const windowGraphKernels = 100

func TestGPUKernelWindows(t *testing.T) {
	gputest.Only(t)
	windows := 1000
	if v, err := strconv.Atoi(os.Getenv("GPUSPANS_WINDOWS")); err == nil && v > 0 {
		windows = v
	}
	runtime.LockOSThread() // the stepping thread is the launching thread
	defer runtime.UnlockOSThread()
	e := gputest.NewEngine(t, 0)
	counter, err := e.Kit.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	defer counter.Free()
	capture := func(n int) cudakit.GraphExec {
		return e.Capture(t, n, func() error { return e.Kit.Count(e.Kernel, counter) })
	}
	before := capture(windowGraphKernels) // before CUPTI is first touched
	log := new(gpuspanstest.Log)
	cudatest.UseRealCUPTI()
	h, err := gpuspans.New(gpuspans.Options{
		Lanes: []string{"decode"}, Level: gpuspans.LevelKernel, Logf: log.Logf,
		KernelTiming: gpuspans.KernelTimingCUPTI, KernelTracer: cuda.TracerOpener(""),
		KernelWindowEvery: time.Millisecond, KernelWindowSteps: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, e.Lane, cuda.Opener(0)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	harvester := make(chan error, 1)
	go func() { harvester <- h.RunHarvester(ctx, 200*time.Microsecond) }()

	var inside, between []cudakit.GraphExec // captured inside windows and between them
	var launched, inWindows uint64
	wins := func() uint64 { return h.KernelTimingStatus().Windows.Opened }
	step := 0
	for wins() < uint64(windows) || h.KernelTimingStatus().Windows.Open {
		step++
		if step > 20*windows {
			t.Fatalf("%d steps for %d windows", step, wins())
		}
		h.BeginStep()
		st := h.KernelTimingStatus()
		if step == 1 && !st.Tracing {
			t.Fatalf("no window: %v (log %q)", st.Err, log.Lines())
		}
		armed := st.Windows.Open
		h.LaneBegin(0)
		n := uint64(0)
		launch := func(x cudakit.GraphExec, kernels int) {
			if err := e.Kit.Launch(x, e.Kernel); err != nil {
				t.Fatalf("step %d: graph launch: %v", step, err)
			}
			n += uint64(kernels)
		}
		launch(before, windowGraphKernels)
		for _, x := range inside {
			launch(x, 10)
		}
		for _, x := range between {
			launch(x, 10)
		}
		if step%200 == 0 || step%200 == 101 { // captures inside windows and between them
			x := capture(10)
			if armed {
				inside = append(inside, x)
			} else {
				between = append(between, x)
			}
			launch(x, 10)
		}
		for i := 0; i < 3; i++ { // eager kernels
			if err := e.Kit.Count(e.Kernel, counter); err != nil {
				t.Fatalf("step %d: launch: %v", step, err)
			}
			n++
		}
		h.LaneEnd(0)
		if err := e.Kit.Sync(e.Kernel); err != nil { // the engine's per-step read-back
			t.Fatalf("step %d: %v", step, err)
		}
		launched += n
		if armed {
			inWindows += n
		}
	}
	if err := h.SetKernelTiming(gpuspans.KernelTimingEvents); err != nil {
		t.Fatal(err)
	}
	h.BeginStep() // no window opens at events
	cancel()
	if err := <-harvester; err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		h.Harvest()
	}
	ran, err := counter.Read()
	if err != nil {
		t.Fatal(err)
	}
	if ran != launched {
		t.Errorf("the device counted %d kernels, %d were launched", ran, launched)
	}
	s := gpuspanstest.Snapshot(t, h)
	gpuspanstest.CheckAccounting(t, &s)
	kt := s.KernelTiming
	var landed uint64
	for _, a := range s.Kernels {
		landed += a.Count
	}
	lost := s.Counters.Dropped[gpuspans.DropTracerLost]
	if landed != inWindows || lost != 0 || kt.Windows.Kernels != landed {
		t.Errorf("%d kernel spans landed (windows counted %d), %d lost; %d kernels ran in windows: want all of them", landed, kt.Windows.Kernels, lost, inWindows)
	}
	if kt.Windows.Abandoned != 0 || kt.Fallbacks != 0 || kt.Windows.Skipped != 0 {
		t.Errorf("windows %+v, fallbacks %d: want none abandoned, skipped or fallen back", kt.Windows, kt.Fallbacks)
	}
	graph := 0
	for _, sp := range h.RecentSpans(0, nil) {
		if sp.Kind == gpuspans.KindKernel && sp.Graph != 0 {
			graph++
		}
	}
	if graph == 0 {
		t.Error("no kernel replayed from a graph landed")
	}
	if len(inside) == 0 || len(between) == 0 {
		t.Errorf("%d graphs captured inside windows, %d between: want some of each", len(inside), len(between))
	}
	o, c := kt.Windows.OpenTime, kt.Windows.CloseTime
	t.Logf("%d steps, %d windows, %d kernels launched (%d in windows, all landed), %d graphs captured inside windows, %d between",
		step, kt.Windows.Opened, launched, inWindows, len(inside), len(between))
	t.Logf("window open on the stepping thread: p50 %v p99 %v max %v; close: p50 %v p99 %v max %v",
		o.Quantile(0.5), o.Quantile(0.99), o.Max, c.Quantile(0.5), c.Quantile(0.99), c.Max)
	if st, err := cuda.OpenTracer("", backend.TracerWindow); err != nil {
		t.Errorf("CUPTI not free after the windows: %v", err)
	} else if err := st.Close(); err != nil {
		t.Error(err)
	}
}

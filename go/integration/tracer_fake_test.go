//go:build cgo

// Over 600 lines: the kernel tracer's tests on the fake CUPTI, which
// share one fixture (tracedHub, the fake clock, the replayer) and keep
// each of docs/gpu-facts.md's CUPTI rules beside the test that breaks it.

package integration

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

// Kernel spans from the tracer, end to end: a hub on cuda.Tracer and the C++
// core's record parsing, with the fake CUPTI (go/cuda/cudatest) delivering
// synthesised activity buffers through the real callbacks. The fake is
// process-wide: none of these runs in parallel.

// fakeClockOffset puts the fake CUPTI clock well behind Unix time, so a
// test that forgot the offset would place spans decades off.
const fakeClockOffset = int64(1_700_000_000_000_000_000)

// tracedHub returns a hub at Kernel arming one step in every, with kernel
// timing mode (windows of one step, a day apart: tests ask for them with
// RequestKernelWindow), device 0 installed on a no-op pool, and the fake
// CUPTI. The test's goroutine is locked to its thread, the stepping
// thread, as a Go engine's must be.
func tracedHub(t *testing.T, mode gpuspans.KernelTiming, every, labels int) (*gpuspans.Hub, *cudatest.FakeCUPTI, *gpuspanstest.Log) {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	f := cudatest.UseFakeCUPTI()
	f.SetClockOffset(fakeClockOffset)
	t.Cleanup(cudatest.UseRealCUPTI)
	log := new(gpuspanstest.Log)
	h, err := gpuspans.New(gpuspans.Options{
		Level: gpuspans.LevelKernel, KernelSpanEvery: every, Logf: log.Logf,
		KernelTiming: mode, KernelTracer: cuda.TracerOpener(""), KernelLabels: labels,
		Lanes: []string{"decode"}, KernelWindowEvery: 24 * time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, fakeLane, sim.NopOpener); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.CloseKernelTracer(); err != nil {
			t.Error(err)
		}
	})
	return h, f, log
}

// fakeNow is the fake CUPTI's clock now.
func fakeNow() int64 { return time.Now().UnixNano() - fakeClockOffset }

func kernelAgg(t *testing.T, s *gpuspans.Snapshot, name string) gpuspans.Aggregate {
	t.Helper()
	for _, a := range s.Kernels {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("no kernel aggregate %q in %v", name, kernelNames(s))
	return gpuspans.Aggregate{}
}

func kernelNames(s *gpuspans.Snapshot) []string {
	var n []string
	for _, a := range s.Kernels {
		n = append(n, a.Name)
	}
	return n
}

// A window of KernelWindowSteps steps lands every kernel of its steps,
// graph replays included, each in the step it ran in; outside windows CUPTI
// is detached and records nothing.
func TestWindowsLandEveryKernelOfTheirSteps(t *testing.T) {
	h, f, log := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	if err := h.SetKernelWindows(24*time.Hour, 2); err != nil {
		t.Fatal(err)
	}
	// The second window's spans reach the recent ring once the lane's
	// spans after it have landed (its served time).
	const steps = 10 + gpuspans.GPUTimeServedSpans
	recorded := 0
	for i := 1; i <= steps; i++ {
		if i == 9 {
			if err := h.RequestKernelWindow(); err != nil {
				t.Fatal(err)
			}
		}
		h.BeginStep()
		inWindow := i <= 2 || i == 9 || i == 10
		if f.Attached() != inWindow {
			t.Fatalf("step %d: CUPTI attached %v", i, f.Attached())
		}
		h.LaneBegin(0)
		// An engine's hand-wrapped launch: no event pair while tracing, or
		// the kernel would count twice.
		if sp := h.KernelBegin(0x1, fakeKernel); sp != (gpuspans.KernelSpan{}) {
			t.Fatalf("step %d: KernelBegin opened an event pair while the tracer is the source", i)
		}
		if code := f.GraphLaunch(); code != 0 {
			t.Fatalf("step %d: graph replay failed with %d", i, code)
		}
		start := fakeNow()
		for k, name := range []string{"_Z6decodePfi", "triton_poi_fused_add_0"} {
			if f.Kernel(0, 7, start+int64(k), start+int64(k)+int64(k+1)*3000, name, 5) {
				recorded++
			}
		}
		f.Kernel(3, 1, start, start+500, "_Z5otherv", 0) // a device nothing installed
		h.LaneEnd(0)
		for fakeNow() < start+10_000 { // the step lasts until its kernels have run
		}
	}
	if recorded != 2*4 {
		t.Fatalf("collection on for %d kernels, want 8 (the windows' 4 steps)", recorded)
	}
	h.Harvest()
	s := gpuspanstest.Snapshot(t, h)
	gpuspanstest.CheckAccounting(t, &s)
	kt := s.KernelTiming
	if !kt.Tracing || kt.Err != nil || kt.Windows.Opened != 2 || kt.Windows.Kernels != 8 || kt.Windows.Last.Kernels != 4 || kt.Windows.Last.FirstStep != 9 {
		t.Fatalf("KernelTiming = %+v, want tracing, 2 windows of 4 kernels", kt)
	}
	if f.Finalizes() != 2 || f.BadFinalizes() != 0 {
		t.Errorf("%d finalizes (%d after a replay with collection off), want 2 and 0", f.Finalizes(), f.BadFinalizes())
	}
	dec := kernelAgg(t, &s, "decode")
	tri := kernelAgg(t, &s, "triton_poi_fused_add_0")
	if dec.Count != 4 || tri.Count != 4 {
		t.Errorf("decode %d, triton %d spans, want 4 each", dec.Count, tri.Count)
	}
	if dec.Max != 3*time.Microsecond || tri.Max != 6*time.Microsecond {
		t.Errorf("durations: decode max %v, triton max %v; want 3us and 6us, the GPU's own", dec.Max, tri.Max)
	}
	var kernels []gpuspans.Span
	for _, sp := range h.RecentSpans(0, nil) {
		if sp.Kind == gpuspans.KindKernel {
			kernels = append(kernels, sp)
		}
	}
	wantSteps := []uint64{1, 1, 2, 2, 9, 9, 10, 10}
	if len(kernels) != len(wantSteps) {
		t.Fatalf("%d kernel spans in the recent ring, want %d", len(kernels), len(wantSteps))
	}
	for i, sp := range kernels {
		if sp.Step != wantSteps[i] {
			t.Errorf("span %d (%s) in step %d, want %d: the step it ran in", i, sp.Name, sp.Step, wantSteps[i])
		}
		if sp.Graph != 5 || sp.Stream != 7 || sp.Device != 0 {
			t.Errorf("span %d: graph %d stream %d device %d, want 5, 7, 0", i, sp.Graph, sp.Stream, sp.Device)
		}
		if d := time.Since(time.Unix(0, sp.StartNs)); d < 0 || d > time.Minute {
			t.Errorf("span %d starts %v ago: the tracer's clock was not mapped to Unix time", i, d)
		}
	}
	if n := log.Count("kernel"); n != 0 {
		t.Errorf("logged %d tracer lines, want none: %q", n, log.Lines())
	}
}

// The rules of kernel windows, held against the fake CUPTI while other
// goroutines do everything they may: a background harvester, readers,
// level and timing changes, requests. Every CUPTI call stays on the
// stepping thread, no finalize follows a replay made with collection off,
// and every kernel recorded lands once.
func TestWindowRulesUnderConcurrentUse(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	f.ExpectThread(cudatest.ThreadID())
	if err := h.SetKernelWindows(time.Millisecond, 3); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		_ = h.RunHarvester(ctx, 100*time.Microsecond)
	}()
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			s := h.Snapshot()
			_ = s.KernelTiming.Windows
			_ = h.RequestKernelWindow()
			time.Sleep(50 * time.Microsecond)
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			switch i % 5 {
			case 0:
				_ = h.SetLevel(gpuspans.LevelStep)
			case 1:
				_ = h.SetLevel(gpuspans.LevelKernel)
			case 2:
				_ = h.SetKernelTiming(gpuspans.KernelTimingEvents)
			case 3:
				_ = h.SetKernelTiming(gpuspans.KernelTimingAuto)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	recorded := 0
	for i := 0; i < 3000; i++ {
		h.BeginStep()
		if code := f.GraphLaunch(); code != 0 {
			t.Fatalf("step %d: graph replay failed with %d: a detach broke it", i, code)
		}
		now := fakeNow()
		if f.Kernel(0, 1, now+10, now+500, "k", 3) {
			recorded++
		}
		for fakeNow() < now+30_000 { // 30 us steps: 90 ms, windows every 1 ms
		}
	}
	cancel()
	wg.Wait()
	_ = h.SetLevel(gpuspans.LevelKernel)
	_ = h.SetKernelTiming(gpuspans.KernelTimingEvents)
	h.BeginStep() // closes any window, here
	for i := 0; i < 3; i++ {
		h.Harvest()
	}
	if n := f.StrayCalls(); n != 0 {
		t.Errorf("%d CUPTI calls off the stepping thread", n)
	}
	if n := f.BadFinalizes(); n != 0 {
		t.Errorf("%d finalizes after a replay with collection off", n)
	}
	if f.Attached() {
		t.Error("CUPTI still attached at events")
	}
	s := gpuspanstest.Snapshot(t, h)
	gpuspanstest.CheckAccounting(t, &s)
	kt := s.KernelTiming
	if kt.Windows.Opened < 10 || kt.Windows.Abandoned != 0 {
		t.Errorf("%d windows opened, %d abandoned: want at least 10 opened, none abandoned", kt.Windows.Opened, kt.Windows.Abandoned)
	}
	landed := kernelAgg(t, &s, "k").Count
	lost := s.Counters.Dropped[gpuspans.DropTracerLost]
	if int(landed+lost) != recorded || lost != 0 {
		t.Errorf("recorded %d kernels, landed %d, lost %d: want every one landed once", recorded, landed, lost)
	}
	if kt.Windows.Kernels != landed {
		t.Errorf("windows counted %d kernels, %d landed", kt.Windows.Kernels, landed)
	}
}

// A window closes only on its own thread: BeginStep on another keeps it
// collecting (the C tracer refuses), the next on the window's thread
// closes it; a hub closed from another thread while the stepping thread
// lives abandons the window, leaving CUPTI attached and windows off.
func TestWindowClosesOnItsThread(t *testing.T) {
	h, f, log := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	h.BeginStep() // the window opens here
	onOther := func(fn func()) {
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread() // a thread of its own, never the test's
			defer close(done)
			fn()
		}()
		<-done
	}
	onOther(h.BeginStep)
	if !f.Attached() || !f.Enabled() {
		t.Fatal("a BeginStep on another thread closed the window")
	}
	h.BeginStep()
	if f.Attached() || f.Finalizes() != 1 {
		t.Fatalf("the window's own thread did not close it: attached %v, %d finalizes", f.Attached(), f.Finalizes())
	}
	if err := h.RequestKernelWindow(); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	var closeErr error
	onOther(func() { closeErr = h.CloseKernelTracer() })
	if closeErr != nil {
		t.Fatal(closeErr)
	}
	if !f.Attached() || f.Enabled() || f.Finalizes() != 1 {
		t.Errorf("closed from another thread: attached %v, enabled %v, %d finalizes; want attached, off, no finalize", f.Attached(), f.Enabled(), f.Finalizes())
	}
	s := gpuspanstest.Snapshot(t, h)
	if s.KernelTiming.Windows.Abandoned != 1 || log.Count("another thread") != 1 {
		t.Errorf("abandon not counted or logged: %+v, %q", s.KernelTiming.Windows, log.Lines())
	}
	if err := h.SetKernelTiming(gpuspans.KernelTimingAuto); err != nil {
		t.Fatal(err)
	}
	if err := h.RequestKernelWindow(); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	s = gpuspanstest.Snapshot(t, h)
	if s.KernelTiming.Tracing || !strings.Contains(fmt.Sprint(s.KernelTiming.Err), "abandoned") {
		t.Errorf("a window after an abandoned one: %+v", s.KernelTiming)
	}
	if f.BadFinalizes() != 0 {
		t.Error("a finalize after a replay with collection off")
	}
}

func TestTracerFallsBackToEventPairs(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(f *cudatest.FakeCUPTI)
		kind  error
		words string
	}{
		{"missing", func(f *cudatest.FakeCUPTI) { f.FailOpen(true) }, backend.ErrNoTracer, "load refused"},
		{"unknown version", func(f *cudatest.FakeCUPTI) { f.SetVersion(140000) }, backend.ErrNoTracer, "version 140000"},
		{"CUDA 12.8", func(f *cudatest.FakeCUPTI) { f.SetVersion(26) }, backend.ErrNoTracer, "version 26"},
		{"enable refused", func(f *cudatest.FakeCUPTI) { f.FailEnable(27) }, nil, "cuptiActivityEnable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, f, log := tracedHub(t, gpuspans.KernelTimingCUPTI, 1, 0)
			c.setup(f)
			for i := 0; i < 5; i++ {
				h.BeginStep()
				sp := h.KernelBegin(0x1, fakeKernel)
				if sp == (gpuspans.KernelSpan{}) {
					t.Fatalf("step %d: no event-pair span after the fallback", i)
				}
				h.KernelEnd(sp)
			}
			h.Harvest()
			s := gpuspanstest.Snapshot(t, h)
			gpuspanstest.CheckAccounting(t, &s)
			kt := s.KernelTiming
			if kt.Tracing || kt.Err == nil || kt.Fallbacks != 1 || !strings.Contains(kt.Err.Error(), c.words) {
				t.Fatalf("KernelTiming = %+v, want events with an error naming %q, one fallback", kt, c.words)
			}
			if c.kind != nil && !errors.Is(kt.Err, c.kind) {
				t.Errorf("error %v is not %v", kt.Err, c.kind)
			}
			if n := log.Count("requested (cupti) but unavailable"); n != 1 {
				t.Errorf("logged the fallback %d times, want once: %q", n, log.Lines())
			}
			if a := kernelAgg(t, &s, gpuspans.OtherKernel); a.Count != 5 {
				t.Errorf("%d event-pair kernel spans landed after the fallback, want 5", a.Count)
			}
			if f.Attached() {
				t.Error("a refused window left CUPTI attached")
			}
		})
	}
}

// A profiler holding CUPTI: windows are skipped and kernel spans come from
// event pairs, logged once. Its subscriber lingers after it stops (as
// torch.profiler's does): SetKernelTiming(auto) says it is done, and the
// next window takes CUPTI over and clears it with its detach.
func TestWindowStepsAsideForAProfiler(t *testing.T) {
	h, f, log := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	// The first window (its take-over is New's: auto was asked for) opens
	// and detaches; then a profiler attaches, and windows step aside.
	h.BeginStep()
	h.BeginStep()
	if f.Attached() || gpuspanstest.Snapshot(t, h).KernelTiming.Windows.Opened != 1 {
		t.Fatalf("the first window did not open and detach: %+v", gpuspanstest.Snapshot(t, h).KernelTiming)
	}
	f.OtherSubscriber(true)
	for i := 0; i < 3; i++ {
		_ = h.RequestKernelWindow()
		h.BeginStep()
		sp := h.KernelBegin(0x1, fakeKernel)
		if sp == (gpuspans.KernelSpan{}) {
			t.Fatalf("step %d: no event pair while a profiler holds CUPTI", i)
		}
		h.KernelEnd(sp)
	}
	s := gpuspanstest.Snapshot(t, h)
	if kw := s.KernelTiming.Windows; kw.Skipped != 3 || kw.Opened != 1 || !errors.Is(s.KernelTiming.Err, backend.ErrTracerBusy) { // none opened beside the profiler
		t.Fatalf("with a profiler: %+v", s.KernelTiming)
	}
	if n := log.Count("kernel window skipped"); n != 1 {
		t.Errorf("logged %d skips: %q", n, log.Lines())
	}
	if err := h.SetKernelTiming(gpuspans.KernelTimingAuto); err != nil { // the profiler is done
		t.Fatal(err)
	}
	if err := h.RequestKernelWindow(); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if !f.Attached() || !f.Enabled() {
		t.Fatal("no window after SetKernelTiming(auto) with the profiler's subscriber left")
	}
	h.BeginStep()
	if f.Attached() {
		t.Fatal("the window did not detach")
	}
	// The detach cleared the lingering subscriber: the next window needs no
	// take-over.
	if err := h.RequestKernelWindow(); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if !f.Attached() {
		t.Error("no window after the take-over's detach")
	}
	h.BeginStep()
	if s := gpuspanstest.Snapshot(t, h); s.KernelTiming.Windows.Opened != 3 || s.KernelTiming.Windows.Skipped != 3 {
		t.Errorf("windows %d opened, %d skipped; want 3 and 3", s.KernelTiming.Windows.Opened, s.KernelTiming.Windows.Skipped)
	}
}

// A hub created with auto after a profiler has finished takes CUPTI over
// from the subscriber the profiler left (torch.profiler keeps it after it
// stops), at its first window, on the stepping thread: every CUPTI call
// there, no graph replayed while attached with collection off before the
// finalize (docs/gpu-facts.md's CUPTI rules; the fake counts a break of
// either).
func TestWindowTakesOverFromAFinishedProfiler(t *testing.T) {
	f := cudatest.UseFakeCUPTI()
	f.OtherSubscriber(true)
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	f.OtherSubscriber(true) // tracedHub made a fresh fake: the profiler's subscriber again
	f.ExpectThread(cudatest.ThreadID())
	for i := 0; i < 3; i++ {
		h.BeginStep() // a window opens
		if !f.Attached() || !f.Enabled() {
			t.Fatalf("window %d: no window after a finished profiler: %+v", i, gpuspanstest.Snapshot(t, h).KernelTiming)
		}
		if st := f.GraphLaunch(); st != 0 {
			t.Fatalf("window %d: a replay failed with %d", i, st)
		}
		h.BeginStep() // and closes
		if f.Attached() {
			t.Fatalf("window %d did not detach", i)
		}
		if st := f.GraphLaunch(); st != 0 {
			t.Fatalf("after window %d: a replay failed with %d", i, st)
		}
		_ = h.RequestKernelWindow()
	}
	if n := f.StrayCalls(); n != 0 {
		t.Errorf("%d CUPTI calls off the stepping thread", n)
	}
	if n := f.BadFinalizes(); n != 0 {
		t.Errorf("%d finalizes after a replay with collection off", n)
	}
	if s := gpuspanstest.Snapshot(t, h).KernelTiming.Windows; s.Opened != 3 || s.Skipped != 0 {
		t.Errorf("windows %d opened, %d skipped; want 3 and 0", s.Opened, s.Skipped)
	}
}

func TestTracerDropsAreCounted(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	h.BeginStep()
	for i := 0; i < 10; i++ {
		f.Kernel(0, 1, fakeNow(), fakeNow()+100, "k", 0)
	}
	f.Drop(0, 5)
	h.BeginStep() // the close delivers
	h.Harvest()
	s := gpuspanstest.Snapshot(t, h)
	gpuspanstest.CheckAccounting(t, &s)
	if got := s.Counters.Dropped[gpuspans.DropTracerLost]; got != 5 {
		t.Errorf("dropped tracer_lost = %d, want 5", got)
	}
	if s.Counters.Landed != 10 || s.Counters.Begun != 15 {
		t.Errorf("landed %d begun %d, want 10 and 15", s.Counters.Landed, s.Counters.Begun)
	}
}

// A traced kernel's label is short; the hub keeps the whole name behind it
// for exporters with room (OTLP's gpuspans.kernel.full_name).
func TestTracerKeepsFullNames(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	h.BeginStep()
	now := fakeNow()
	long := "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastINS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_"
	f.Kernel(0, 1, now+10, now+100, long, 0)
	f.Kernel(0, 1, now+200, now+300, "triton_poi_fused_add_0", 0)
	h.BeginStep()
	h.Harvest()
	s := gpuspanstest.Snapshot(t, h)
	var label string
	for _, a := range s.Kernels {
		if strings.HasPrefix(a.Name, "at::native::elementwise_kernel") {
			label = a.Name
		}
	}
	full := h.KernelFullName(label)
	if label == "" || !strings.HasPrefix(full, "void at::native::elementwise_kernel<128, 4,") || !strings.Contains(full, "MulFunctor") || len(full) <= len(label) {
		t.Errorf("label %q, full name %q", label, full)
	}
	if got := h.KernelFullName("triton_poi_fused_add_0"); got != "" {
		t.Errorf("a name that is its own label has a full name %q", got)
	}
}

// Events and a level below Kernel detach CUPTI at the next step, so that a
// profiler can take it and launches cost what they did before; auto takes
// it back at the next window.
func TestTracerReleasedAndRetaken(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	h.BeginStep()
	f.Kernel(0, 1, fakeNow(), fakeNow()+100, "before", 0)
	if err := h.SetKernelTiming(gpuspans.KernelTimingEvents); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if f.Attached() {
		t.Fatal("CUPTI still attached after SetKernelTiming(events) and a step")
	}
	h.Harvest()
	s := gpuspanstest.Snapshot(t, h)
	if a := kernelAgg(t, &s, "before"); a.Count != 1 {
		t.Errorf("the record collected before the release did not land: %d", a.Count)
	}
	// Released for real: another client can open CUPTI now.
	other, err := cuda.OpenTracer("", backend.TracerWindow)
	if err != nil {
		t.Fatalf("CUPTI not released: %v", err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if sp := h.KernelBegin(0x1, fakeKernel); sp == (gpuspans.KernelSpan{}) {
		t.Error("no event-pair span at KernelTimingEvents")
	} else {
		h.KernelEnd(sp)
	}
	if err := h.SetKernelTiming(gpuspans.KernelTimingAuto); err != nil {
		t.Fatal(err)
	}
	if err := h.RequestKernelWindow(); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if !f.Attached() || !f.Enabled() {
		t.Error("no window after SetKernelTiming(auto)")
	}
	if err := h.SetLevel(gpuspans.LevelOff); err != nil {
		t.Fatal(err)
	}
	h.BeginStep() // at Off: still the step that detaches
	if f.Attached() {
		t.Error("CUPTI still attached after the level went Off and a step")
	}
	if f.BadFinalizes() != 0 {
		t.Error("a finalize after a replay with collection off")
	}
}

// Attached, as before windows: collection follows the arming and CUPTI is
// never detached; no window opens in the process afterwards.
func TestTracerAttachedStaysAttached(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAttached, 2, 0)
	for i := 1; i <= 6; i++ {
		h.BeginStep()
		if f.Enabled() != (i%2 == 0) {
			t.Fatalf("step %d: collection on %v", i, f.Enabled())
		}
		f.GraphLaunch()
	}
	if err := h.SetKernelTiming(gpuspans.KernelTimingAuto); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if !f.Attached() || f.Finalizes() != 0 || f.BadFinalizes() != 0 {
		t.Errorf("attached %v, %d finalizes: an attached tracer must never detach", f.Attached(), f.Finalizes())
	}
	s := gpuspanstest.Snapshot(t, h)
	if s.KernelTiming.Tracing || !strings.Contains(fmt.Sprint(s.KernelTiming.Err), "attached") {
		t.Errorf("a window after attached: %+v", s.KernelTiming)
	}
}

// Two devices under one hub, one window: each device's kernels land on
// that device only, the accounting identity holds per device, and a
// device nothing installed gets nothing.
func TestWindowTwoDevices(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	if err := h.Install(1, fakeLane, fake.New(fake.Options{Device: 1}).Opener()); err != nil {
		t.Fatal(err)
	}
	if err := h.SetKernelWindows(24*time.Hour, 3); err != nil {
		t.Fatal(err)
	}
	want := map[int]int{}
	for step := 0; step < 4; step++ {
		h.BeginStep()
		now := fakeNow()
		for dev, n := range []int{2, 3, 1} { // device 2 is not installed
			for k := 0; k < n; k++ {
				if f.Kernel(uint32(dev), uint32(10+dev), now+int64(k), now+int64(k)+500, "k", uint32(dev)) && dev < 2 {
					want[dev]++
				}
			}
		}
		for fakeNow() < now+2000 {
		}
	}
	h.Harvest()
	s := gpuspanstest.Snapshot(t, h)
	gpuspanstest.CheckAccounting(t, &s)
	for _, d := range s.PerDevice {
		if int(d.Landed) != want[d.Device] || d.Begun != d.Landed {
			t.Errorf("device %d: landed %d of %d begun, want %d", d.Device, d.Landed, d.Begun, want[d.Device])
		}
	}
	if want[0] != 6 || want[1] != 9 {
		t.Fatalf("recorded %v, want 6 and 9 (3 window steps)", want)
	}
	for _, sp := range h.RecentSpans(0, nil) {
		if sp.Kind == gpuspans.KindKernel && int(sp.Graph) != sp.Device {
			t.Errorf("a kernel of device %d landed on device %d", sp.Graph, sp.Device)
		}
	}
}

// Two hubs in one process, each stepped by its own thread (say, a process
// that drives two GPUs with a hub each): each thread launches while the
// other's window attaches or detaches, which broke processes on the H200.
// The first window opened from the second thread turns windows off in the
// process for good, for both hubs, named; nothing was finalized under a
// replay made with collection off.
func TestWindowsOfTwoHubsOnTwoThreads(t *testing.T) {
	_, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0) // the fake, reset; this hub stays idle
	hubs := make([]*gpuspans.Hub, 2)
	logs := make([]*gpuspanstest.Log, 2)
	for i := range hubs {
		logs[i] = new(gpuspanstest.Log)
		h, err := gpuspans.New(gpuspans.Options{
			Level: gpuspans.LevelKernel, Logf: logs[i].Logf, Lanes: []string{"decode"},
			KernelTiming: gpuspans.KernelTimingAuto, KernelTracer: cuda.TracerOpener(""),
			KernelWindowEvery: time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Install(i, fakeLane, fake.New(fake.Options{Device: i}).Opener()); err != nil {
			t.Fatal(err)
		}
		hubs[i] = h
	}
	// Each hub's thread steps when told to, and lives until the end.
	turns := []chan int{make(chan int), make(chan int)}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, h := range hubs {
		wg.Add(1)
		go func(dev int, h *gpuspans.Hub) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for n := range turns[dev] {
				for step := 0; step < n; step++ {
					h.BeginStep()
					f.GraphLaunch()
					now := fakeNow()
					f.Kernel(uint32(dev), 1, now+10, now+500, "k", 0)
					for fakeNow() < now+300_000 { // 0.3 ms steps: a window every few
					}
				}
				done <- struct{}{}
			}
		}(i, h)
	}
	turn := func(hub, steps int) { turns[hub] <- steps; <-done }
	turn(0, 20) // hub 0 alone: windows
	s0 := gpuspanstest.Snapshot(t, hubs[0])
	if s0.KernelTiming.Windows.Opened < 2 || !s0.KernelTiming.Tracing {
		t.Fatalf("hub 0 alone: %+v", s0.KernelTiming)
	}
	turn(1, 5) // hub 1's first window: refused, for good
	turn(0, 10)
	for i := range turns {
		close(turns[i])
	}
	wg.Wait()
	// Hub 1's window is refused. Hub 0's next one is refused too, unless its
	// window was open while hub 1's thread replayed: then that one is left
	// attached rather than detached beside the replays.
	for i, h := range hubs {
		h.Harvest()
		s := gpuspanstest.Snapshot(t, h)
		gpuspanstest.CheckAccounting(t, &s)
		why := fmt.Sprint(s.KernelTiming.Err)
		leftAttached := i == 0 && errors.Is(s.KernelTiming.Err, backend.ErrLeftAttached) && strings.Contains(why, "replayed 5 CUDA graphs")
		if s.KernelTiming.Tracing || !(leftAttached || strings.Contains(why, "opened on two threads")) {
			t.Errorf("hub %d: %+v, want windows off, naming the two threads", i, s.KernelTiming)
		}
		if n := len(logs[i].Lines()); n != 1 {
			t.Errorf("hub %d logged %q, want one line", i, logs[i].Lines())
		}
		if i == 0 && leftAttached != f.Attached() {
			t.Errorf("hub 0's window left attached: %v, CUPTI attached: %v", leftAttached, f.Attached())
		}
	}
	if f.BadFinalizes() != 0 {
		t.Errorf("%d bad finalizes", f.BadFinalizes())
	}
}

// replayer is another thread replaying CUDA graphs without pause.
type replayer struct {
	tid     int64        // its thread
	replays atomic.Int64 // replays made
	failed  atomic.Int64 // the first failed replay's code
	stop    func()       // ends it and waits for it; the test's cleanup too
}

// startReplayer starts a goroutine, locked to its thread, calling replay
// without pause until stop, and returns once it has replayed once.
func startReplayer(t *testing.T, replay func() int) *replayer {
	r := new(replayer)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan int64, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for ctx.Err() == nil {
			if code := replay(); code != 0 {
				r.failed.CompareAndSwap(0, int64(code))
				started <- cudatest.ThreadID() // in case it never replayed
				return
			}
			if r.replays.Add(1) == 1 {
				started <- cudatest.ThreadID()
			}
		}
	}()
	r.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(r.stop) // no replay outlives the test
	r.tid = <-started
	return r
}

// stepBeside runs n steps of 20 us, a window due every millisecond, each
// replaying the stepping thread's own graph and lasting until r has
// replayed twice, however the two cores are shared. (A thread that stops
// for a whole window and replays during its detach is not seen:
// gpuspans/tracer.h.)
func stepBeside(t *testing.T, h *gpuspans.Hub, f *cudatest.FakeCUPTI, r *replayer, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		h.BeginStep()
		if code := f.GraphLaunch(); code != 0 {
			t.Fatalf("step %d: the stepping thread's replay failed with %d: the CUDA context is lost", i, code)
		}
		now := fakeNow()
		f.Kernel(0, 1, now+10, now+500, "k", 3)
		for k := r.replays.Load(); fakeNow() < now+20_000 || (r.replays.Load() < k+2 && r.failed.Load() == 0 && fakeNow() < now+1e9); {
		}
	}
	r.stop()
	if code := r.failed.Load(); code != 0 {
		t.Fatalf("the other thread's replay failed with %d after %d replays: the CUDA context is lost", code, r.replays.Load())
	}
}

// Another thread replaying CUDA graphs in a tight loop beside auto windows,
// as a second engine thread would: the first window sees its replays, is
// left attached rather than detached (a detach beside them lost the CUDA
// context on an H200), and windows stay off, named in the snapshot, the
// log and a counter. No replay on either thread ever fails.
func TestWindowsBesideAnotherThreadsGraphReplays(t *testing.T) {
	h, f, log := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	if err := h.SetKernelWindows(time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	r := startReplayer(t, f.GraphLaunch)
	stepBeside(t, h, f, r, 2000)
	h.Harvest()
	if n := f.BadFinalizes(); n != 0 {
		t.Errorf("%d finalizes beside another thread's replays", n)
	}
	if !f.Attached() {
		t.Error("CUPTI detached beside another thread's graph replays")
	}
	s := gpuspanstest.Snapshot(t, h)
	gpuspanstest.CheckAccounting(t, &s)
	kt := s.KernelTiming
	if kt.Windows.Opened == 0 || kt.Windows.LeftAttached != 1 || kt.Tracing {
		t.Errorf("windows: %d opened, %d left attached, tracing %v: want windows until one is left attached, then none",
			kt.Windows.Opened, kt.Windows.LeftAttached, kt.Tracing)
	}
	for i := 0; i < 10; i++ {
		time.Sleep(2 * time.Millisecond) // a window due at each step
		h.BeginStep()
	}
	if s2 := gpuspanstest.Snapshot(t, h); s2.KernelTiming.Windows.Opened != kt.Windows.Opened {
		t.Errorf("%d windows opened after one was left attached", s2.KernelTiming.Windows.Opened-kt.Windows.Opened)
	}
	want := fmt.Sprintf("thread %d replayed", r.tid)
	if kt.Err == nil || !errors.Is(kt.Err, backend.ErrLeftAttached) || !strings.Contains(kt.Err.Error(), want) {
		t.Errorf("snapshot's reason %v: want one wrapping ErrLeftAttached and naming %q", kt.Err, want)
	}
	if log.Count(want) != 1 {
		t.Errorf("log names the replaying thread (%q) %d times, want once:\n%s", want, log.Count(want), strings.Join(log.Lines(), "\n"))
	}
	if kt.Windows.Kernels == 0 {
		t.Error("the window's kernels did not land")
	}
}

// Another thread replaying CUDA graphs through the launch guard, each replay
// in flight for 20 us, beside auto windows every millisecond: every window
// opens and detaches without overlapping a replay, none is left attached.
func TestWindowsBesideGuardedGraphReplays(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	if err := h.SetKernelWindows(time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	r := startReplayer(t, func() (code int) {
		cuda.GuardLaunch(func() { code = f.GraphLaunchFor(20 * time.Microsecond) })
		return code
	})
	stepBeside(t, h, f, r, 2000)
	if n := f.BadFinalizes(); n != 0 {
		t.Errorf("%d finalizes overlapped a guarded replay", n)
	}
	s := gpuspanstest.Snapshot(t, h)
	gpuspanstest.CheckAccounting(t, &s)
	w := s.KernelTiming.Windows
	if w.Opened < 10 || w.LeftAttached != 0 || w.Abandoned != 0 || s.KernelTiming.Err != nil {
		t.Errorf("windows: %d opened, %d left attached, %d abandoned, error %v: want at least 10 windows, each detached",
			w.Opened, w.LeftAttached, w.Abandoned, s.KernelTiming.Err)
	}
}

//go:build cgo

package cuda_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
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
// timing mode, device 0 installed on a no-op pool, and the fake CUPTI.
func tracedHub(t *testing.T, mode gpuspans.KernelTiming, every, labels int) (*gpuspans.Hub, *cudatest.FakeCUPTI, *gpuspanstest.Log) {
	t.Helper()
	f := cudatest.UseFakeCUPTI()
	f.SetClockOffset(fakeClockOffset)
	t.Cleanup(cudatest.UseRealCUPTI)
	log := new(gpuspanstest.Log)
	h, err := gpuspans.New(gpuspans.Options{
		Level: gpuspans.LevelKernel, KernelSpanEvery: every, Logf: log.Logf,
		KernelTiming: mode, KernelTracer: cuda.TracerOpener(""), KernelLabels: labels,
		Lanes: []string{"decode"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, fakeLane, fake.NopOpener); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.SetKernelTiming(gpuspans.KernelTimingEvents) })
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

func TestTracerLandsEveryKernelOfArmedStepsOnly(t *testing.T) {
	h, f, log := tracedHub(t, gpuspans.KernelTimingAuto, 4, 0)
	const steps = 16
	recorded := 0
	for i := 1; i <= steps; i++ {
		h.BeginStep()
		h.LaneBegin(0)
		// An engine's hand-wrapped launch: no event pair while tracing, or
		// the kernel would count twice.
		if sp := h.KernelBegin(0x1, fakeKernel); sp != (gpuspans.KernelSpan{}) {
			t.Fatalf("step %d: KernelBegin opened an event pair while the tracer runs", i)
		}
		// Started on the GPU after this step's BeginStep, before the next.
		start := fakeNow()
		for k, name := range []string{"_Z6decodePfi", "triton_poi_fused_add_0"} {
			if f.Kernel(0, 7, start+int64(k), start+int64(k)+int64(k+1)*3000, name, 5) {
				recorded++
			}
		}
		// A kernel on a device nothing installed: not the hub's.
		f.Kernel(3, 1, start, start+500, "_Z5otherv", 0)
		h.LaneEnd(0)
		for fakeNow() < start+10_000 { // the step lasts until its kernels have run
		}
	}
	if want := 2 * steps / 4; recorded != want {
		t.Fatalf("collection on for %d kernels, want %d (armed steps only)", recorded, want)
	}
	// The last armed step is still on: its window closes at the next BeginStep.
	if on, off := f.Calls(); on != steps/4 || off != steps/4-1 {
		t.Errorf("collection switched on %d and off %d times, want %d and %d (once per armed window)", on, off, steps/4, steps/4-1)
	}
	f.Deliver(3) // several buffers
	h.Harvest()
	s := gpuspanstest.Snapshot(t, h)
	gpuspanstest.CheckAccounting(t, &s)
	if !s.KernelTiming.Tracing || s.KernelTiming.Err != nil {
		t.Fatalf("KernelTiming = %+v, want tracing", s.KernelTiming)
	}
	dec := kernelAgg(t, &s, "decode")
	tri := kernelAgg(t, &s, "triton_poi_fused_add_0")
	if dec.Count != steps/4 || tri.Count != steps/4 {
		t.Errorf("decode %d, triton %d spans, want %d each", dec.Count, tri.Count, steps/4)
	}
	if dec.Max != 3*time.Microsecond || tri.Max != 6*time.Microsecond {
		t.Errorf("durations: decode max %v, triton max %v; want 3us and 6us, the GPU's own", dec.Max, tri.Max)
	}
	spans := h.RecentSpans(0, nil)
	var kernels []gpuspans.Span
	for _, sp := range spans {
		if sp.Kind == gpuspans.KindKernel {
			kernels = append(kernels, sp)
		}
	}
	if len(kernels) != 2*steps/4 {
		t.Fatalf("%d kernel spans in the recent ring, want %d", len(kernels), 2*steps/4)
	}
	for i, sp := range kernels {
		if want := uint64(4 * (i/2 + 1)); sp.Step != want {
			t.Errorf("span %d (%s) in step %d, want %d: the armed step it ran in", i, sp.Name, sp.Step, want)
		}
		if sp.Graph != 5 || sp.Stream != 7 || sp.Device != 0 {
			t.Errorf("span %d: graph %d stream %d device %d, want 5, 7, 0", i, sp.Graph, sp.Stream, sp.Device)
		}
		if d := time.Since(time.Unix(0, sp.StartNs)); d < 0 || d > time.Minute {
			t.Errorf("span %d starts %v ago: the tracer's clock was not mapped to Unix time", i, d)
		}
	}
	if n := log.Count("kernel tracer"); n != 0 {
		t.Errorf("logged %d tracer lines, want none: %q", n, log.Lines())
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
		{"profiler present", func(f *cudatest.FakeCUPTI) { f.OtherSubscriber(true) }, backend.ErrTracerBusy, "another client"},
		{"enable refused", func(f *cudatest.FakeCUPTI) { f.FailEnable(27) }, nil, "cuptiActivityEnable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, f, log := tracedHub(t, gpuspans.KernelTimingCUPTI, 1, 0)
			c.setup(f)
			for i := 0; i < 5; i++ {
				h.BeginStep()
				sp := h.KernelBegin(0x1, fakeKernel)
				if i >= 2 && sp == (gpuspans.KernelSpan{}) {
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
			if a := kernelAgg(t, &s, gpuspans.OtherKernel); a.Count < 3 {
				t.Errorf("%d event-pair kernel spans landed after the fallback, want >= 3", a.Count)
			}
		})
	}
}

func TestTracerDropsAreCounted(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	h.BeginStep()
	for i := 0; i < 10; i++ {
		f.Kernel(0, 1, fakeNow(), fakeNow()+100, "k", 0)
	}
	f.Drop(0, 5)
	f.Deliver(4)
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

// A graph kernel whose record starts before the window it ran in carries a
// stale start (CUPTI's, when the host runs ahead): lost, not landed wrong.
func TestTracerStaleStartIsLostNotLanded(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	before := fakeNow()
	h.BeginStep() // the window opens in between
	now := fakeNow()
	f.Kernel(0, 1, before-5_000_000, now+1000, "stale", 9) // "started" 5 ms before its window
	f.Kernel(0, 1, now+10, now+1000, "fresh", 9)
	f.Deliver(10)
	h.Harvest()
	s := gpuspanstest.Snapshot(t, h)
	gpuspanstest.CheckAccounting(t, &s)
	if got := s.Counters.Dropped[gpuspans.DropTracerLost]; got != 1 {
		t.Errorf("tracer_lost = %d, want 1 (the stale record)", got)
	}
	if a := kernelAgg(t, &s, "fresh"); a.Count != 1 {
		t.Errorf("fresh: %d spans, want 1", a.Count)
	}
	for _, n := range kernelNames(&s) {
		if n == "stale" {
			t.Errorf("the stale record was given a label: %v", kernelNames(&s))
		}
	}
}

func TestTracerLabelsHeaviestFirst(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 2)
	if err := h.RegisterKernel(0x99, "registered"); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	now := fakeNow()
	for _, k := range []struct {
		name string
		ns   int64
	}{{"light", 100}, {"heavy", 9000}, {"middle", 5000}, {"registered", 10}} {
		f.Kernel(0, 1, now, now+k.ns, k.name, 0)
	}
	f.Deliver(100)
	h.Harvest()
	s := gpuspanstest.Snapshot(t, h)
	for name, want := range map[string]uint64{"heavy": 1, "middle": 1, "registered": 1, gpuspans.OtherKernel: 1} {
		if a := kernelAgg(t, &s, name); a.Count != want {
			t.Errorf("%s: %d spans, want %d", name, a.Count, want)
		}
	}
	for _, n := range kernelNames(&s) {
		if n == "light" {
			t.Errorf("the lightest name got a label past KernelLabels = 2: %v", kernelNames(&s))
		}
	}
	if s.KernelTiming.Labels != 2 {
		t.Errorf("Labels = %d, want 2", s.KernelTiming.Labels)
	}
}

func TestTracerReleasedAndRetaken(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	h.BeginStep()
	f.Kernel(0, 1, fakeNow(), fakeNow()+100, "before", 0)
	f.Deliver(10)
	// A profiler is about to start: let go of CUPTI. The records so far land.
	if err := h.SetKernelTiming(gpuspans.KernelTimingEvents); err != nil {
		t.Fatal(err)
	}
	if f.Enabled() {
		t.Fatal("collection still on after SetKernelTiming(events)")
	}
	s := gpuspanstest.Snapshot(t, h)
	if a := kernelAgg(t, &s, "before"); a.Count != 1 {
		t.Errorf("the record collected before the release did not land: %d", a.Count)
	}
	// Released for a profiler: no subscriber of ours stands in its way.
	if f.APIExit() {
		t.Error("releasing CUPTI left a subscriber of ours: a profiler could not subscribe")
	}
	// Released for real: another client can open CUPTI now.
	other, err := cuda.OpenTracer("")
	if err != nil {
		t.Fatalf("CUPTI not released: %v", err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if sp := h.KernelBegin(0x1, fakeKernel); sp == (gpuspans.KernelSpan{}) {
		t.Error("no event-pair span at KernelTimingEvents")
	} else {
		h.KernelEnd(sp)
	}
	if err := h.SetKernelTiming(gpuspans.KernelTimingAuto); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if !f.Enabled() {
		t.Error("collection not back on at the armed step after SetKernelTiming(auto)")
	}
	if s := gpuspanstest.Snapshot(t, h); !s.KernelTiming.Tracing {
		t.Errorf("KernelTiming = %+v after retaking", s.KernelTiming)
	}
}

func TestTracerOffBelowKernel(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	h.BeginStep()
	if !f.Enabled() {
		t.Fatal("collection off on an armed step")
	}
	if err := h.SetLevel(gpuspans.LevelStep); err != nil {
		t.Fatal(err)
	}
	if f.Enabled() {
		t.Fatal("collection still on after the level left Kernel")
	}
	h.BeginStep()
	if f.Kernel(0, 1, fakeNow(), fakeNow()+1, "k", 0) {
		t.Error("a kernel at level Step was recorded")
	}
	// Closed, not detached: detaching can break an instrumented graph.
	if f.APIExit() || f.Finalizes() != 0 {
		t.Errorf("CUPTI detached below Kernel: %d finalizes", f.Finalizes())
	}
	if err := h.SetLevel(gpuspans.LevelKernel); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if !f.Enabled() {
		t.Error("collection not back on at the first armed step at Kernel")
	}
	if s := gpuspanstest.Snapshot(t, h); !s.KernelTiming.Tracing || s.KernelTiming.Fallbacks != 0 {
		t.Errorf("KernelTiming = %+v after returning to Kernel", s.KernelTiming)
	}
}

// A detach still pending when the tracer reopens is withdrawn: the open
// keeps CUPTI, and its subscriber would block other clients for good.
func TestTracerReopenWithdrawsPendingDetach(t *testing.T) {
	f := cudatest.UseFakeCUPTI()
	t.Cleanup(cudatest.UseRealCUPTI)
	tr, err := cuda.OpenTracer("")
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if f.APIExit() {
		t.Fatal("Close alone subscribed: a profiler could not take CUPTI")
	}
	if err := tr.Detach(); err != nil {
		t.Fatal(err)
	}
	tr, err = cuda.OpenTracer("")
	if err != nil {
		t.Fatalf("reopen with a detach pending: %v", err)
	}
	if f.APIExit() || f.Finalizes() != 0 {
		t.Error("a withdrawn detach still finalized CUPTI")
	}
	if err := tr.Detach(); err == nil {
		t.Error("Detach of an open tracer succeeded")
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Detach(); err != nil {
		t.Fatal(err)
	}
	if !f.APIExit() || f.Finalizes() != 1 {
		t.Errorf("%d finalizes after the last close and a driver call, want 1", f.Finalizes())
	}
}

func TestTracerReadsNames(t *testing.T) {
	f := cudatest.UseFakeCUPTI()
	t.Cleanup(cudatest.UseRealCUPTI)
	tr, err := cuda.OpenTracer("")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Enable(true); err != nil {
		t.Fatal(err)
	}
	long := "_Z" + "3" + "abc" // a short one, then a name far over the limit
	for _, name := range []string{
		"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
		"triton_poi_fused_add_0",
		long + "v",
		strings.Repeat("x", 300),
		"",
	} {
		f.Kernel(0, 1, 0, 1, name, 0)
	}
	f.Deliver(100)
	recs := make([]backend.KernelRecord, 10)
	n := tr.Read(recs)
	if n != 5 {
		t.Fatalf("read %d records, want 5", n)
	}
	want := []string{
		"at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >",
		"triton_poi_fused_add_0",
		"abc",
		strings.Repeat("x", 124) + "...",
		"?",
	}
	for i := 0; i < n; i++ {
		if got := tr.Name(recs[i].Name); got != want[i] {
			t.Errorf("name %d = %q, want %q", i, got, want[i])
		}
	}
	if got := tr.Name(9999); got != "" {
		t.Errorf("unknown id named %q", got)
	}
}

package gpuspans_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

// windowRig is a hub at Kernel on a fake tracer and a fake clock that each
// step moves by a millisecond; kernels are fed on the hub's clock.
type windowRig struct {
	t      *testing.T
	h      *gpuspans.Hub
	tracer *fake.Tracer
	log    *gpuspanstest.Log
	now    time.Time
	fed    int // kernels the tracer recorded
}

func newWindowRig(t *testing.T, o gpuspans.Options) *windowRig {
	t.Helper()
	r := &windowRig{t: t, tracer: new(fake.Tracer), log: new(gpuspanstest.Log), now: time.Unix(1_700_000_000, 0)}
	o.Level = gpuspans.LevelKernel
	o.Logf = r.log.Logf
	o.Now = func() time.Time { return r.now }
	o.KernelTracer = r.tracer.Opener()
	if o.KernelTiming == gpuspans.KernelTimingEvents {
		o.KernelTiming = gpuspans.KernelTimingAuto
	}
	if o.Lanes == nil {
		o.Lanes = []string{"decode"}
	}
	h, err := gpuspans.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, 1, sim.NopOpener); err != nil {
		t.Fatal(err)
	}
	r.h = h
	return r
}

// step runs one engine step: BeginStep, then two kernels (one replayed from
// a graph) that run within it.
func (r *windowRig) step() {
	r.h.BeginStep()
	ns := r.now.UnixNano()
	for k, g := range []uint32{0, 7} {
		if r.tracer.Kernel(0, 1, ns+int64(10+k*100), ns+int64(90+k*100), fmt.Sprintf("k%d", k), g) {
			r.fed++
		}
	}
	r.now = r.now.Add(time.Millisecond)
}

func (r *windowRig) snapshot() gpuspans.Snapshot {
	r.h.Harvest()
	s := gpuspanstest.Snapshot(r.t, r.h)
	gpuspanstest.CheckAccounting(r.t, &s)
	return s
}

// Windows open at the first step at Kernel, then at the first step a
// period after the last one opened, collect their steps and close: the
// tracer is open only then, and every kernel of their steps lands in its
// step.
func TestKernelWindowsCollectTheirStepsOnly(t *testing.T) {
	r := newWindowRig(t, gpuspans.Options{KernelWindowEvery: 10 * time.Millisecond, KernelWindowSteps: 3})
	openAt := map[uint64]bool{}
	for i := 0; i < 32; i++ {
		before := r.tracer.Counts().Windows
		r.step()
		c := r.tracer.Counts()
		if c.Windows != before {
			openAt[r.h.Step()] = true
		}
		if c.Open != ((r.h.Step()-1)%10 < 3) {
			t.Fatalf("step %d: tracer open %v", r.h.Step(), c.Open)
		}
	}
	if len(openAt) != 4 || !openAt[1] || !openAt[11] || !openAt[21] || !openAt[31] {
		t.Fatalf("windows opened at steps %v, want 1, 11, 21, 31", openAt)
	}
	s := r.snapshot()
	kw := s.KernelTiming.Windows
	if c := r.tracer.Counts(); c.Closes != 3 || c.Misuse != 0 {
		t.Errorf("tracer %+v, want 3 closes (the 4th window still open, at its 2nd step), no misuse", c)
	}
	if kw.Opened != 4 || !kw.Open || kw.Every != 10*time.Millisecond || kw.Steps != 3 {
		t.Errorf("window stats %+v", kw)
	}
	if s.ArmedSteps != 11 {
		t.Errorf("%d armed steps, want 11: the windows' steps", s.ArmedSteps)
	}
	if int(s.Counters.Landed) != r.fed || r.fed != 22 {
		t.Errorf("landed %d of %d kernels fed (want 22)", s.Counters.Landed, r.fed)
	}
	for _, sp := range r.h.RecentSpans(0, nil) {
		if sp.Kind == gpuspans.KindKernel && (sp.Step-1)%10 >= 3 {
			t.Errorf("kernel %s landed in step %d, outside every window", sp.Name, sp.Step)
		}
	}
	// Finished windows: 3 closed, each 3 steps of 2 kernels.
	if kw.Kernels != 18 || kw.KernelsPerWindow[3] != 3 || kw.Last.Seq != 3 || kw.Last.Kernels != 6 || kw.Last.Steps != 3 || kw.Last.FirstStep != 21 {
		t.Errorf("kernels %d, per window %v, last %+v; want 18, three in the <=8 bucket, window 3 of 6 kernels in 3 steps from step 21", kw.Kernels, kw.KernelsPerWindow, kw.Last)
	}
	if kw.OpenTime.Count != 4 || kw.CloseTime.Count != 3 {
		t.Errorf("open and close timed %d and %d times, want 4 and 3", kw.OpenTime.Count, kw.CloseTime.Count)
	}
	if n := len(r.log.Lines()); n != 0 {
		t.Errorf("logged %q", r.log.Lines())
	}
}

// A request opens a window at the next step whatever the period; one that
// arrives while a window is open is answered by it.
func TestKernelWindowOnDemand(t *testing.T) {
	r := newWindowRig(t, gpuspans.Options{KernelWindowEvery: time.Hour})
	r.step() // the first window, at once
	r.step() // closes it
	for i := 0; i < 5; i++ {
		r.step()
	}
	if n := r.tracer.Counts().Windows; n != 1 {
		t.Fatalf("%d windows before any request, want 1", n)
	}
	if err := r.h.RequestKernelWindow(); err != nil {
		t.Fatal(err)
	}
	r.step()
	if c := r.tracer.Counts(); c.Windows != 2 || !c.Open {
		t.Fatalf("after a request: %+v, want a second window open", c)
	}
	if err := r.h.RequestKernelWindow(); err != nil {
		t.Fatal(err)
	}
	r.step() // closes the window that answered the request
	r.step()
	if c := r.tracer.Counts(); c.Windows != 2 || c.Open {
		t.Errorf("a request made during a window opened another: %+v", c)
	}
	if err := r.h.SetKernelTiming(gpuspans.KernelTimingEvents); err != nil {
		t.Fatal(err)
	}
	if err := r.h.RequestKernelWindow(); err == nil || !strings.Contains(err.Error(), "kernel timing is events") {
		t.Errorf("a request at events: %v", err)
	}
}

// Events, a level below Kernel (Off too) and CloseKernelTracer end the
// window at the next step, on the stepping thread, and the tracer opens
// again when asked.
func TestKernelWindowReleased(t *testing.T) {
	r := newWindowRig(t, gpuspans.Options{KernelWindowEvery: time.Millisecond, KernelWindowSteps: 100})
	r.step()
	for _, c := range []struct {
		name    string
		release func() error
		retake  func() error
	}{
		{"events", func() error { return r.h.SetKernelTiming(gpuspans.KernelTimingEvents) },
			func() error { return r.h.SetKernelTiming(gpuspans.KernelTimingAuto) }},
		{"level step", func() error { return r.h.SetLevel(gpuspans.LevelStep) },
			func() error { return r.h.SetLevel(gpuspans.LevelKernel) }},
		{"level off", func() error { return r.h.SetLevel(gpuspans.LevelOff) },
			func() error { return r.h.SetLevel(gpuspans.LevelKernel) }},
	} {
		if !r.tracer.Counts().Open {
			t.Fatalf("%s: no window open before the release", c.name)
		}
		if err := c.release(); err != nil {
			t.Fatal(err)
		}
		if !r.tracer.Counts().Open {
			t.Fatalf("%s: the window closed off the stepping thread", c.name)
		}
		r.step()
		if r.tracer.Counts().Open {
			t.Fatalf("%s: the window is still open after the next step", c.name)
		}
		if err := c.retake(); err != nil {
			t.Fatal(err)
		}
		r.step()
	}
	if err := r.h.CloseKernelTracer(); err != nil {
		t.Fatal(err)
	}
	if c := r.tracer.Counts(); c.Open || c.Closes != 4 || c.Misuse != 0 {
		t.Errorf("after CloseKernelTracer: %+v, want closed 4 times, no misuse", c)
	}
	if r.h.KernelTiming() != gpuspans.KernelTimingEvents {
		t.Errorf("kernel timing %v after CloseKernelTracer, want events", r.h.KernelTiming())
	}
	r.snapshot()
}

// While another client holds CUPTI, windows are skipped (counted, logged
// once) and kernel spans come from event pairs; a window opens again a
// period later once it is free.
func TestKernelWindowBusyFallsBackUntilFree(t *testing.T) {
	r := newWindowRig(t, gpuspans.Options{KernelWindowEvery: 5 * time.Millisecond, KernelSpanEvery: 1})
	r.tracer.FailOpen(fmt.Errorf("a profiler: %w", backend.ErrTracerBusy))
	for i := 0; i < 20; i++ {
		r.step()
		if sp := r.h.KernelBegin(1, 1); sp == (gpuspans.KernelSpan{}) {
			t.Fatalf("step %d: no event pair while CUPTI is busy", i)
		} else {
			r.h.KernelEnd(sp)
		}
	}
	s := r.snapshot()
	if kw := s.KernelTiming.Windows; kw.Skipped != 4 || kw.Opened != 0 || s.KernelTiming.Tracing || !errors.Is(s.KernelTiming.Err, backend.ErrTracerBusy) {
		t.Errorf("while busy: %+v, windows %+v; want 4 skipped", s.KernelTiming, kw)
	}
	if n := r.log.Count("kernel window skipped"); n != 1 {
		t.Errorf("logged the skip %d times: %q", n, r.log.Lines())
	}
	r.tracer.FailOpen(nil)
	for i := 0; i < 4; i++ { // steps 21-24: one window, at the first a period after the last skip
		r.step()
	}
	s = r.snapshot()
	if kw := s.KernelTiming.Windows; kw.Opened != 1 || !s.KernelTiming.Tracing || s.KernelTiming.Err != nil {
		t.Errorf("once free: %+v, windows %+v; want one window", s.KernelTiming, kw)
	}
}

// A window whose close is refused (steps on another thread) keeps
// collecting, and closes at a later step on its thread; refused for
// maxCloseRefusals steps in a row it is abandoned and windows stop.
func TestKernelWindowWrongThread(t *testing.T) {
	r := newWindowRig(t, gpuspans.Options{KernelWindowEvery: time.Millisecond})
	r.step()
	r.tracer.RefuseCloses(3)
	for i := 0; i < 4; i++ {
		r.step()
	}
	s := r.snapshot()
	if c := r.tracer.Counts(); c.Closes != 1 || c.Abandons != 0 {
		t.Fatalf("after 3 refusals: %+v, want one close", c)
	}
	if s.KernelTiming.Windows.Last.Steps != 4 || int(s.Counters.Landed) != r.fed {
		t.Errorf("the refused window collected %d steps (want 4); landed %d of %d", s.KernelTiming.Windows.Last.Steps, s.Counters.Landed, r.fed)
	}
	r.step() // the next window
	r.tracer.RefuseCloses(1000)
	for i := 0; i < 70; i++ {
		r.step()
	}
	s = r.snapshot()
	c := r.tracer.Counts()
	if c.Abandons != 1 || c.Open || s.KernelTiming.Windows.Abandoned != 1 || s.KernelTiming.Tracing {
		t.Fatalf("after 70 refusals: tracer %+v, status %+v", c, s.KernelTiming)
	}
	if n := r.log.Count("runtime.LockOSThread"); n != 1 {
		t.Errorf("the abandon was logged %d times: %q", n, r.log.Lines())
	}
	windows := c.Windows
	for i := 0; i < 10; i++ {
		r.step()
	}
	if r.tracer.Counts().Windows != windows {
		t.Error("a window opened after one was abandoned")
	}
	if int(r.snapshot().Counters.Landed) != r.fed {
		t.Error("records of the abandoned window did not all land")
	}
}

// Attached: the tracer opens once and stays open, collection following
// KernelSpanEvery's arming, as before kernel windows; switching back to
// auto closes it.
func TestKernelTimingAttached(t *testing.T) {
	r := newWindowRig(t, gpuspans.Options{KernelTiming: gpuspans.KernelTimingAttached, KernelSpanEvery: 4})
	for i := 0; i < 16; i++ {
		r.step()
		if c := r.tracer.Counts(); !c.Open || c.On != (r.h.Step()%4 == 0) {
			t.Fatalf("step %d: %+v", r.h.Step(), c)
		}
	}
	s := r.snapshot()
	if r.fed != 8 || int(s.Counters.Landed) != 8 || s.ArmedSteps != 4 || s.KernelTiming.Windows.Opened != 0 {
		t.Errorf("fed %d, landed %d, armed %d, windows %d; want 8, 8, 4, 0", r.fed, s.Counters.Landed, s.ArmedSteps, s.KernelTiming.Windows.Opened)
	}
	if err := r.h.SetKernelTiming(gpuspans.KernelTimingAuto); err != nil {
		t.Fatal(err)
	}
	r.step()
	if c := r.tracer.Counts(); c.Attached != 1 || c.Closes != 1 || c.Windows != 1 || c.Misuse != 0 {
		t.Errorf("after switching to auto: %+v, want the attached tracer closed and a window open", c)
	}
}

// A tracer that fails (its Read panics, or its Stats: the drops would go
// uncounted) is given up at the next step, closed on the stepping thread.
func TestKernelTracerFailingHarvestGivenUp(t *testing.T) {
	for _, what := range []string{"Read", "Stats"} {
		log := new(gpuspanstest.Log)
		tr := &failing{what: what}
		h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelTiming: gpuspans.KernelTimingAuto,
			KernelTracer: func(backend.TracerMode) (backend.KernelTracer, error) { tr.opens++; return tr, nil },
			Logf:         log.Logf, KernelSpanEvery: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Install(0, 1, sim.NopOpener); err != nil {
			t.Fatal(err)
		}
		h.BeginStep()
		h.Harvest()
		h.BeginStep()
		for i := 0; i < 3; i++ {
			h.Harvest()
			h.BeginStep()
		}
		s := gpuspanstest.Snapshot(t, h)
		if tr.closes != 1 || tr.opens != 1 || s.KernelTiming.Tracing || s.KernelTiming.Fallbacks != 1 ||
			!strings.Contains(fmt.Sprint(s.KernelTiming.Err), what) {
			t.Errorf("%s panics: opens %d closes %d, status %+v", what, tr.opens, tr.closes, s.KernelTiming)
		}
		if sp := h.KernelBegin(1, 1); sp == (gpuspans.KernelSpan{}) {
			t.Errorf("%s panics: no event pair after the fallback", what)
		} else {
			h.KernelEnd(sp)
		}
	}
}

type failing struct {
	what          string
	opens, closes int
}

func (f *failing) Enable(bool) error { return nil }
func (f *failing) Read([]backend.KernelRecord) int {
	if f.what == "Read" {
		panic("Read")
	}
	return 0
}
func (f *failing) Name(uint32) string { return "" }
func (f *failing) ClockOffset() int64 { return 0 }
func (f *failing) Stats() backend.TracerStats {
	if f.what == "Stats" {
		panic("Stats")
	}
	return backend.TracerStats{}
}
func (f *failing) Close() error   { f.closes++; return nil }
func (f *failing) Abandon() error { return f.Close() }

// A tracer whose Read always fills the buffer cannot hold a harvest for
// good: each harvest reads a bounded number of batches and counts the cut.
func TestKernelTracerReadsBoundedPerHarvest(t *testing.T) {
	tr := new(endless)
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelTiming: gpuspans.KernelTimingAuto,
		KernelTracer: func(backend.TracerMode) (backend.KernelTracer, error) { return tr, nil }, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, 1, sim.NopOpener); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	done := make(chan struct{})
	go func() {
		h.Harvest()
		h.Harvest()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a harvest of an endless tracer did not return")
	}
	s := gpuspanstest.Snapshot(t, h)
	if s.KernelTiming.ReadsCut != 3 || tr.reads != 48 {
		t.Errorf("reads cut %d, reads %d; want 3 harvests (the step's and two) cut after 16 reads each", s.KernelTiming.ReadsCut, tr.reads)
	}
	gpuspanstest.CheckAccounting(t, &s)
}

type endless struct{ reads int }

func (e *endless) Enable(bool) error { return nil }
func (e *endless) Read(dst []backend.KernelRecord) int {
	e.reads++
	for i := range dst {
		dst[i] = backend.KernelRecord{Device: 5} // a device nothing installed: dropped unseen
	}
	return len(dst)
}
func (e *endless) Name(uint32) string         { return "" }
func (e *endless) ClockOffset() int64         { return 0 }
func (e *endless) Stats() backend.TracerStats { return backend.TracerStats{} }
func (e *endless) Close() error               { return nil }
func (e *endless) Abandon() error             { return nil }

func TestKernelWindowOptions(t *testing.T) {
	open := new(fake.Tracer).Opener()
	for _, o := range []gpuspans.Options{
		{KernelWindowEvery: -time.Second},
		{KernelWindowEvery: time.Microsecond},
		{KernelWindowEvery: 25 * time.Hour},
		{KernelWindowSteps: -1},
		{KernelWindowSteps: gpuspans.MaxKernelWindowSteps + 1},
		{KernelTiming: gpuspans.KernelTimingAttached},
	} {
		if _, err := gpuspans.New(o); err == nil {
			t.Errorf("New(%+v): no error", o)
		}
	}
	h, err := gpuspans.New(gpuspans.Options{KernelTracer: open})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetKernelWindows(0, 0); err != nil {
		t.Error(err)
	}
	if err := h.SetKernelWindows(time.Nanosecond, 1); err == nil || !strings.Contains(err.Error(), "every is 1ns") {
		t.Errorf("SetKernelWindows(1ns): %v", err)
	}
	if err := h.SetKernelWindows(time.Second, 5000); err == nil || !strings.Contains(err.Error(), "steps is 5000") {
		t.Errorf("SetKernelWindows(steps 5000): %v", err)
	}
	s := h.KernelTimingStatus()
	if s.Windows.Every != gpuspans.DefaultKernelWindowEvery || s.Windows.Steps != gpuspans.DefaultKernelWindowSteps {
		t.Errorf("defaults: %+v", s.Windows)
	}
	if k, err := gpuspans.ParseKernelTiming(" Attached "); err != nil || k != gpuspans.KernelTimingAttached {
		t.Errorf("ParseKernelTiming(attached) = %v, %v", k, err)
	}
}

// A tracer that could not open is tried again when the mode is set again,
// also to the same mode (a fix deployed, a profiler gone).
func TestKernelWindowFallbackRetriedWhenAsked(t *testing.T) {
	r := newWindowRig(t, gpuspans.Options{KernelWindowEvery: time.Millisecond})
	r.tracer.FailOpen(errors.New("no CUPTI yet"))
	for i := 0; i < 5; i++ {
		r.step()
	}
	if s := r.snapshot(); s.KernelTiming.Fallbacks != 1 || r.tracer.Counts().Windows != 0 {
		t.Fatalf("after a failed open: %+v", s.KernelTiming)
	}
	r.tracer.FailOpen(nil)
	r.step()
	if r.tracer.Counts().Windows != 0 {
		t.Fatal("the tracer was tried again without being asked")
	}
	if err := r.h.SetKernelTiming(gpuspans.KernelTimingAuto); err != nil {
		t.Fatal(err)
	}
	r.step()
	if c := r.tracer.Counts(); c.Windows != 1 || !c.Open {
		t.Errorf("after SetKernelTiming(auto) again: %+v", c)
	}
}

// Another thread left inside the launch guard: a window due is skipped
// (counted apart, with the hint to pair enter and exit, logged once); an
// open window's closes are refused, and it collects on until maxGuardHeld
// (2 s) of refusals abandon it, not a count of steps (the tracer refuses
// at once while the guard stays held, so steps come fast).
func TestKernelWindowGuardHeld(t *testing.T) {
	r := newWindowRig(t, gpuspans.Options{KernelWindowEvery: 5 * time.Millisecond})
	r.tracer.FailOpen(fmt.Errorf("held: %w", backend.ErrGuardHeld))
	for i := 0; i < 20; i++ {
		r.step()
	}
	s := r.snapshot()
	if kw := s.KernelTiming.Windows; kw.Skipped != 4 || kw.SkippedGuard != 4 || !errors.Is(s.KernelTiming.Err, backend.ErrTracerBusy) {
		t.Errorf("guard held at the opens: windows %+v, err %v; want 4 skipped for the guard", kw, s.KernelTiming.Err)
	}
	if n := r.log.Count("gs_launch_guard_exit on the same thread"); n != 1 {
		t.Errorf("logged the guard's skip %d times: %q", n, r.log.Lines())
	}
	r.tracer.FailOpen(nil)
	for r.h.Snapshot().KernelTiming.Windows.Opened == 0 {
		r.step()
	}
	r.tracer.HoldGuard(1 << 30)
	for i := 0; i < 1999; i++ { // 1 ms a step: refused for 1.998 s
		r.step()
	}
	if c := r.tracer.Counts(); c.Abandons != 0 || !c.Open {
		t.Fatalf("after 1,999 refused closes in 2 s: %+v, want the window open", c)
	}
	r.step()
	r.step()
	s = r.snapshot()
	if c := r.tracer.Counts(); c.Abandons != 1 || s.KernelTiming.Windows.Abandoned != 1 {
		t.Errorf("after 2 s of refused closes: %+v, windows %+v; want it abandoned", c, s.KernelTiming.Windows)
	}
	if !strings.Contains(fmt.Sprint(s.KernelTiming.Err), "held the launch guard") {
		t.Errorf("abandoned for %v, want the launch guard named", s.KernelTiming.Err)
	}
}

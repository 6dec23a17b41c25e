package gpuspans_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

// Every traced kernel carries the step it ran in, in a window of many
// steps and attached, also when the records arrive hundreds of steps late.
func TestTracedKernelsCarryTheirStep(t *testing.T) {
	for _, c := range []struct {
		every, steps int
		mode         gpuspans.KernelTiming
	}{{1, 9, gpuspans.KernelTimingAttached}, {3, 9, gpuspans.KernelTimingAttached}, {1, 300, gpuspans.KernelTimingAttached}, {1, 300, gpuspans.KernelTimingAuto}} {
		every := c.every
		now := time.Unix(1_700_000_000, 0)
		tracer := new(fake.Tracer)
		h, err := gpuspans.New(gpuspans.Options{
			Level: gpuspans.LevelKernel, KernelSpanEvery: every, Logf: t.Logf,
			Now:          func() time.Time { return now },
			KernelTiming: c.mode, KernelTracer: tracer.Opener(), KernelWindowSteps: gpuspans.MaxKernelWindowSteps,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Install(0, 1, sim.NopOpener); err != nil {
			t.Fatal(err)
		}
		want := map[uint64]bool{}
		for i := 0; i < c.steps; i++ {
			h.BeginStep()
			ns := now.UnixNano()
			if tracer.Kernel(0, 1, ns+10, ns+500, "k", 0) {
				want[h.Step()] = true
			}
			now = now.Add(time.Millisecond)
		}
		// A window's kernels reach the recent ring after its close.
		if err := h.CloseKernelTracer(); err != nil {
			t.Fatal(err)
		}
		h.Harvest()
		got := map[uint64]bool{}
		for _, sp := range h.RecentSpans(0, nil) {
			if sp.Kind == gpuspans.KindKernel {
				got[sp.Step] = true
			}
		}
		if len(want) != c.steps/every || len(got) != len(want) {
			t.Fatalf("every %d: kernels recorded in steps %v, landed in steps %v", every, want, got)
		}
		for s := range want {
			if !got[s] {
				t.Errorf("every %d: step %d's kernel landed in another step: %v", every, s, got)
			}
		}
		s := gpuspanstest.Snapshot(t, h)
		gpuspanstest.CheckAccounting(t, &s)
	}
}

// A tracer that panics or fails is given up for event pairs; the hub goes
// on.
func TestTracerFailuresFallBack(t *testing.T) {
	for name, open := range map[string]backend.TracerOpener{
		"error":  func(backend.TracerMode) (backend.KernelTracer, error) { return nil, errors.New("no CUPTI here") },
		"panic":  func(backend.TracerMode) (backend.KernelTracer, error) { panic("tracer opener bug") },
		"nil":    func(backend.TracerMode) (backend.KernelTracer, error) { return nil, nil },
		"broken": func(backend.TracerMode) (backend.KernelTracer, error) { return panicky{}, nil },
	} {
		log := new(gpuspanstest.Log)
		h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Logf: log.Logf,
			KernelTiming: gpuspans.KernelTimingAuto, KernelTracer: open})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Install(0, 1, sim.NopOpener); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			h.BeginStep()
			sp := h.KernelBegin(1, 1)
			h.KernelEnd(sp)
		}
		h.Harvest()
		s := gpuspanstest.Snapshot(t, h)
		if s.KernelTiming.Tracing || s.KernelTiming.Err == nil || s.KernelTiming.Fallbacks != 1 {
			t.Errorf("%s: KernelTiming %+v, want a fallback with its reason", name, s.KernelTiming)
		}
		if log.Count("kernel spans from event pairs") != 1 {
			t.Errorf("%s: log %q", name, log.Lines())
		}
		gpuspanstest.CheckAccounting(t, &s)
	}
}

// panicky is a tracer whose every method panics.
type panicky struct{}

func (panicky) Enable(bool) error               { panic("Enable") }
func (panicky) Read([]backend.KernelRecord) int { panic("Read") }
func (panicky) Name(uint32) string              { panic("Name") }
func (panicky) ClockOffset() int64              { panic("ClockOffset") }
func (panicky) Stats() backend.TracerStats      { panic("Stats") }
func (panicky) Close() error                    { panic("Close") }
func (panicky) Abandon() error                  { panic("Abandon") }

func TestKernelTimingOptions(t *testing.T) {
	if _, err := gpuspans.New(gpuspans.Options{KernelTiming: gpuspans.KernelTimingAuto}); err == nil {
		t.Error("KernelTiming auto without a KernelTracer: no error")
	}
	if _, err := gpuspans.New(gpuspans.Options{KernelTiming: 9}); err == nil {
		t.Error("KernelTiming 9: no error")
	}
	if _, err := gpuspans.New(gpuspans.Options{KernelLabels: -1}); err == nil {
		t.Error("KernelLabels -1: no error")
	}
	for _, s := range []string{"events", " AUTO ", "cupti"} {
		if _, err := gpuspans.ParseKernelTiming(s); err != nil {
			t.Errorf("ParseKernelTiming(%q): %v", s, err)
		}
	}
	if _, err := gpuspans.ParseKernelTiming("nvtx"); err == nil {
		t.Error(`ParseKernelTiming("nvtx"): no error`)
	}
	h, err := gpuspans.New(gpuspans.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetKernelTiming(gpuspans.KernelTimingAuto); err == nil {
		t.Error("SetKernelTiming(auto) on a hub without a tracer: no error")
	}
}

// kernelAggregate returns the snapshot's aggregate of the kernel called
// name on device 0, or nil.
func kernelAggregate(s *gpuspans.Snapshot, name string) *gpuspans.Aggregate {
	for i := range s.Kernels {
		if s.Kernels[i].Device == 0 && s.Kernels[i].Name == name {
			return &s.Kernels[i]
		}
	}
	return nil
}

// A kernel whose record starts before the step it ran in carries a stale
// start (a graph replayed while the host ran ahead): lost, not landed wrong,
// and given no label.
func TestTracedStaleStartIsLostNotLanded(t *testing.T) {
	r := newWindowRig(t, gpuspans.Options{})
	before := r.now.UnixNano()
	r.now = r.now.Add(time.Millisecond)
	r.h.BeginStep() // the window opens here
	now := r.now.UnixNano()
	r.tracer.Kernel(0, 1, before-5_000_000, now+1000, "stale", 9) // "started" 5 ms before its step
	r.tracer.Kernel(0, 1, now+10, now+1000, "fresh", 9)
	r.now = r.now.Add(time.Millisecond)
	r.h.BeginStep()
	s := r.snapshot()
	if got := s.Counters.Dropped[gpuspans.DropTracerLost]; got != 1 {
		t.Errorf("tracer_lost = %d, want 1 (the stale record)", got)
	}
	if a := kernelAggregate(&s, "fresh"); a == nil || a.Count != 1 {
		t.Errorf("fresh: %+v, want 1 span", a)
	}
	if a := kernelAggregate(&s, "stale"); a != nil {
		t.Errorf("the stale record was given a label: %+v", a)
	}
}

// Traced names compete for Options.KernelLabels heaviest first; registered
// names keep theirs, and the rest land in OtherKernel.
func TestTracedLabelsHeaviestFirst(t *testing.T) {
	r := newWindowRig(t, gpuspans.Options{KernelLabels: 2})
	if err := r.h.RegisterKernel(0x99, "registered"); err != nil {
		t.Fatal(err)
	}
	r.h.BeginStep()
	now := r.now.UnixNano()
	for _, k := range []struct {
		name string
		ns   int64
	}{{"light", 100}, {"heavy", 9000}, {"middle", 5000}, {"registered", 10}} {
		r.tracer.Kernel(0, 1, now+10, now+10+k.ns, k.name, 0)
	}
	r.now = r.now.Add(time.Millisecond)
	r.h.BeginStep()
	s := r.snapshot()
	for name, want := range map[string]uint64{"heavy": 1, "middle": 1, "registered": 1, gpuspans.OtherKernel: 1} {
		if a := kernelAggregate(&s, name); a == nil || a.Count != want {
			t.Errorf("%s: %+v, want %d spans", name, a, want)
		}
	}
	if a := kernelAggregate(&s, "light"); a != nil {
		t.Errorf("the lightest name got a label past KernelLabels = 2: %+v", a)
	}
	if s.KernelTiming.Labels != 2 {
		t.Errorf("Labels = %d, want 2", s.KernelTiming.Labels)
	}
}

// A traced kernel's name reaches logs, the page and the metrics: the
// characters a terminal acts on, or that reorder text, come out as "?".
func TestTracedNamesSafeForTerminals(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	tracer := new(fake.Tracer)
	h, err := gpuspans.New(gpuspans.Options{
		Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Logf: t.Logf, Now: func() time.Time { return now },
		KernelTiming: gpuspans.KernelTimingAttached, KernelTracer: tracer.Opener(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, 1, sim.NopOpener); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		h.BeginStep()
		ns := now.UnixNano()
		tracer.Kernel(0, 1, ns+10, ns+500, "a\u009b31mred", 0)
		tracer.Kernel(0, 1, ns+600, ns+900, "gemm\u202enoisrev", 0)
		now = now.Add(time.Millisecond)
	}
	if err := h.CloseKernelTracer(); err != nil {
		t.Fatal(err)
	}
	h.Harvest()
	names := map[string]bool{}
	for _, sp := range h.RecentSpans(0, nil) {
		if sp.Kind == gpuspans.KindKernel {
			names[sp.Name] = true
		}
	}
	if !names["a?31mred"] || !names["gemm?noisrev"] || len(names) != 2 {
		t.Fatalf("traced names %v, want a?31mred and gemm?noisrev", names)
	}
}

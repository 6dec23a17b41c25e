package gpuspans

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
)

func inFlight(int) (backend.SpanState, int64) { return backend.InFlight, 0 }

func TestReinstallWhileInFlight(t *testing.T) {
	h, old := kernelHub(t, Options{}, fake.Options{CloseBusy: 1})
	old.SetOutcome(inFlight)
	h.KernelEnd(h.KernelBegin(1, kernelStream)) // ended, in flight on the GPU
	open := h.KernelBegin(2, kernelStream)      // still open at the replacement
	h.LaneBegin(0)                              // open lane span: abandoned at retirement

	repl := newFake(t, fake.Options{})
	if err := h.Install(0, laneStream, repl.Opener()); err != nil {
		t.Fatal(err)
	}
	s := snap(t, h)
	if len(s.Devices) != 2 || s.Devices[0].State != DeviceRetiring || s.Devices[1].State != DevicePending {
		t.Fatalf("devices %+v", s.Devices)
	}
	if s.Counters.Dropped[DropRetired] != 1 || s.Counters.InFlight != 2 {
		t.Fatalf("counters %+v", s.Counters)
	}
	// New spans go to the new recorder once it opens; the old one takes none.
	h.BeginStep()
	h.KernelEnd(h.KernelBegin(3, kernelStream))
	if c := old.Calls(); c.RecordBegin != 3 || c.Close != 0 {
		t.Fatalf("old pool %+v", c)
	}
	if c := repl.Calls(); c.RecordBegin != 1 {
		t.Fatalf("new pool %+v", c)
	}
	// The token from before the replacement still ends its span, on the
	// old pool, which stays open for it.
	h.KernelEnd(open)
	h.BeginStep()
	if c := old.Calls(); c.RecordEnd != 2 || c.Close != 0 {
		t.Fatalf("old pool closed or missed the end: %+v", c)
	}
	// The spans land; the pool closes after one refusal (ErrBusy).
	old.SetOutcome(nil)
	h.BeginStep()
	if c := old.Calls(); c.Close != 1 || old.Closed() {
		t.Fatalf("first close: %+v", c)
	}
	h.BeginStep()
	if !old.Closed() {
		t.Fatalf("old pool not closed: %+v", old.Calls())
	}
	// A stale token now does nothing: no call on the closed pool (the fake
	// fails the test on one).
	h.KernelEnd(open)
	h.BeginStep()
	s = snap(t, h)
	if len(s.Devices) != 1 || s.Devices[0].State != DeviceOpen {
		t.Errorf("devices %+v", s.Devices)
	}
	if c := s.Counters; c.Landed != 3 || c.BadEnd != 1 || c.InFlight != 0 {
		t.Errorf("counters %+v", c)
	}
}

func TestUninstall(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	h.KernelEnd(h.KernelBegin(1, kernelStream))
	h.Uninstall(0)
	h.Uninstall(0)  // nothing left: no-op
	h.Uninstall(-1) // out of range: no-op
	if sp := h.KernelBegin(1, kernelStream); sp != (KernelSpan{}) {
		t.Error("span on an uninstalled device")
	}
	if f.Closed() {
		t.Fatal("closed with a span in flight")
	}
	h.BeginStep()
	if !f.Closed() {
		t.Fatal("not closed after its span landed")
	}
	s := snap(t, h)
	if len(s.Devices) != 0 || s.Counters.Landed != 1 || s.Counters.Begun != 1 {
		t.Errorf("snapshot %+v", s)
	}
	if atomic.LoadInt32(&h.pools) != 0 {
		t.Errorf("pools %d", atomic.LoadInt32(&h.pools))
	}
}

func TestReplacePendingNeverOpens(t *testing.T) {
	h := newHub(t, Options{})
	first := newFake(t, fake.Options{})
	second := newFake(t, fake.Options{})
	if err := h.Install(0, 1, first.Opener()); err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, 2, second.Opener()); err != nil {
		t.Fatal(err)
	}
	if err := h.SetLevel(LevelKernel); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if first.Calls().Total() != 0 || second.Calls().Opens != 1 {
		t.Errorf("first %+v, second %+v", first.Calls(), second.Calls())
	}
	if s := snap(t, h); len(s.Devices) != 1 || s.Devices[0].Stream != 2 {
		t.Errorf("devices %+v", s.Devices)
	}
}

func TestOpenerError(t *testing.T) {
	log := NewLog()
	h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 1, Logf: log.Logf})
	f := newFake(t, fake.Options{OpenErr: fmt.Errorf("dlopen libcuda.so.1: %w", backend.ErrNoDriver)})
	if err := h.Install(0, laneStream, f.Opener()); err != nil {
		t.Fatal(err)
	}
	exercise(h, 10)
	if c := f.Calls(); c.Opens != 1 || c.Total() != 1 {
		t.Errorf("calls %+v; want only one open", c)
	}
	if n := log.Count("GPU spans off on device 0"); n != 1 {
		t.Errorf("logged %d times: %q", n, log.Lines())
	}
	s := snap(t, h)
	if s.Counters.InstallFailures != 1 || s.Devices[0].State != DeviceFailed || !errors.Is(s.Devices[0].Err, backend.ErrNoDriver) {
		t.Errorf("snapshot %+v", s)
	}
	// A wrong pool is refused too.
	wrong := newFake(t, fake.Options{Device: 5})
	if err := h.Install(0, laneStream, wrong.Opener()); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if s := snap(t, h); s.Devices[0].State != DeviceFailed || s.Counters.InstallFailures != 2 || !wrong.Closed() {
		t.Errorf("wrong device pool: %+v", s.Devices)
	}
}

func TestRecordErrors(t *testing.T) {
	log := NewLog()
	h, f := kernelHub(t, Options{Logf: log.Logf}, fake.Options{})
	boom := errors.New("boom")
	f.SetRecordError(func(op fake.Op, slot int, s backend.Stream) error {
		if op == fake.OpRecordEnd || slot%2 == 0 {
			return &backend.DriverError{Op: "cuEventRecord", Code: 1, Kind: nil}
		}
		return boom
	})
	for i := 0; i < 4; i++ {
		h.KernelEnd(h.KernelBegin(1, kernelStream))
	}
	f.SetRecordError(func(op fake.Op, slot int, s backend.Stream) error {
		if op == fake.OpRecordEnd {
			return boom
		}
		return nil
	})
	h.KernelEnd(h.KernelBegin(1, kernelStream)) // begin ok, end fails
	f.SetRecordError(nil)
	h.KernelEnd(h.KernelBegin(1, kernelStream))
	h.Harvest()
	s := snap(t, h)
	if c := s.Counters; c.Errored != 5 || c.Landed != 1 || c.InFlight != 0 {
		t.Errorf("counters %+v", c)
	}
	if n := log.Count("span error on device 0"); n != 1 {
		t.Errorf("logged %d times: %q", n, log.Lines())
	}
	if s.Devices[0].State != DeviceOpen {
		t.Errorf("a plain error changed the state to %v", s.Devices[0].State)
	}
}

func TestHarvestFailedItems(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	f.SetOutcome(func(slot int) (backend.SpanState, int64) {
		if slot < 3 {
			return backend.Failed, 0
		}
		return backend.Done, 100
	})
	for i := 0; i < 5; i++ {
		h.KernelEnd(h.KernelBegin(1, kernelStream))
	}
	h.Harvest()
	if c := snap(t, h).Counters; c.Errored != 3 || c.Landed != 2 || c.InFlight != 0 {
		t.Errorf("counters %+v", c)
	}
	// Failed slots are free again.
	for i := 0; i < DefaultSlots; i++ {
		h.KernelEnd(h.KernelBegin(1, kernelStream))
	}
	if c := snap(t, h).Counters; c.Dropped[DropSlotBusy] != 0 {
		t.Errorf("failed slots stayed busy: %+v", c)
	}
}

func TestStickyError(t *testing.T) {
	log := NewLog()
	// Calls: RecordBegin, RecordEnd for the first span; the third call (the
	// second span's RecordBegin) is sticky.
	h, f := kernelHub(t, Options{Logf: log.Logf}, fake.Options{StickyAfter: 2})
	h.KernelEnd(h.KernelBegin(1, kernelStream))
	open := h.KernelBegin(1, kernelStream)
	if open != (KernelSpan{}) {
		t.Fatal("span opened through a sticky error")
	}
	h.LaneBegin(0)
	h.LaneEnd(0)
	exercise(h, 5)
	if c := f.Calls(); c.CallsAfterSticky != 0 || c.Harvest != 0 {
		t.Fatalf("calls after the sticky error: %+v", c)
	}
	s := snap(t, h)
	if s.Devices[0].State != DeviceDead || !errors.Is(s.Devices[0].Err, backend.ErrSticky) {
		t.Fatalf("device %+v", s.Devices[0])
	}
	// The closed span is lost with the context; the failed begin errored.
	if c := s.Counters; c.StickyDisables != 1 || c.Errored != 2 || c.InFlight != 0 || c.Landed != 0 {
		t.Errorf("counters %+v", c)
	}
	if n := log.Count("until it is installed again"); n != 1 {
		t.Errorf("logged %d times: %q", n, log.Lines())
	}
	// Installing again closes the dead pool and starts afresh.
	fresh := newFake(t, fake.Options{})
	if err := h.Install(0, laneStream, fresh.Opener()); err != nil {
		t.Fatal(err)
	}
	if !f.Closed() {
		t.Error("dead pool not closed on reinstall")
	}
	h.BeginStep()
	h.KernelEnd(h.KernelBegin(1, kernelStream))
	h.Harvest()
	if c := snap(t, h).Counters; c.Landed != 1 {
		t.Errorf("after reinstall: %+v", c)
	}
}

func TestStickyHarvest(t *testing.T) {
	// Two record calls succeed; the harvest is the sticky call.
	h, f := kernelHub(t, Options{}, fake.Options{StickyAfter: 2})
	h.KernelEnd(h.KernelBegin(1, kernelStream))
	h.Harvest()
	h.Harvest()
	s := snap(t, h)
	if s.Devices[0].State != DeviceDead || s.Counters.Errored != 1 || f.Calls().Harvest != 1 {
		t.Errorf("device %+v counters %+v calls %+v", s.Devices[0], s.Counters, f.Calls())
	}
}

func TestStickyOpenSpanEnds(t *testing.T) {
	// A span open when another span's call turns sticky ends without a call.
	h, f := kernelHub(t, Options{}, fake.Options{StickyAfter: 1})
	open := h.KernelBegin(1, kernelStream)                          // call 1
	if sp := h.KernelBegin(1, kernelStream); sp != (KernelSpan{}) { // call 2: sticky
		t.Fatal("span through a sticky error")
	}
	before := f.Calls()
	h.KernelEnd(open)
	if d := f.Calls().Sub(before); d.Total() != 0 {
		t.Errorf("end on a dead recorder called %+v", d)
	}
	if c := snap(t, h).Counters; c.Errored != 2 || c.InFlight != 0 || c.BadEnd != 0 {
		t.Errorf("counters %+v", c)
	}
}

// TestBeginOnRetiredRecorderBacksOut plays a span path that passed its
// status check just before a replacing Install and claims a slot after it:
// it must back out without a backend call. (TestKernelBeginRacesRetirement
// runs the same race for real, but cannot force this interleaving.)
func TestBeginOnRetiredRecorderBacksOut(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	f.SetOutcome(inFlight)
	h.KernelEnd(h.KernelBegin(1, kernelStream)) // keeps the retired pool open
	r := h.set.Load().current[0]
	h.Uninstall(0)
	before := f.Calls()
	if _, ok := r.begin(KindKernel, 1, kernelStream); ok {
		t.Fatal("a span began on a retired recorder")
	}
	if d := f.Calls().Sub(before); d.Total() != 0 {
		t.Errorf("backend calls %+v", d)
	}
	if c := snap(t, h).Counters; c.Dropped[DropRetired] != 1 {
		t.Errorf("counters %+v", c)
	}
	// Once the pool is closed the recorder is sealed: a late hand-out is
	// not even counted, as the hub's total no longer includes the recorder.
	f.SetOutcome(nil)
	h.Harvest()
	if !f.Closed() {
		t.Fatal("not closed")
	}
	if _, ok := r.begin(KindKernel, 1, kernelStream); ok {
		t.Fatal("a span began on a finished recorder")
	}
	if c := snap(t, h).Counters; c.Begun != 2 || c.Landed != 1 || c.Dropped[DropRetired] != 1 {
		t.Errorf("counters %+v", c)
	}
}

func TestHarvestFailingAsAWholeKeepsSpans(t *testing.T) {
	log := NewLog()
	h, f := kernelHub(t, Options{Logf: log.Logf}, fake.Options{})
	for i := 0; i < 5; i++ {
		h.KernelEnd(h.KernelBegin(1, kernelStream))
	}
	f.SetHarvestError(errors.New("capture mode switch failed"))
	h.Harvest()
	h.Harvest()
	// The pool answered nothing: the spans wait, nothing is counted lost.
	if c := snap(t, h).Counters; c.Errored != 0 || c.Landed != 0 || c.InFlight != 5 {
		t.Errorf("after failed harvests: %+v", c)
	}
	if n := log.Count("capture mode switch failed"); n != 1 {
		t.Errorf("logged %d times: %q", n, log.Lines())
	}
	f.SetHarvestError(nil)
	h.Harvest()
	if c := snap(t, h).Counters; c.Errored != 0 || c.Landed != 5 || c.InFlight != 0 {
		t.Errorf("after the pool recovered: %+v", c)
	}
}

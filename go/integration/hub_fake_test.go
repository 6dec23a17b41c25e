//go:build cgo

package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

// Fault injection end to end: a hub on the CUDA binding and the C++ core,
// with the fake driver (go/cuda/cudatest) playing the faults. Each test
// checks what a serving binary would see (the device's state, one log line,
// the counters balancing) and that the core leaks nothing and destroys no
// event in flight. The fake is process-wide: none of these runs in
// parallel. CI also runs them under -race (go test -race ./...).

const fakeSlots = 16

// fakeHub returns a hub at Kernel with kernel spans on every step, on the
// fake driver, and the opener that installs a pool on device 0 and keeps it
// in *pool for the test's Force calls.
func fakeHub(t *testing.T) (*gpuspans.Hub, *cudatest.FakeDriver, *gpuspanstest.Log, func() backend.Opener, **cuda.Pool) {
	t.Helper()
	f := cudatest.UseFakeDriver()
	t.Cleanup(cudatest.UseRealDriver)
	log := new(gpuspanstest.Log)
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Slots: fakeSlots, Logf: log.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var pool *cuda.Pool
	opener := func() backend.Opener {
		return func(int) (backend.Pool, error) {
			p, err := cuda.Open(0, fakeSlots)
			if err != nil {
				return nil, err
			}
			pool = p
			return p, nil
		}
	}
	return h, f, log, opener, &pool
}

// steps runs n engine steps with a lane span and a kernel span each.
func steps(h *gpuspans.Hub, n int) {
	for i := 0; i < n; i++ {
		h.BeginStep()
		h.LaneBegin(0)
		h.KernelEnd(h.KernelBegin(1, fakeKernel))
		h.LaneEnd(0)
	}
}

// drainAndCheck uninstalls device 0, lets the fake GPU finish, harvests until
// the pool is closed, and checks that the core left nothing behind.
func drainAndCheck(t *testing.T, h *gpuspans.Hub, f *cudatest.FakeDriver) {
	t.Helper()
	h.Uninstall(0)
	f.Advance(time.Hour)
	for i := 0; i < 3; i++ {
		h.Harvest()
	}
	if s := gpuspanstest.Snapshot(t, h); len(s.Devices) != 0 {
		t.Errorf("devices left after draining: %+v", s.Devices)
	}
	c := f.Counters()
	if c.LiveEvents != 0 || c.LiveStreams != 0 || c.RetainedContexts != 0 || c.CtxPushes != c.CtxPops || c.DestroysInFlight != 0 {
		t.Errorf("the core left %+v", c)
	}
}

// TestHubFakeDriverLoadFaults: whatever stops the pool from opening, the
// device turns failed with the reason, one log line and one count; span
// calls do nothing, and nothing is left allocated in the core.
func TestHubFakeDriverLoadFaults(t *testing.T) {
	for _, c := range []struct {
		name   string
		fault  func(*cudatest.FakeDriver)
		reason string
		kind   error
	}{
		{"no driver library", func(f *cudatest.FakeDriver) { f.FailOpen(true) }, "libcuda.so.1", backend.ErrNoDriver},
		{"missing symbol", func(f *cudatest.FakeDriver) { f.DropSymbol("cuEventQuery") }, "cuEventQuery", backend.ErrNoDriver},
		{"cuInit fails", func(f *cudatest.FakeDriver) { f.InitResult(100) }, "CUDA_ERROR_NO_DEVICE", backend.ErrNoDriver},
		{"pool creation fails at event 1", func(f *cudatest.FakeDriver) { f.FailEventCreate(1, 2) }, "event 1 of 36", nil},
		{"pool creation fails at event 17", func(f *cudatest.FakeDriver) { f.FailEventCreate(17, 2) }, "event 17 of 36", nil},
		{"pool creation fails at the last anchor", func(f *cudatest.FakeDriver) { f.FailEventCreate(36, 2) }, "event 36 of 36", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, f, log, opener, _ := fakeHub(t)
			c.fault(f)
			if err := h.Install(0, fakeLane, opener()); err != nil {
				t.Fatal(err)
			}
			steps(h, 20)
			s := gpuspanstest.Snapshot(t, h)
			d := s.Devices[0]
			if d.State != gpuspans.DeviceFailed || d.Err == nil || !strings.Contains(d.Err.Error(), c.reason) {
				t.Fatalf("device %+v; want failed naming %q", d, c.reason)
			}
			if c.kind != nil && !errors.Is(d.Err, c.kind) {
				t.Errorf("device error %v does not match %v", d.Err, c.kind)
			}
			if s.Counters.InstallFailures != 1 || s.Counters.Begun != 0 || s.Step != 20 {
				t.Errorf("counters %+v step %d", s.Counters, s.Step)
			}
			if n := log.Count("GPU spans off on device 0"); n != 1 {
				t.Errorf("logged %d times: %q", n, log.Lines())
			}
			drainAndCheck(t, h, f)
		})
	}
}

// TestHubFakeDriverRecordFailsMidSpan: an end record that fails leaves the
// span errored (logged once) and its slot reusable.
func TestHubFakeDriverRecordFailsMidSpan(t *testing.T) {
	h, f, log, opener, _ := fakeHub(t)
	if err := h.Install(0, fakeLane, opener()); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	for i := 0; i < 3; i++ {
		sp := h.KernelBegin(1, fakeKernel)
		f.RecordResult(1, 1) // the end record: CUDA_ERROR_INVALID_VALUE
		h.KernelEnd(sp)
	}
	steps(h, 2*fakeSlots) // every slot, the failed ones included, is used again
	h.Harvest()
	s := gpuspanstest.Snapshot(t, h)
	if c := s.Counters; c.Errored != 3 || c.Landed != 2*2*fakeSlots || c.DroppedTotal() != 0 || c.InFlight != 0 {
		t.Errorf("counters %+v", c)
	}
	if s.Devices[0].State != gpuspans.DeviceOpen {
		t.Errorf("device %+v", s.Devices[0])
	}
	if n := log.Count("span error on device 0"); n != 1 {
		t.Errorf("logged %d times: %q", n, log.Lines())
	}
	drainAndCheck(t, h, f)
}

// TestHubFakeDriverQueryError: a harvest query or elapsed-time call that
// fails for one span errors that span only.
func TestHubFakeDriverQueryError(t *testing.T) {
	h, f, _, opener, pool := fakeHub(t)
	if err := h.Install(0, fakeLane, opener()); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	for i := 0; i < 4; i++ {
		h.KernelEnd(h.KernelBegin(1, fakeKernel)) // ring positions 0..3 are slots 0..3
	}
	f.Force(*pool, 1, true, cudatest.FakeElapsed, 400, 1)
	f.Force(*pool, 2, true, cudatest.FakeQuery|cudatest.FakeElapsed, 400, -1)
	h.Harvest()
	s := gpuspanstest.Snapshot(t, h)
	if c := s.Counters; c.Errored != 2 || c.Landed != 2 || c.InFlight != 0 || c.StickyDisables != 0 {
		t.Errorf("counters %+v", c)
	}
	f.Force(*pool, 2, true, cudatest.FakeQuery|cudatest.FakeElapsed, 0, 0)
	drainAndCheck(t, h, f)
}

// TestHubFakeDriverSticky: after a sticky error the recorder turns itself
// off, says why once, counts it, and makes no driver call until installed
// again; the re-install closes the dead pool and spans come back.
func TestHubFakeDriverSticky(t *testing.T) {
	h, f, log, opener, _ := fakeHub(t)
	if err := h.Install(0, fakeLane, opener()); err != nil {
		t.Fatal(err)
	}
	steps(h, 5)
	h.Harvest()
	open := h.KernelBegin(1, fakeKernel)
	f.StreamWork(fakeKernel, time.Millisecond) // a span in flight at the fault
	ended := h.KernelBegin(1, fakeKernel)
	h.KernelEnd(ended)
	f.SetSticky(700)
	h.LaneBegin(0) // the call that meets the fault
	calls := f.Counters().DriverCalls
	h.KernelEnd(open)
	steps(h, 50)
	if got := f.Counters().DriverCalls - calls; got != 0 {
		t.Errorf("%d driver calls after the sticky error", got)
	}
	s := gpuspanstest.Snapshot(t, h)
	d := s.Devices[0]
	if d.State != gpuspans.DeviceDead || !errors.Is(d.Err, backend.ErrSticky) || !strings.Contains(d.Err.Error(), "700") {
		t.Fatalf("device %+v", d)
	}
	// Landed: 5 steps of two spans. Errored: the lane begin that met the
	// fault, the open span ended after it, the ended one lost with the
	// context.
	if c := s.Counters; c.StickyDisables != 1 || c.Errored != 3 || c.Landed != 10 || c.InFlight != 0 {
		t.Errorf("counters %+v", c)
	}
	if n := log.Count("until it is installed again"); n != 1 {
		t.Errorf("logged %d times: %q", n, log.Lines())
	}
	// Installed again (after, say, a device reset: the fake's context is
	// good again). The dead pool is released without queries.
	f.SetSticky(0)
	queries := f.Counters().EventQueries
	if err := h.Install(0, fakeLane, opener()); err != nil {
		t.Fatal(err)
	}
	if got := f.Counters().EventQueries; got != queries {
		t.Errorf("closing the dead pool made %d queries", got-queries)
	}
	steps(h, 5)
	f.Advance(time.Hour)
	h.Harvest()
	s = gpuspanstest.Snapshot(t, h)
	if len(s.Devices) != 1 || s.Devices[0].State != gpuspans.DeviceOpen || s.Counters.Landed != 20 {
		t.Errorf("after re-install: devices %+v counters %+v", s.Devices, s.Counters)
	}
	// The dead pool's two events in flight at the fault were released with
	// it, by design: its context runs nothing more.
	if c := f.Counters(); c.DestroysInFlight != 2 {
		t.Errorf("destroys in flight %d, want the dead pool's 2", c.DestroysInFlight)
	}
	f.ResetCounters()
	drainAndCheck(t, h, f)
}

// TestHubFakeDriverReinstallWhileInFlight: a re-install while spans are in
// flight retires the old pool but destroys none of its events until every
// one has completed; the old install's open token still ends and lands.
func TestHubFakeDriverReinstallWhileInFlight(t *testing.T) {
	h, f, _, opener, _ := fakeHub(t)
	if err := h.Install(0, fakeLane, opener()); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	perPool := f.Counters().LiveEvents
	f.StreamWork(fakeKernel, 10*time.Millisecond)
	h.KernelEnd(h.KernelBegin(1, fakeKernel)) // in flight until 10 ms
	open := h.KernelBegin(2, fakeKernel)      // open across the re-install
	h.LaneBegin(0)                            // open lane span: abandoned
	if err := h.Install(0, fakeLane, opener()); err != nil {
		t.Fatal(err)
	}
	steps(h, 3) // opens the new pool; the old one stays
	h.KernelEnd(open)
	for ms := 0; ms < 10; ms++ {
		h.BeginStep()
		if c := f.Counters(); c.LiveEvents != 2*perPool || c.EventDestroys != 0 {
			t.Fatalf("at %d ms the old pool is gone: %+v", ms, c)
		}
		f.Advance(time.Millisecond)
	}
	h.BeginStep() // lands the old pool's spans and closes it
	h.BeginStep()
	c := f.Counters()
	if c.LiveEvents != perPool || c.DestroysInFlight != 0 {
		t.Errorf("after the old spans completed: %+v", c)
	}
	s := gpuspanstest.Snapshot(t, h)
	if len(s.Devices) != 1 || s.Devices[0].State != gpuspans.DeviceOpen {
		t.Errorf("devices %+v", s.Devices)
	}
	// Landed: the two old kernel spans and three steps of two spans.
	if c := s.Counters; c.Landed != 2+6 || c.Dropped[gpuspans.DropRetired] != 1 || c.BadEnd != 0 {
		t.Errorf("counters %+v", c)
	}
	h.KernelEnd(open) // stale now: counted, no call
	if c := gpuspanstest.Snapshot(t, h).Counters; c.BadEnd != 1 {
		t.Errorf("counters %+v", c)
	}
	drainAndCheck(t, h, f)
}

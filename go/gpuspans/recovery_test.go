package gpuspans

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
)

// panickyPool is a fake pool whose method op panics, every time.
type panickyPool struct {
	*fake.Pool
	op string
}

func (p *panickyPool) boom(op string) {
	if p.op == op {
		panic(fmt.Sprintf("bug in %s", op))
	}
}

func (p *panickyPool) Device() int  { p.boom("Device"); return p.Pool.Device() }
func (p *panickyPool) Slots() int   { p.boom("Slots"); return p.Pool.Slots() }
func (p *panickyPool) Close() error { p.boom("Close"); return p.Pool.Close() }
func (p *panickyPool) Harvest(it []backend.HarvestItem) error {
	p.boom("Harvest")
	return p.Pool.Harvest(it)
}
func (p *panickyPool) RecordBegin(slot int, s backend.Stream) error {
	p.boom("RecordBegin")
	return p.Pool.RecordBegin(slot, s)
}
func (p *panickyPool) RecordEnd(slot int, s backend.Stream) error {
	p.boom("RecordEnd")
	return p.Pool.RecordEnd(slot, s)
}

// withinASecond fails t unless f returns within a second: a call that would
// block on a harvest lock left held.
func withinASecond(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatalf("%s blocked: the harvest lock was left held", what)
	}
}

func TestPoolPanics(t *testing.T) {
	for _, c := range []struct {
		op    string
		state DeviceState
	}{
		{"Device", DeviceFailed},
		{"Slots", DeviceFailed},
		{"RecordBegin", DeviceDead},
		{"RecordEnd", DeviceDead},
		{"Harvest", DeviceDead},
		{"Close", DeviceOpen}, // Close runs only once the recorder is retired
	} {
		t.Run(c.op, func(t *testing.T) {
			log := NewLog()
			h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 1, Logf: log.Logf})
			p := &panickyPool{Pool: newFake(t, fake.Options{}), op: c.op}
			if err := h.Install(0, laneStream, func(int) (backend.Pool, error) { return p, nil }); err != nil {
				t.Fatal(err)
			}
			// Every serving call returns normally.
			exercise(h, 5)
			s := snap(t, h)
			if s.Devices[0].State != c.state {
				t.Errorf("device %+v, want %v", s.Devices[0], c.state)
			}
			switch c.state {
			case DeviceFailed:
				if s.Counters.InstallFailures != 1 || s.Counters.PoolPanics != 0 {
					t.Errorf("counters %+v", s.Counters)
				}
			case DeviceDead:
				if s.Counters.PoolPanics != 1 || s.Counters.StickyDisables != 0 || !errors.Is(s.Devices[0].Err, errPoolPanicked) {
					t.Errorf("counters %+v, device %+v", s.Counters, s.Devices[0])
				}
			}
			if c.state != DeviceOpen {
				if n := log.Count("bug in " + c.op); n != 1 {
					t.Errorf("logged %d times: %q", n, log.Lines())
				}
			}
			// Retire it: Close panics for "Close", and the pool is forgotten.
			withinASecond(t, "Install", func() {
				if err := h.Install(0, laneStream, newFake(t, fake.Options{}).Opener()); err != nil {
					t.Error(err)
				}
			})
			exercise(h, 5)
			withinASecond(t, "Snapshot", func() { snap(t, h) })
			withinASecond(t, "RecentSpans", func() { h.RecentSpans(0, nil) })
			s = snap(t, h)
			if len(s.Devices) != 1 || s.Devices[0].State != DeviceOpen || s.Counters.Landed == 0 {
				t.Errorf("after re-install: %+v", s)
			}
			if c.op == "Close" && log.Count("bug in Close") != 1 {
				t.Errorf("Close's panic not logged once: %q", log.Lines())
			}
		})
	}
}

func TestLeakedKernelSpansAreReclaimed(t *testing.T) {
	log := NewLog()
	h, _ := kernelHub(t, Options{Slots: 8, Logf: log.Logf}, fake.Options{})
	var lost []KernelSpan
	for i := 0; i < 8; i++ {
		lost = append(lost, h.KernelBegin(1, kernelStream)) // an exception path: never ended
	}
	step := func() {
		h.BeginStep()
		h.KernelEnd(h.KernelBegin(1, kernelStream))
	}
	for i := 0; i < LeakSteps; i++ {
		step()
	}
	if c := snap(t, h).Counters; c.Dropped[DropLeaked] != 0 || c.Landed != 0 || c.Dropped[DropSlotBusy] != LeakSteps {
		t.Fatalf("before the bound: %+v", c)
	}
	for i := 0; i < 10; i++ {
		step()
	}
	s := snap(t, h)
	if c := s.Counters; c.Dropped[DropLeaked] != 8 || c.Landed < 8 || c.InFlight > 1 {
		t.Fatalf("telemetry did not recover: %+v", c)
	}
	if n := log.Count("left open for"); n != 1 {
		t.Errorf("logged %d times: %q", n, log.Lines())
	}
	// A late end of a reclaimed span is a bad end and touches nothing.
	h.KernelEnd(lost[0])
	if c := snap(t, h).Counters; c.BadEnd != 1 || c.Dropped[DropLeaked] != 8 {
		t.Errorf("after a late end: %+v", c)
	}
}

func TestLeakedLaneSpanIsReclaimed(t *testing.T) {
	h, _ := kernelHub(t, Options{}, fake.Options{})
	h.LaneBegin(0) // never ended
	for i := 0; i <= LeakSteps+1; i++ {
		h.BeginStep()
		h.LaneBegin(0)
	}
	// The last LaneBegin opened a new span once the leaked one was gone.
	c := snap(t, h).Counters
	if c.Dropped[DropLeaked] != 1 || c.InFlight != 1 || c.LaneAlreadyOpen > LeakSteps+1 {
		t.Fatalf("lane span not reclaimed: %+v", c)
	}
	h.LaneEnd(0)
	h.BeginStep()
	if c := snap(t, h).Counters; c.Landed != 1 || c.InFlight != 0 {
		t.Errorf("after reclaim: %+v", c)
	}
}

// A span lost before the level drops to Off is reclaimed by Off steps too
// (the step counter stands still at Off, the leak clock does not), so the
// harvests that an open pool makes Off steps do stop finding it open.
func TestLeakedSpanIsReclaimedAtOff(t *testing.T) {
	h, _ := kernelHub(t, Options{}, fake.Options{})
	h.KernelBegin(1, kernelStream) // never ended
	if err := h.SetLevel(LevelOff); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= LeakSteps+1; i++ {
		h.BeginStep()
	}
	if c := snap(t, h).Counters; c.Dropped[DropLeaked] != 1 || c.InFlight != 0 {
		t.Errorf("after %d Off steps: %+v", LeakSteps+2, c)
	}
}

func TestLeakedSpanLetsRetiredPoolClose(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	h.KernelBegin(1, kernelStream) // never ended
	h.Uninstall(0)
	if err := h.SetLevel(LevelStep); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= LeakSteps+1; i++ {
		h.BeginStep()
	}
	s := snap(t, h)
	if !f.Closed() || len(s.Devices) != 0 || s.Counters.Dropped[DropLeaked] != 1 {
		t.Errorf("closed %v, snapshot %+v", f.Closed(), s)
	}
}

func TestBusyRetiredPoolsAreBounded(t *testing.T) {
	log := NewLog()
	h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 1, Logf: log.Logf})
	const installs = 40
	var pools []*fake.Pool
	for i := 0; i < installs; i++ {
		f := newFake(t, fake.Options{Slots: 64, CloseBusy: 1 << 40})
		pools = append(pools, f)
		if err := h.Install(0, laneStream, f.Opener()); err != nil {
			t.Fatal(err)
		}
		h.BeginStep()
		h.KernelEnd(h.KernelBegin(1, kernelStream))
		h.BeginStep()
	}
	s := snap(t, h)
	if len(s.Devices) != MaxBusyRetired+1 || s.Counters.AbandonedPools != installs-1-MaxBusyRetired {
		t.Errorf("%d devices, %d abandoned", len(s.Devices), s.Counters.AbandonedPools)
	}
	if n := log.Count("giving up on closing"); n != installs-1-MaxBusyRetired {
		t.Errorf("logged %d times", n)
	}
	if s.Counters.Landed != installs {
		t.Errorf("counters %+v", s.Counters)
	}
	// The ones kept are the newest.
	if got := pools[installs-2].Calls().Close; got == 0 {
		t.Errorf("the newest retired pool was never asked to close")
	}
}

func TestHarvestFailuresAreCounted(t *testing.T) {
	h, f := kernelHub(t, Options{}, fake.Options{})
	h.KernelEnd(h.KernelBegin(1, kernelStream))
	f.SetHarvestError(errors.New("capture mode switch failed"))
	h.Harvest()
	h.Harvest()
	if c := snap(t, h).Counters; c.HarvestFailures != 2 || c.InFlight != 1 {
		t.Errorf("counters %+v", c)
	}
	f.SetHarvestError(nil)
	h.Harvest()
	if c := snap(t, h).Counters; c.HarvestFailures != 2 || c.Landed != 1 {
		t.Errorf("counters %+v", c)
	}
}

package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

var t0 = time.Unix(1_700_000_000, 0)

func newPool(t *testing.T, slots int) (*GPU, *Clock, backend.Pool) {
	t.Helper()
	c := NewClock(t0)
	g := New(Options{Device: 2, Now: c.Now})
	p, err := g.Opener()(slots)
	if err != nil {
		t.Fatal(err)
	}
	return g, c, p
}

func harvest(t *testing.T, p backend.Pool, slots ...int) []backend.HarvestItem {
	t.Helper()
	items := make([]backend.HarvestItem, len(slots))
	for i, s := range slots {
		items[i] = backend.HarvestItem{Slot: uint32(s), WantStart: 1}
	}
	if err := p.Harvest(items); err != nil {
		t.Fatal(err)
	}
	return items
}

func TestQueueTiming(t *testing.T) {
	g, c, p := newPool(t, 4)
	if p.Device() != 2 || p.Slots() != 4 {
		t.Fatalf("device %d slots %d", p.Device(), p.Slots())
	}
	s := g.NewStream()
	other := g.NewStream()
	if s == other || s == 0 {
		t.Fatalf("streams %d %d", s, other)
	}
	// Slot 0 times two launches queued back to back; slot 1 the second only.
	must(t, p.RecordBegin(0, s))
	g.Launch(s, 2*time.Millisecond)
	must(t, p.RecordBegin(1, s)) // reached when the first launch ends
	g.Launch(s, 3*time.Millisecond)
	must(t, p.RecordEnd(0, s))
	must(t, p.RecordEnd(1, s))
	// Another stream is not held up.
	must(t, p.RecordBegin(2, other))
	g.Launch(other, time.Millisecond)
	must(t, p.RecordEnd(2, other))

	c.Advance(time.Millisecond)
	got := harvest(t, p, 0, 1, 2)
	if got[0].State != backend.InFlight || got[1].State != backend.InFlight || got[2].State != backend.Done {
		t.Fatalf("at 1ms: %+v", got)
	}
	if got[2].DurationNs != int64(time.Millisecond) || got[2].StartNs != t0.UnixNano() {
		t.Errorf("other stream: %+v", got[2])
	}
	c.Advance(4 * time.Millisecond)
	got = harvest(t, p, 0, 1)
	if got[0].State != backend.Done || got[0].DurationNs != int64(5*time.Millisecond) || got[0].StartNs != t0.UnixNano() {
		t.Errorf("slot 0: %+v", got[0])
	}
	if got[1].State != backend.Done || got[1].DurationNs != int64(3*time.Millisecond) ||
		got[1].StartNs != t0.Add(2*time.Millisecond).UnixNano() {
		t.Errorf("slot 1: %+v", got[1])
	}
	// An idle stream's events are reached at once.
	must(t, p.RecordBegin(3, s))
	must(t, p.RecordEnd(3, s))
	if got := harvest(t, p, 3); got[0].State != backend.Done || got[0].DurationNs != 0 {
		t.Errorf("idle: %+v", got[0])
	}
}

func TestCapture(t *testing.T) {
	g, c, p := newPool(t, 2)
	s := g.NewStream()
	g.BeginCapture(s)
	if err := p.RecordBegin(0, s); !errors.Is(err, backend.ErrCapturing) {
		t.Errorf("record while capturing: %v", err)
	}
	g.Launch(s, time.Hour) // captured: runs nothing
	g.EndCapture(s)
	must(t, p.RecordBegin(0, s))
	must(t, p.RecordEnd(0, s))
	if got := harvest(t, p, 0); got[0].State != backend.Done {
		t.Errorf("after capture: %+v (the captured launch ran)", got[0])
	}
	c.Advance(time.Second)
}

func TestFailuresAndClose(t *testing.T) {
	g, c, p := newPool(t, 2)
	for _, n := range []int{0, backend.MaxSlots + 1} {
		if _, err := g.Opener()(n); !errors.Is(err, backend.ErrBadSlot) {
			t.Errorf("Opener(%d): %v", n, err)
		}
	}
	if err := p.RecordBegin(2, 0); !errors.Is(err, backend.ErrBadSlot) {
		t.Errorf("slot out of range: %v", err)
	}
	got := harvest(t, p, 0, 7)
	if got[0].State != backend.Failed || got[0].Code == 0 || got[1].State != backend.Failed {
		t.Errorf("unrecorded and out of range: %+v", got)
	}
	s := g.NewStream()
	must(t, p.RecordBegin(0, s))
	g.Launch(s, time.Second)
	must(t, p.RecordEnd(0, s))
	if err := p.Close(); !errors.Is(err, backend.ErrBusy) {
		t.Fatalf("Close in flight: %v", err)
	}
	c.Advance(time.Second)
	must(t, p.Close())
	for name, err := range map[string]error{
		"RecordBegin": p.RecordBegin(0, s),
		"Harvest":     p.Harvest(nil),
		"Close":       p.Close(),
	} {
		if err == nil {
			t.Errorf("%s after Close succeeded", name)
		}
	}
}

// A simulated device's identity has a real one's formats, marked simulated.
func TestIdentity(t *testing.T) {
	_, _, p := newPool(t, 1)
	want := backend.Identity{
		UUID: "GPU-51a1a7ed-0000-0000-0000-000000000002", PCIBusID: "00000000:82:00.0",
		Name: "gpuspans simulated GPU", Driver: "13.0",
	}
	if id := p.(backend.Identifier).Identity(); id != want {
		t.Errorf("Identity() = %+v, want %+v", id, want)
	}
}

func TestClock(t *testing.T) {
	c := NewClock(t0)
	c.Advance(time.Minute)
	if got := c.Now(); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("Now = %v", got)
	}
	if g := New(Options{}); g.now == nil {
		t.Error("no default clock")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The tracer records each launch call with its kernels, one correlation a
// call (a graph's kernels share its call's), and copies, on the GPU's clock.
func TestTracerRecordsLaunchesAndCopies(t *testing.T) {
	c := NewClock(t0)
	tr := NewTracer()
	g := New(Options{Device: 1, Now: c.Now, Tracer: tr})
	if _, err := tr.Opener()(backend.TracerWindow); err != nil {
		t.Fatal(err)
	}
	s := g.NewStream()
	g.LaunchKernel(s, 10*time.Microsecond, "a", 0)
	g.Copy(s, 5*time.Microsecond, false)
	c.Advance(40 * time.Microsecond) // the host stalls: the GPU runs dry
	g.LaunchGraph(s, 7, []GraphKernel{{"b", 3 * time.Microsecond}, {"c", 4 * time.Microsecond}})
	g.Copy(s, time.Microsecond, true)
	recs := make([]backend.KernelRecord, 16)
	recs = recs[:tr.Read(recs)]
	now := t0.UnixNano()
	us := int64(time.Microsecond)
	want := []struct {
		kind        backend.RecordKind
		name        string
		start, end  int64
		corr, graph uint32
	}{
		{backend.RecordLaunch, "", now, now, 1, 0},
		{backend.RecordKernel, "a", now, now + 10*us, 1, 0},
		{backend.RecordMemcpy, "", now + 10*us, now + 15*us, 0, 0},
		{backend.RecordLaunch, "", now + 40*us, now + 40*us, 3, 7},
		{backend.RecordKernel, "b", now + 40*us, now + 43*us, 3, 7},
		{backend.RecordKernel, "c", now + 43*us, now + 47*us, 3, 7},
		{backend.RecordMemset, "", now + 47*us, now + 48*us, 0, 0},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(want), recs)
	}
	for i, w := range want {
		r := recs[i]
		if r.Kind != w.kind || tr.Name(r.Name) != w.name || r.StartNs != w.start || r.EndNs != w.end || r.Correlation != w.corr || r.Graph != w.graph {
			t.Errorf("record %d: %+v (name %q), want %+v", i, r, tr.Name(r.Name), w)
		}
		if r.Kind == backend.RecordLaunch && (r.Device != 0 || r.Stream != 0 || r.Thread == 0) {
			t.Errorf("launch call %d: %+v, want device and stream 0 and a thread", i, r)
		}
		if r.Kind != backend.RecordLaunch && (r.Device != 1 || r.Stream != uint32(s)) {
			t.Errorf("record %d: %+v, want device 1 and stream %d", i, r, s)
		}
	}
}

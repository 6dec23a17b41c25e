package fake

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
)

func TestCountsAndOutcomes(t *testing.T) {
	p := New(Options{Device: 1, Slots: 4, Errorf: t.Errorf})
	pool, err := p.Opener()(0)
	if err != nil || pool != backend.Pool(p) {
		t.Fatalf("Opener: %v, %v", pool, err)
	}
	if pool.Device() != 1 || pool.Slots() != 4 {
		t.Fatal("device or slots")
	}
	for slot := 0; slot < 3; slot++ {
		must(t, p.RecordBegin(slot, 9))
		must(t, p.RecordEnd(slot, 9))
	}
	p.SetOutcome(func(slot int) (backend.SpanState, int64) {
		return []backend.SpanState{backend.Done, backend.InFlight, backend.Failed}[slot], 42
	})
	items := []backend.HarvestItem{{Slot: 0}, {Slot: 1}, {Slot: 2}}
	must(t, p.Harvest(items))
	if items[0].State != backend.Done || items[0].DurationNs != 42 || items[1].State != backend.InFlight ||
		items[2].State != backend.Failed || items[2].Code == 0 {
		t.Errorf("items %+v", items)
	}
	p.SetOutcome(nil)
	items = items[1:2] // the in-flight one again
	must(t, p.Harvest(items))
	if items[0].State != backend.Done || items[0].DurationNs != DefaultDurationNs {
		t.Errorf("default outcome %+v", items[0])
	}
	want := Calls{Opens: 1, Device: 1, Slots: 1, RecordBegin: 3, RecordEnd: 3, Harvest: 2, Items: 4}
	if got := p.Calls(); got != want {
		t.Errorf("calls %+v\nwant %+v", got, want)
	}
	if got := p.Calls().Sub(want); got != (Calls{}) || want.Total() != 11 {
		t.Errorf("Sub %+v Total %d", got, want.Total())
	}
}

func TestScripts(t *testing.T) {
	p := New(Options{Slots: 2, Errorf: t.Errorf, CloseBusy: 2})
	p.SetCapturing(5, true)
	if err := p.RecordBegin(0, 5); !errors.Is(err, backend.ErrCapturing) {
		t.Errorf("record on capturing stream: %v", err)
	}
	p.SetCapturing(5, false)
	boom := errors.New("boom")
	p.SetRecordError(func(op Op, slot int, s backend.Stream) error {
		if op == OpRecordEnd {
			return boom
		}
		return nil
	})
	must(t, p.RecordBegin(0, 5))
	if err := p.RecordEnd(0, 5); err != boom {
		t.Errorf("scripted error: %v", err)
	}
	p.SetRecordError(nil)
	must(t, p.RecordEnd(0, 5))
	must(t, p.Harvest([]backend.HarvestItem{{Slot: 0}}))
	for i := 0; i < 2; i++ {
		if err := p.Close(); !errors.Is(err, backend.ErrBusy) || p.Closed() {
			t.Fatalf("close %d: %v", i, err)
		}
	}
	must(t, p.Close())
	if c := p.Calls(); c.RecordsWhileCapturing != 1 || c.Close != 3 || !p.Closed() {
		t.Errorf("calls %+v", c)
	}
	if _, err := New(Options{OpenErr: boom}).Opener()(0); err != boom {
		t.Errorf("OpenErr: %v", err)
	}
}

func TestSticky(t *testing.T) {
	p := New(Options{Slots: 2, StickyAfter: 2, Errorf: t.Errorf})
	must(t, p.RecordBegin(0, 1))
	must(t, p.RecordEnd(0, 1))
	items := []backend.HarvestItem{{Slot: 0}}
	if err := p.Harvest(items); !errors.Is(err, backend.ErrSticky) || items[0].State != backend.Failed {
		t.Fatalf("harvest after 2 calls: %v %+v", err, items)
	}
	if c := p.Calls(); c.CallsAfterSticky != 0 {
		t.Errorf("calls %+v", c)
	}
	if err := p.RecordBegin(1, 1); !errors.Is(err, backend.ErrSticky) {
		t.Errorf("still sticky: %v", err)
	}
	if c := p.Calls(); c.CallsAfterSticky != 1 {
		t.Errorf("calls %+v", c)
	}
}

func TestSetSticky(t *testing.T) {
	p := New(Options{Slots: 2, Errorf: t.Errorf})
	must(t, p.RecordBegin(0, 1))
	must(t, p.RecordEnd(0, 1))
	p.SetSticky(true)
	if err := p.RecordBegin(1, 1); !errors.Is(err, backend.ErrSticky) {
		t.Fatalf("RecordBegin after SetSticky: %v", err)
	}
	items := []backend.HarvestItem{{Slot: 0}}
	if err := p.Harvest(items); !errors.Is(err, backend.ErrSticky) {
		t.Errorf("Harvest: %v", err)
	}
	if c := p.Calls(); c.CallsAfterSticky != 1 {
		t.Errorf("calls %+v", c)
	}
	p.SetSticky(false)
	must(t, p.RecordBegin(1, 1))
	if c := p.Calls(); c.CallsAfterSticky != 2 {
		t.Errorf("calls %+v", c)
	}
}

func TestViolations(t *testing.T) {
	var reported []string
	p := New(Options{Slots: 2, Errorf: func(f string, a ...interface{}) { reported = append(reported, f) }})
	if err := p.RecordBegin(5, 1); !errors.Is(err, backend.ErrBadSlot) {
		t.Errorf("out of range: %v", err)
	}
	_ = p.RecordEnd(1, 1)                           // no begin
	_ = p.Harvest([]backend.HarvestItem{{Slot: 0}}) // not ended
	must(t, p.Close())
	_ = p.RecordBegin(1, 1) // after Close
	_ = p.Close()
	v := p.Violations()
	for i, want := range []string{"out of range", "has no begin", "has not been ended", "RecordBegin after Close", "Close after Close"} {
		if i >= len(v) || !strings.Contains(v[i], want) {
			t.Errorf("violation %d: want %q in %q", i, want, v)
		}
	}
	if len(reported) != len(v) {
		t.Errorf("Errorf called %d times for %d violations", len(reported), len(v))
	}
}

func TestConcurrentCallsOnOneSlot(t *testing.T) {
	p := New(Options{Slots: 1})
	p.inCall[0].Store(true) // a call on slot 0 is running
	_ = p.RecordBegin(0, 1)
	if v := p.Violations(); len(v) != 1 || !strings.Contains(v[0], "in another call") {
		t.Errorf("violations %q", v)
	}
	p.inCall[0].Store(false)
	p.running.Add(1) // a call is running while Close is called
	_ = p.Close()
	if v := p.Violations(); len(v) != 2 || !strings.Contains(v[1], "Close while 1 calls") {
		t.Errorf("violations %q", v)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The tracer reports records of any kind while it collects, as they were
// given, named.
func TestTracerRecord(t *testing.T) {
	var tr Tracer
	launch := backend.KernelRecord{StartNs: 10, EndNs: 20, Correlation: 7, Kind: backend.RecordLaunch, Thread: 3}
	if tr.Record(launch, "") {
		t.Fatal("Record before the tracer opened: reported")
	}
	if _, err := tr.Opener()(backend.TracerWindow); err != nil {
		t.Fatal(err)
	}
	kernel := backend.KernelRecord{StartNs: 20, EndNs: 30, Device: 1, Stream: 2, Correlation: 7}
	if !tr.Record(launch, "") || !tr.Record(kernel, "mm") {
		t.Fatal("Record while collecting: not reported")
	}
	got := make([]backend.KernelRecord, 4)
	got = got[:tr.Read(got)]
	kernel.Name = got[len(got)-1].Name
	if len(got) != 2 || got[0] != launch || got[1] != kernel || tr.Name(kernel.Name) != "mm" {
		t.Errorf("records %+v, want %+v and %+v named mm", got, launch, kernel)
	}
}

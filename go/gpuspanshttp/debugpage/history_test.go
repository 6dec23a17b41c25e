package debugpage

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// TestRecentWindows: 100 decode spans of 100us, then 70 s later 100 more
// of 200us and 60 busy-slot drops: the last minute sees only the new ones,
// the five minutes (still filling) reach back 70 s, since-start sees all.
func TestRecentWindows(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	var s gpuspans.Snapshot
	s.Lanes = []gpuspans.Aggregate{{Name: "decode"}, {Name: "prefill"}}
	s.Kernels = []gpuspans.Aggregate{{Name: gpuspans.OtherKernel}}
	for i := 0; i < 100; i++ {
		s.Lanes[0].Observe(100 * time.Microsecond)
	}
	s.Counters.Begun = 100
	var h history
	h.add(&s, t0)
	if _, ok := h.base(t0.Add(time.Second), time.Minute); ok {
		t.Error("a window from a sample a second old")
	}
	for i := 0; i < 100; i++ {
		s.Lanes[0].Observe(200 * time.Microsecond)
	}
	s.Counters.Begun, s.Counters.Dropped[gpuspans.DropSlotBusy] = 260, 60
	now := t0.Add(70 * time.Second)
	h.add(&s, now)

	o := Options{}
	p := newPage(&s, []string{"decode", "prefill"}, &o, now)
	p.addWindows(&s, &h, now)
	if strings.Join(p.Windows, ",") != "last 1m,last 70s" {
		t.Errorf("windows %q", p.Windows)
	}
	d := p.Rows[0]
	if d.Name != "decode" || d.Count != "200" || len(d.Recent) != 2 ||
		d.Recent[0] != (windowCell{"100", "198us", "198us"}) || d.Recent[1].Count != "100" { // 200us, within 1.1%
		t.Errorf("decode row %+v", d)
	}
	// Zero rows: prefill and "other" landed nothing and are there.
	if pr := p.Rows[1]; pr.Name != "prefill" || pr.Count != "0" || pr.Recent[0] != (windowCell{"0", "–", "–"}) || p.Rows[2].Name != gpuspans.OtherKernel {
		t.Errorf("rows %+v", p.Rows)
	}
	if c := p.DropCard; c.Total != 60 || c.Share != "23.08%" || !c.Alarm || !strings.Contains(c.Recent, "slot_busy 0.9/s") {
		t.Errorf("drop card %+v", c)
	}
}

// TestHistoryBounded: samples are kept every historyEvery at most, for
// historyKeep.
func TestHistoryBounded(t *testing.T) {
	var h history
	s := gpuspans.Snapshot{Lanes: []gpuspans.Aggregate{{Name: "decode"}}}
	t0 := time.Unix(1_700_000_000, 0)
	for i := 0; i < 3600; i++ {
		s.Lanes[0].Observe(time.Duration(i) * time.Microsecond)
		h.add(&s, t0.Add(time.Duration(i)*time.Second))
	}
	if max := int(historyKeep/historyEvery) + 1; len(h.samples) > max {
		t.Errorf("%d samples kept, want at most %d", len(h.samples), max)
	}
	// Each copy holds the non-empty buckets only.
	if n := len(h.samples[len(h.samples)-1].aggs[0].idx); n > 400 {
		t.Errorf("%d buckets in a copy", n)
	}
}

package gpuspans

import (
	"testing"
	"time"
)

// The window's cost comes out of the host's time at the spans' starts
// and inside launch calls first, then launch latency's, then the rest of
// the host's, the rest, waits and copies; the causes then sum to the
// served idle.
func TestServedCausesOrder(t *testing.T) {
	raw := IdleCauses{Host: 50, Launch: 30, Copy: 20, Wait: 10, Other: 10}
	for _, c := range []struct {
		callHost, cost int64
		want           IdleCauses
	}{
		{20, 0, raw},
		{20, 15, IdleCauses{Host: 35, Launch: 30, Copy: 20, Wait: 10, Other: 10}},
		{20, 40, IdleCauses{Host: 30, Launch: 10, Copy: 20, Wait: 10, Other: 10}},
		{20, 70, IdleCauses{Host: 10, Copy: 20, Wait: 10, Other: 10}},
		{20, 95, IdleCauses{Copy: 20, Wait: 5}},
		{20, 120, IdleCauses{}},
		// No host time at the start or inside calls: launch's first.
		{0, 40, IdleCauses{Host: 40, Copy: 20, Wait: 10, Other: 10}},
		// All of it there (more than the host's part: capped).
		{500, 40, IdleCauses{Host: 10, Launch: 30, Copy: 20, Wait: 10, Other: 10}},
		{500, 70, IdleCauses{Launch: 10, Copy: 20, Wait: 10, Other: 10}},
	} {
		got := servedCauses(raw, c.callHost, 120, c.cost, IdleCauses{Host: 1})
		if got != c.want || int64(got.Total()) != 120-c.cost {
			t.Errorf("call host %d, cost %d: %+v, want %+v", c.callHost, c.cost, got, c.want)
		}
	}
	// An analysis that splits less than the idle: the rest is other.
	if got := servedCauses(IdleCauses{Host: 10}, 0, 100, 30, IdleCauses{}); got != (IdleCauses{Other: 70}) {
		t.Errorf("partial split: %+v, want 70 of other", got)
	}
	// One that splits more: cut like the cost.
	if got := servedCauses(IdleCauses{Host: 80, Copy: 40}, 80, 100, 0, IdleCauses{}); got != (IdleCauses{Host: 60, Copy: 40}) {
		t.Errorf("overfull split: %+v", got)
	}
	// A negative cost (the lane's steps served longer than the window's
	// own): idle the window's step did not have, split as the lane's
	// latest windows' and this one's together, or other when they split none.
	if got := servedCauses(IdleCauses{Launch: 20}, 0, 20, -60, IdleCauses{Host: 60, Launch: 20}); got != (IdleCauses{Host: 36, Launch: 44}) {
		t.Errorf("negative cost: %+v, want host 36 and launch 44 (60 split 60:40)", got)
	}
	if got := servedCauses(IdleCauses{}, 0, 0, -60, IdleCauses{}); got != (IdleCauses{Other: 60}) {
		t.Errorf("negative cost, no causes anywhere: %+v, want 60 of other", got)
	}
}

func TestShareCausesSumsExactly(t *testing.T) {
	c := IdleCauses{Host: 333, Launch: 333, Other: 334}
	for _, idle := range []int64{0, 1, 7, 999, 1000, 12345} {
		got := shareCauses(c, idle)
		if int64(got.Total()) != idle {
			t.Errorf("share of %d: %+v sums to %v", idle, got, got.Total())
		}
	}
	if got := shareCauses(IdleCauses{}, 50); got != (IdleCauses{}) {
		t.Errorf("share of no causes: %+v", got)
	}
}

// The estimate: kept means, their mean, one side alone, and the shift
// bound, which a noisy lane's sides may pass without a shift.
func TestServedPerSpan(t *testing.T) {
	side := func(before, after []int64) *laneSide {
		sd := &laneSide{nb: int32(len(before)), na: int32(len(after))}
		copy(sd.before[:], before)
		copy(sd.after[:], after)
		return sd
	}
	ms := int64(time.Millisecond)
	for _, c := range []struct {
		name string
		sd   *laneSide
		want int64
		ok   bool
	}{
		{"none", nil, 0, false},
		{"empty", side(nil, nil), 0, false},
		{"before only", side([]int64{ms, 50 * ms, ms}, nil), ms, true},
		{"after only", side(nil, []int64{2 * ms, 2 * ms}), 2 * ms, true},
		{"both", side([]int64{100, 100, 9000}, []int64{104, 104, 1}), 102, true},
		{"within the bound", side([]int64{100}, []int64{110}), 105, true},
		{"past it", side([]int64{100}, []int64{111}), 0, false},
		// A stall of 0, 250, 500 or 1000 us drawn per step: the mean of
		// every step (437.5 and 531.25), not the typical step nor a
		// trimmed centre; the sides differ by 21% and settle, as within
		// their noise.
		{"varying", side([]int64{0, 250, 500, 1000, 0, 250, 500, 1000, 0, 250, 500, 1000, 250, 500, 1000, 0},
			[]int64{500, 1000, 1000, 250, 500, 1000, 0, 250, 500, 1000, 250, 500, 1000, 0, 500, 250}), 484, true},
		// A steady lane that moved by 20% across the window.
		{"moved", side([]int64{1000, 1001, 999, 1000, 1002, 998, 1000, 1000}, []int64{1200, 1201, 1199, 1200, 1200, 1202, 1198, 1200}), 0, false},
	} {
		got, ok := servedPerSpan(c.sd)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

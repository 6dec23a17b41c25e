package debugpage

import (
	"sync"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Recent windows. The page keeps cumulative copies of the aggregates at
// most every historyEvery, for historyKeep, and subtracts the one at the
// start of a window from the live totals: quantiles of the spans landed in
// that window, with the same 1.1% bound. Copies are sparse (the non-empty
// buckets only), so memory is bounded by historyKeep/historyEvery copies
// of what the hub holds, in practice a few KiB each.
const (
	historyEvery = 5 * time.Second
	historyKeep  = 5*time.Minute + 2*historyEvery
)

// windows are the recent windows the page shows beside since-start.
var windows = [...]time.Duration{time.Minute, 5 * time.Minute}

// sample is the hub's cumulative totals at one time.
type sample struct {
	at      time.Time
	begun   uint64
	dropped [gpuspans.NumDropReasons]uint64
	aggs    []sparseAgg // lanes then kernels, as in the snapshot
}

type sparseAgg struct {
	device      int
	name        string
	lane        bool
	count, zero uint64
	idx         []uint16 // non-empty buckets
	n           []uint64
}

// history is the samples, oldest first. Safe for concurrent use.
type history struct {
	mu      sync.Mutex
	samples []sample
}

// add records s as taken at now, unless the newest sample is recent, and
// forgets samples too old for any window.
func (h *history) add(s *gpuspans.Snapshot, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.samples); n > 0 && now.Sub(h.samples[n-1].at) < historyEvery && !now.Before(h.samples[n-1].at) {
		return
	}
	keep := h.samples[:0]
	for _, old := range h.samples {
		if now.Sub(old.at) <= historyKeep && !old.at.After(now) {
			keep = append(keep, old)
		}
	}
	smp := sample{at: now, begun: s.Counters.Begun, dropped: s.Counters.Dropped}
	for k, list := range [][]gpuspans.Aggregate{s.Lanes, s.Kernels} {
		for i := range list {
			a := &list[i]
			sa := sparseAgg{device: a.Device, name: a.Name, lane: k == 0, count: a.Count, zero: a.ZeroCount}
			for j, c := range a.Buckets {
				if c > 0 {
					sa.idx, sa.n = append(sa.idx, uint16(j)), append(sa.n, c)
				}
			}
			smp.aggs = append(smp.aggs, sa)
		}
	}
	h.samples = append(keep, smp)
}

// base returns the newest sample at least d before now, or else the oldest
// one (a window that has not filled yet), and false when there is none
// older than historyEvery: too little to tell.
func (h *history) base(now time.Time, d time.Duration) (sample, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var best *sample
	for i := range h.samples {
		if s := &h.samples[i]; now.Sub(s.at) >= d {
			best = s
		}
	}
	if best == nil && len(h.samples) > 0 && now.Sub(h.samples[0].at) >= historyEvery {
		best = &h.samples[0]
	}
	if best == nil {
		return sample{}, false
	}
	return *best, true
}

// since returns a less what base held of it: the spans landed since base.
// Min is unknown for the window and left 0; Max stays the all-time one,
// which only bounds the estimate.
func since(a *gpuspans.Aggregate, base *sample, lane bool) gpuspans.Aggregate {
	w := *a
	w.Min, w.Sum = 0, 0
	for k := range base.aggs {
		b := &base.aggs[k]
		if b.device != a.Device || b.name != a.Name || b.lane != lane {
			continue
		}
		if b.count > w.Count || b.zero > w.ZeroCount {
			return gpuspans.Aggregate{Device: a.Device, Name: a.Name} // the hub was replaced: no window
		}
		w.Count -= b.count
		w.ZeroCount -= b.zero
		for j, i := range b.idx {
			w.Buckets[i] -= b.n[j]
		}
		break
	}
	return w
}

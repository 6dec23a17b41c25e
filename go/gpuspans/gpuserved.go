package gpuspans

import (
	"slices"
	"time"
)

// The served step (docs/design.md): a kernel window slows the step it
// measures, so each window's lane spans are set against the lane's time
// per span on the steps around the window, outside windows, and the
// difference is the window's cost, taken out of the idle causes it
// lengthens.

// settleServed sets the lane's window against its served time: each span
// of the lane's is taken as served for the estimate per span (kept within
// its busy time and its own event time: a window never makes a step
// faster, nor is a step served in less than its kernels ran), the rest is
// the window's cost, and that cost is taken out of the causes it lengthens
// (docs/design.md, the served step). Caller holds the harvest lock.
func (h *Hub) settleServed(t *laneTotals, lw *laneWindow, sd *laneSide, lanes []winLane) {
	key := lw.key
	est, ok := servedPerSpan(sd)
	if !ok {
		t.unsettled++
		return
	}
	var served int64
	for i := range lanes {
		if ln := &lanes[i]; ln.dev == key[0] && ln.lane == key[1] && ln.span.GPUTimed {
			ln.span.ServedNs = min(max(est, ln.span.BusyNs), ln.dur)
			served += ln.span.ServedNs
		}
	}
	causes := servedCauses(lw.causes, lw.time-lw.busy, lw.time-served)
	for i := range lanes {
		if ln := &lanes[i]; ln.dev == key[0] && ln.lane == key[1] && ln.span.GPUTimed {
			ln.span.Causes = shareCauses(causes, ln.span.ServedNs-ln.span.BusyNs)
		}
	}
	t.servedSpans += uint64(lw.spans)
	t.servedBusy += lw.busy
	t.served += served
	t.cost += lw.time - served
	t.causes.Add(causes)
	t.recent[t.settled%GPUTimeRecentWindows] = settledWindow{spans: lw.spans, time: lw.time, busy: lw.busy, served: served, causes: causes}
	t.settled++
}

// servedPerSpan is the lane's served time per span from its spans around
// a window: the mean of the two sides' trimmed means, or the one side there
// is; false when there is none, or the two differ by more than
// GPUTimeServedShift of the smaller and by more than their noise (three
// standard errors) too: a lane whose time moved across the window.
func servedPerSpan(sd *laneSide) (int64, bool) {
	if sd == nil {
		return 0, false
	}
	b, vb, nb := trimmedMean(sd.before[:sd.nb])
	a, va, na := trimmedMean(sd.after[:sd.na])
	switch {
	case nb > 0 && na > 0:
		d := max(a, b) - min(a, b)
		if d > GPUTimeServedShift*min(a, b) && d*d > 9*(vb/float64(nb)+va/float64(na)) {
			return 0, false
		}
		return int64((a + b) / 2), true
	case nb > 0:
		return int64(b), true
	case na > 0:
		return int64(a), true
	}
	return 0, false
}

// trimmedMean is the mean of v without its highest and lowest eighth (one
// at least, of 3 or more): an outlier step (a 20 ms stall among 700 us
// steps) moves it no more than a median, yet a lane whose time varies step
// to step (a host stall of 0 to 1 ms) reads its mean, where a median reads
// a typical step and the ratio would be off by the skew. It returns the
// variance of what it kept and how many; reorders v.
func trimmedMean(v []int64) (mean, variance float64, n int) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	slices.Sort(v)
	k := (len(v) + 7) / 8
	if len(v) < 3 {
		k = 0
	}
	kept := v[k : len(v)-k]
	for _, x := range kept {
		mean += float64(x)
	}
	mean /= float64(len(kept))
	for _, x := range kept {
		variance += (float64(x) - mean) * (float64(x) - mean)
	}
	if len(kept) > 1 {
		variance /= float64(len(kept) - 1)
	}
	return mean, variance, len(kept)
}

// servedCauses turns a window's idle by cause (raw, splitting idle, the
// window's own idle) into served terms: the window's cost is taken out of
// the host's part first, then launch latency's, then the rest's, then
// waits' and copies' (CUPTI slows the launch calls, so its cost shows up
// as the device waiting for the host, then as queued work not started).
// Parts that fall short of idle (an analysis that splits none) count as
// Other; parts beyond it are cut in the same order.
func servedCauses(raw IdleCauses, idle, cost int64) IdleCauses {
	c := raw
	if sum := int64(c.Total()); sum < idle {
		c.Other += time.Duration(idle - sum)
	} else if sum > idle {
		takeCauses(&c, sum-idle)
	}
	takeCauses(&c, cost)
	return c
}

// takeCauses takes n out of c's parts in the order the window's cost
// shows up in them.
func takeCauses(c *IdleCauses, n int64) {
	for _, p := range [...]*time.Duration{&c.Host, &c.Launch, &c.Other, &c.Wait, &c.Copy} {
		d := min(time.Duration(n), *p)
		*p -= d
		n -= int64(d)
	}
}

// shareCauses splits idle in c's proportions (exactly: the rounding goes
// to the largest part); zero parts for a c of nothing.
func shareCauses(c IdleCauses, idle int64) IdleCauses {
	total := int64(c.Total())
	if total <= 0 || idle <= 0 {
		return IdleCauses{}
	}
	var out IdleCauses
	parts := [...]struct{ src, dst *time.Duration }{{&c.Host, &out.Host}, {&c.Launch, &out.Launch}, {&c.Copy, &out.Copy}, {&c.Wait, &out.Wait}, {&c.Other, &out.Other}}
	var sum int64
	big := 0
	for i, p := range parts {
		*p.dst = time.Duration(int64(float64(*p.src) * float64(idle) / float64(total)))
		sum += int64(*p.dst)
		if *p.src > *parts[big].src {
			big = i
		}
	}
	*parts[big].dst += time.Duration(idle - sum)
	return out
}

// servedTimelines copies the served split of the latest timelines' lane
// spans from the window's spans. Caller holds the harvest lock.
func (h *Hub) servedTimelines(lanes []winLane) {
	for i := range h.gt.out.Timelines {
		tl := &h.gt.out.Timelines[i]
		for j := range tl.Lanes {
			tlane := &tl.Lanes[j]
			for k := range lanes {
				if ln := &lanes[k]; int(ln.dev) == tl.Device && ln.step == tl.Step && ln.start == tlane.StartNs && h.lanes[ln.lane] == tlane.Lane {
					tlane.Served, tlane.Causes = time.Duration(ln.span.ServedNs), ln.span.Causes
					break
				}
			}
		}
	}
}

package gpuspans

import (
	"math"
	"slices"
	"time"
)

// The served step (docs/design.md): a kernel window slows the step it
// measures, so each window's lane spans are set against the lane's time
// per span on the steps around the window, outside windows, and the
// difference is the window's cost, taken out of the idle causes it
// lengthens.

// settleServed sets the lane's window against its served time: each span
// of the lane's is served for the estimate per span, at least its busy
// time (a step is not served in less time than its kernels ran), and the
// rest of the window's time is its cost, taken out of the causes it
// lengthens (docs/design.md, the served step). The lane's totals take the
// estimate even where a span ran shorter in the window than it (a lane
// whose time varies step to step, whose window fell on a short step): a
// span shows at most its own time, but held there the lane's mean would
// read the short steps short and the long ones as the window's cost. The
// cost counter carries such a window's negative cost into the next
// windows' rather than decrease. Caller holds the harvest lock.
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
			s := max(est, ln.span.BusyNs)
			ln.span.ServedNs = min(s, ln.dur)
			served += s
		}
	}
	var typical IdleCauses
	for i := range min(t.settled, GPUTimeRecentWindows) {
		typical.Add(t.recent[i].causes)
	}
	causes := servedCauses(lw.causes, lw.callHost, lw.time-lw.busy, lw.time-served, typical)
	shown := causes // the split of what the spans show, held within their own time
	if served > lw.time {
		shown = servedCauses(lw.causes, 0, lw.time-lw.busy, 0, IdleCauses{})
	}
	for i := range lanes {
		if ln := &lanes[i]; ln.dev == key[0] && ln.lane == key[1] && ln.span.GPUTimed {
			ln.span.Causes = shareCauses(shown, ln.span.ServedNs-ln.span.BusyNs)
		}
	}
	t.servedSpans += uint64(lw.spans)
	t.servedBusy += lw.busy
	t.served += served
	if c := lw.time - served + t.costCarry; c < 0 {
		t.costCarry = c
	} else {
		t.cost += c
		t.costCarry = 0
	}
	t.causes.Add(causes)
	t.recent[t.settled%GPUTimeRecentWindows] = settledWindow{spans: lw.spans, time: lw.time, busy: lw.busy, served: served, causes: causes}
	t.settled++
}

// servedPerSpan is the lane's served time per span from its spans around
// a window: the mean of the two sides' kept means, or the one side there
// is; false when there is none, or the two differ by more than
// GPUTimeServedShift of the smaller and by more than their noise (three
// standard errors) too: a lane whose time moved across the window.
func servedPerSpan(sd *laneSide) (int64, bool) {
	if sd == nil {
		return 0, false
	}
	b, vb, nb := keptMean(sd.before[:sd.nb])
	a, va, na := keptMean(sd.after[:sd.na])
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

// keptMean is the mean of v without an outlier: the one value farther
// from the median than five robust standard deviations (1.4826 median
// absolute deviations) and than a tenth of the median, when only one is.
// An outlier step (a 20 ms stall among 700 us steps) moves it no more than
// a median; two or more that far are the lane's own (a stall on a quarter
// of the steps, which a GPU-bound step hides otherwise), and it reads the
// mean, which is what a run without windows measures. Medians read 10.6
// points high on an H100's varying stall, trimmed eighths 3.9, dropping
// every far value 11.5. It returns the variance of what it kept and how
// many; reorders v, of at most GPUTimeServedSpans.
func keptMean(v []int64) (mean, variance float64, n int) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = v[len(v)/2-1] + (med-v[len(v)/2-1])/2
	}
	var dev [GPUTimeServedSpans]int64
	d := dev[:len(v)]
	for i, x := range v {
		d[i] = max(x-med, med-x)
	}
	slices.Sort(d)
	bound := max(float64(d[len(d)/2])*1.4826*5, float64(max(med, -med))/10)
	if len(d) > 1 && float64(d[len(d)-2]) > bound {
		bound = math.Inf(1) // two or more far values: none is an outlier
	}
	near := func(x int64) bool { return float64(max(x-med, med-x)) <= bound }
	for _, x := range v {
		if near(x) {
			mean += float64(x)
			n++
		}
	}
	mean /= float64(n)
	for _, x := range v {
		if near(x) {
			variance += (float64(x) - mean) * (float64(x) - mean)
		}
	}
	if n > 1 {
		variance /= float64(n - 1)
	}
	return mean, variance, n
}

// servedCauses turns a window's idle by cause (raw, splitting idle, the
// window's own idle; callHost of its host part at the spans' starts and
// inside launch calls) into served terms. The window's cost is taken out
// where CUPTI puts it: that host time first (a graph launch's cost per
// node, the watch's callbacks, and CUPTI's work before the first call of
// a window step that it records), then launch latency's (the device's
// gaps between queued kernels, which CUPTI lengthens too), then the rest
// of the host's (the engine's own work between its launches), the rest's,
// waits' and copies'. Parts that fall short of idle (an analysis that
// splits none) count as Other; parts beyond it are cut in the same order.
// A negative cost (the lane's steps around the window served longer than
// the window's own) is idle the window's step did not have: it is split
// as the lane's typical idle is (typical: its latest windows', with this
// one's), or is Other.
func servedCauses(raw IdleCauses, callHost, idle, cost int64, typical IdleCauses) IdleCauses {
	c := raw
	if sum := int64(c.Total()); sum < idle {
		c.Other += time.Duration(idle - sum)
	} else if sum > idle {
		takeCauses(&c, 0, sum-idle)
	}
	if cost >= 0 {
		takeCauses(&c, callHost, cost)
		return c
	}
	typical.Add(c)
	if typical.Total() <= 0 {
		c.Other += time.Duration(-cost)
		return c
	}
	c.Add(shareCauses(typical, -cost))
	return c
}

// takeCauses takes n out of c's parts in the order the window's cost
// shows up in them: up to callHost of the host's, launch latency's, the
// rest of the host's, other's, waits', copies'.
func takeCauses(c *IdleCauses, callHost, n int64) {
	d := min(n, callHost, int64(c.Host))
	c.Host -= time.Duration(d)
	n -= d
	for _, p := range [...]*time.Duration{&c.Launch, &c.Host, &c.Other, &c.Wait, &c.Copy} {
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

package gpuspans

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// The analysis of one kernel window, apart from the hub so that it can be
// checked against a count of every nanosecond (gpuanalysis_test.go): from a
// window's lane spans and records, all on the host clock, what the device
// did inside each lane span, why it waited, and the window's steps, gaps
// and timelines (docs/design.md, GPU time). It sorts once and sweeps, so
// that its cost is linear in records plus lane spans (times the depth of
// lanes nested in one another).

// gpuAnalysis is one window's analysis: run fills its results, which stay
// valid until the next run; its scratch is reused. Not safe for concurrent
// use (the hub's is guarded by the harvest lock).
type gpuAnalysis struct {
	// spans is each lane span's result, in the order run left lanes in.
	spans []spanGPU
	// lanes is each (device, lane) measured, by device then lane.
	lanes []laneWindow
	// gaps is every gap between consecutive kernels inside a lane span,
	// for the devices' histograms.
	gaps []devGap
	// Per device with lane spans: its steps, its largest gaps (longest
	// first, at most GPUTimeLargestGaps) and its last step's timeline.
	steps     []StepGPUTime
	largest   []KernelGap
	timelines []Timeline
	unplaced  uint64 // lane spans not placed on the host clock (not measured)

	kernels, copies, launches []winKernel
	runs                      []busyRun
	copyRuns                  []copyRun
	active                    []int32
	hint                      int     // launches' index where launchCall looks first
	nth                       []int32 // per kernel name: launches seen in the lane span so far
	touched                   []int32
	laneAt                    map[[2]int32]int // lanes' index by key
	stepAt                    map[uint64]int   // steps' index by step, per device
}

// spanGPU is what the analysis measured of one lane span.
type spanGPU struct {
	placed           bool // on the host clock: measured
	busy, idle, gaps int64
	causes           IdleCauses
}

// laneWindow is what one window measured of one lane on one device, summed
// over the lane's spans in the window: what settleLane takes.
type laneWindow struct {
	key                    [2]int32 // device, lane index
	spans                  int64
	time, busy, idle, gaps int64 // ns; time == busy + idle
	causes                 IdleCauses
	callHost               int64               // of causes.Host, the time at the span's start and inside launch calls
	shares                 map[int32]int64     // kernel aggregate index: its time inside the spans
	launches               map[launchKey]int64 // each launch's time inside the spans

	// Scratch: per kernel name touched (names), its launches' time by
	// place (ns[name][n-1]), summed before the maps take them, so that a
	// lane of many spans makes a map entry per launch, not per kernel.
	ns    [][]int64
	names []int32
}

// devGap is one gap between kernels inside a lane span.
type devGap struct {
	dev int32
	ns  int64
}

// busyRun is a stretch of time some kernel of the device ran: kernel
// intervals merged across streams, with the kernels (indexes into the
// device's sorted kernels) that began it and that ended it.
type busyRun struct {
	start, end  int64
	first, last int32
}

// copyRun is a stretch of time some copy or memset of the device ran, with
// the copy time of the device's runs before it.
type copyRun struct {
	start, end, before int64
}

// isKernel says whether a record runs a kernel: busy time. A copy or a
// memset is not busy (idle by cause Copy), a launch call is the host's.
func isKernel(k backend.RecordKind) bool { return k == backend.RecordKernel }

// kernelOrder orders a device's kernels: by start, ties broken so that the
// kernel that begins a busy run, and the one that ends it, are defined.
func kernelOrder(a, b *winKernel) int {
	if c := cmp.Compare(a.dev, b.dev); c != 0 {
		return c
	}
	if c := cmp.Compare(a.start, b.start); c != 0 {
		return c
	}
	if c := cmp.Compare(a.corr, b.corr); c != 0 {
		return c
	}
	if c := cmp.Compare(a.stream, b.stream); c != 0 {
		return c
	}
	if c := cmp.Compare(a.end, b.end); c != 0 {
		return c
	}
	return cmp.Compare(a.name, b.name)
}

// run analyses a window: lanes are its lane spans (sorted in place, by
// device then start), recs its records of every kind (read only), both on
// the host clock; kernelNames and laneNames name the records' and lanes'
// indexes.
func (a *gpuAnalysis) run(lanes []winLane, recs []winKernel, kernelNames, laneNames []string) {
	a.lanes, a.gaps, a.steps, a.largest, a.timelines = a.lanes[:0], a.gaps[:0], a.steps[:0], a.largest[:0], a.timelines[:0]
	a.unplaced = 0
	if a.laneAt == nil {
		a.laneAt = make(map[[2]int32]int)
		a.stepAt = make(map[uint64]int)
	}
	clear(a.laneAt)
	if len(a.nth) < len(kernelNames) {
		a.nth = make([]int32, len(kernelNames))
	}
	a.kernels, a.copies, a.launches = a.kernels[:0], a.copies[:0], a.launches[:0]
	for i := range recs {
		r := &recs[i]
		switch {
		case isKernel(r.kind):
			a.kernels = append(a.kernels, *r)
		case r.kind == backend.RecordLaunch:
			if r.corr != 0 {
				a.launches = append(a.launches, *r)
			}
		case r.kind == backend.RecordMemcpy || r.kind == backend.RecordMemset:
			if r.end > r.start {
				a.copies = append(a.copies, *r)
			}
		}
	}
	// Records come nearly in order (a device's by start, launch calls by
	// correlation), which sortOnce sorts in linear time.
	sortOnce(a.kernels, func(x, y *winKernel) int { return kernelOrder(x, y) })
	sortOnce(a.copies, func(x, y *winKernel) int {
		if c := cmp.Compare(x.dev, y.dev); c != 0 {
			return c
		}
		return cmp.Compare(x.start, y.start)
	})
	sortOnce(a.launches, func(x, y *winKernel) int {
		if c := cmp.Compare(x.corr, y.corr); c != 0 {
			return c
		}
		return cmp.Compare(x.end, y.end)
	})
	a.hint = 0
	sort.SliceStable(lanes, func(i, j int) bool {
		if lanes[i].dev != lanes[j].dev {
			return lanes[i].dev < lanes[j].dev
		}
		return lanes[i].start < lanes[j].start
	})
	a.spans = resize(a.spans, len(lanes))
	kl, cl := 0, 0
	for lo := 0; lo < len(lanes); {
		dev := lanes[lo].dev
		hi := lo
		for hi < len(lanes) && lanes[hi].dev == dev {
			hi++
		}
		for kl < len(a.kernels) && a.kernels[kl].dev < dev {
			kl++
		}
		kh := kl
		for kh < len(a.kernels) && a.kernels[kh].dev == dev {
			kh++
		}
		for cl < len(a.copies) && a.copies[cl].dev < dev {
			cl++
		}
		ch := cl
		for ch < len(a.copies) && a.copies[ch].dev == dev {
			ch++
		}
		a.device(dev, lanes[lo:hi], a.spans[lo:hi], a.kernels[kl:kh], a.copies[cl:ch], kernelNames, laneNames)
		lo, kl, cl = hi, kh, ch
	}
	for i := range a.lanes {
		a.lanes[i].flush()
	}
	slices.SortFunc(a.lanes, func(x, y laneWindow) int {
		if c := cmp.Compare(x.key[0], y.key[0]); c != 0 {
			return c
		}
		return cmp.Compare(x.key[1], y.key[1])
	})
}

// device analyses one device's lane spans (sorted by start) against its
// kernels (in kernelOrder) and copies (by start).
func (a *gpuAnalysis) device(dev int32, lanes []winLane, out []spanGPU, ks, cs []winKernel, kernelNames, laneNames []string) {
	// The busy runs: kernel intervals merged across streams. A kernel of
	// no duration runs no time and begins or ends no run.
	runs := a.runs[:0]
	for i := range ks {
		k := &ks[i]
		if k.end <= k.start {
			continue
		}
		if n := len(runs); n > 0 && k.start <= runs[n-1].end {
			if k.end > runs[n-1].end {
				runs[n-1].end, runs[n-1].last = k.end, int32(i)
			}
			continue
		}
		runs = append(runs, busyRun{start: k.start, end: k.end, first: int32(i), last: int32(i)})
	}
	a.runs = runs
	cr := a.copyRuns[:0]
	var copied int64
	for i := range cs {
		c := &cs[i]
		if n := len(cr); n > 0 && c.start <= cr[n-1].end {
			if c.end > cr[n-1].end {
				copied += c.end - cr[n-1].end
				cr[n-1].end = c.end
			}
			continue
		}
		cr = append(cr, copyRun{start: c.start, end: c.end, before: copied})
		copied += c.end - c.start
	}
	a.copyRuns = cr

	topLo := len(a.largest)
	stepLo := len(a.steps)
	clear(a.stepAt)
	var lastStep uint64
	r0, kp := 0, 0
	active := a.active[:0]
	for i := range lanes {
		ln, sp := &lanes[i], &out[i]
		*sp = spanGPU{}
		if ln.start == 0 {
			a.unplaced++
			continue
		}
		sp.placed = true
		s, e := ln.start, ln.start+max(ln.dur, 0)
		// Busy, gaps and idle by cause: the runs from the first that ends
		// after s (spans come by start, so r0 only moves on).
		for r0 < len(runs) && runs[r0].end <= s {
			r0++
		}
		x, inner := s, false
		var callHost int64 // of the host's idle, the part a window's cost can lie in
		for j := r0; j < len(runs) && runs[j].start < e; j++ {
			r := &runs[j]
			if r.start > x {
				var prev *winKernel
				if j > 0 {
					prev = &ks[runs[j-1].last]
				}
				callHost += a.idle(&sp.causes, x, r.start, &ks[r.first], prev, inner)
				if inner {
					gap := r.start - x
					sp.gaps += gap
					a.gaps = append(a.gaps, devGap{dev, gap})
					a.topGap(topLo, KernelGap{Device: int(dev), Lane: laneNames[ln.lane], Step: ln.step, StartNs: x,
						Duration: time.Duration(gap), Before: kernelNames[ks[runs[j-1].last].name], After: kernelNames[ks[r.first].name]})
				}
			}
			sp.busy += min(r.end, e) - max(r.start, s)
			x, inner = r.end, true
		}
		if x < e { // idle to the span's end: no next kernel in it
			c := a.copyIn(x, e)
			sp.causes.Copy += time.Duration(c)
			sp.causes.Other += time.Duration(e - x - c)
		}
		sp.idle = e - s - sp.busy
		sp.gaps = min(sp.gaps, sp.idle)

		lw := a.lane([2]int32{dev, ln.lane})
		lw.spans++
		lw.time += e - s
		lw.busy += sp.busy
		lw.idle += sp.idle
		lw.gaps += sp.gaps
		lw.causes.Add(sp.causes)
		lw.callHost += callHost

		// Each kernel's and launch's time inside the span: the kernels
		// still running at s (active, in order), then those starting in
		// [s, e).
		for kp < len(ks) && ks[kp].start < s {
			if ks[kp].end > s {
				active = append(active, int32(kp))
			}
			kp++
		}
		n := 0
		for _, k := range active {
			if ks[k].end > s {
				active[n] = k
				n++
			}
		}
		active = active[:n]
		for _, k := range active {
			a.share(lw, &ks[k], s, e)
		}
		for k := kp; k < len(ks) && ks[k].start < e; k++ {
			a.share(lw, &ks[k], s, e)
		}
		for _, name := range a.touched {
			a.nth[name] = 0
		}
		a.touched = a.touched[:0]

		// The span's step.
		si, ok := a.stepAt[ln.step]
		if !ok {
			si = len(a.steps)
			a.stepAt[ln.step] = si
			a.steps = append(a.steps, StepGPUTime{Device: int(dev), Step: ln.step, StartNs: s})
		}
		st := &a.steps[si]
		if s < st.StartNs {
			st.Extent += time.Duration(st.StartNs - s)
			st.StartNs = s
		}
		st.Extent = max(st.Extent, time.Duration(e-st.StartNs))
		lastStep = max(lastStep, ln.step)
	}
	a.active = active
	ti := len(a.timelines)
	a.timelines = resize(a.timelines, ti+1) // its slices reused
	tl := &a.timelines[ti]
	*tl = Timeline{Device: int(dev), Step: lastStep, Lanes: tl.Lanes[:0], Kernels: tl.Kernels[:0]}
	if len(a.steps) == stepLo {
		return // no lane span placed: no steps, an empty timeline
	}
	// Steps: extents over their lanes and kernels, busy from the runs.
	prevStep, si, ok := uint64(0), 0, false
	for i := range ks {
		if i == 0 || ks[i].step != prevStep {
			prevStep = ks[i].step
			si, ok = a.stepAt[prevStep]
		}
		if !ok {
			continue
		}
		st := &a.steps[si]
		st.Kernels++
		if ks[i].start < st.StartNs {
			st.Extent += time.Duration(st.StartNs - ks[i].start)
			st.StartNs = ks[i].start
		}
		st.Extent = max(st.Extent, time.Duration(ks[i].end-st.StartNs))
	}
	steps := a.steps[stepLo:]
	slices.SortFunc(steps, func(x, y StepGPUTime) int { return cmp.Compare(x.Step, y.Step) })
	var last *StepGPUTime
	for i := range steps {
		st := &steps[i]
		lo, hi := st.StartNs, st.StartNs+int64(st.Extent)
		var busy int64
		for j := sort.Search(len(runs), func(j int) bool { return runs[j].end > lo }); j < len(runs) && runs[j].start < hi; j++ {
			busy += min(runs[j].end, hi) - max(runs[j].start, lo)
		}
		st.Busy = time.Duration(busy)
		if st.Step == lastStep {
			last = st
		}
	}
	// The last step's timeline.
	for i := range lanes {
		if ln := &lanes[i]; ln.step == lastStep && ln.start != 0 {
			tl.Lanes = append(tl.Lanes, TimelineLane{Lane: laneNames[ln.lane], StartNs: ln.start, EndNs: ln.start + max(ln.dur, 0), Busy: time.Duration(out[i].busy)})
		}
	}
	lo, hi := last.StartNs, last.StartNs+int64(last.Extent)
	for i := range ks {
		if k := &ks[i]; k.end > lo && k.start < hi {
			if len(tl.Kernels) >= GPUTimeTimelineKernels {
				tl.Cut++
				continue
			}
			tl.Kernels = append(tl.Kernels, TimelineKernel{Stream: k.stream, Kernel: kernelNames[k.name], StartNs: k.start, EndNs: k.end})
		}
	}
}

// idle splits the idle stretch [x, b) of a lane span, which the kernel n
// ends, by cause; prev is the kernel that ended the device's busy run
// before it (nil: none in the window); inner: a kernel of the span ran
// before x. The rules are docs/design.md's (idle by cause): copies first;
// then the host while n's launch call had not returned, and inside the
// span the launch latency after it too; when it had returned before x,
// the launch latency of n's stream if the work before ran on it, else a
// wait on another stream or event; unexplained without n's launch call.
// It returns how much of the host's part a window's host-side cost can
// lie in (docs/design.md, the served step): at the span's start all of
// it, inside the span the part inside n's launch call.
func (a *gpuAnalysis) idle(c *IdleCauses, x, b int64, n, prev *winKernel, inner bool) (callHost int64) {
	cp := a.copyIn(x, b)
	rest := b - x - cp
	c.Copy += time.Duration(cp)
	start, end, ok := a.launchCall(n.corr)
	switch {
	case !ok:
		c.Other += time.Duration(rest)
	case end > x:
		// Queued in time, n's latency would have hidden behind the work
		// before it; at the span's start there was none in the step.
		h := b
		if !inner {
			h = min(end, b)
		}
		host := h - x - a.copyIn(x, h)
		c.Host += time.Duration(host)
		c.Launch += time.Duration(rest - host)
		cs := x
		if inner {
			cs = max(x, start)
		}
		if ce := min(end, h); ce > cs {
			callHost = ce - cs - a.copyIn(cs, ce)
		}
	case prev == nil:
		c.Other += time.Duration(rest)
	case prev.stream == n.stream:
		c.Launch += time.Duration(rest)
	default:
		c.Wait += time.Duration(rest)
	}
	return callHost
}

// launchCall returns when the launch call of correlation corr began (the
// earliest of its records' starts: a runtime launch and the driver call
// inside it share the correlation) and returned (the earliest end: the
// work was queued once the inner call returned); false when the window has
// no record of it.
func (a *gpuAnalysis) launchCall(corr uint32) (start, end int64, ok bool) {
	if corr == 0 {
		return 0, 0, false
	}
	ls := a.launches
	// Kernels run mostly in launch order: try where the last one was.
	i := a.hint
	if i >= len(ls) || ls[i].corr != corr || i > 0 && ls[i-1].corr == corr {
		i = sort.Search(len(ls), func(i int) bool { return ls[i].corr >= corr })
	}
	if i < len(ls) && ls[i].corr == corr {
		start = ls[i].start
		a.hint = i + 1
		for a.hint < len(ls) && ls[a.hint].corr == corr {
			start = min(start, ls[a.hint].start)
			a.hint++
		}
		return start, ls[i].end, true
	}
	return 0, 0, false
}

// sortOnce sorts s by cmp. Records come nearly in order (CUPTI delivers
// them as they complete, a stream's in order), so it sorts by insertion,
// linear in records plus how far each is out of place, and falls back to
// a full sort once that passes a few moves a record.
func sortOnce(s []winKernel, cmp func(x, y *winKernel) int) {
	budget := 8 * len(s)
	for i := 1; i < len(s); i++ {
		if cmp(&s[i-1], &s[i]) <= 0 {
			continue
		}
		j := i
		for ; j > 0 && cmp(&s[j-1], &s[j]) > 0; j-- {
			s[j-1], s[j] = s[j], s[j-1]
		}
		if budget -= i - j; budget < 0 {
			slices.SortFunc(s, func(x, y winKernel) int { return cmp(&x, &y) })
			return
		}
	}
}

// copyIn is the time copies of the device ran within [x, y).
func (a *gpuAnalysis) copyIn(x, y int64) int64 {
	if len(a.copyRuns) == 0 || y <= x {
		return 0
	}
	return a.copyBefore(y) - a.copyBefore(x)
}

// copyBefore is the time copies of the device ran before t.
func (a *gpuAnalysis) copyBefore(t int64) int64 {
	cr := a.copyRuns
	i := sort.Search(len(cr), func(i int) bool { return cr[i].end > t })
	if i == len(cr) {
		last := &cr[len(cr)-1]
		return last.before + last.end - last.start
	}
	v := cr[i].before
	if cr[i].start < t {
		v += t - cr[i].start
	}
	return v
}

// share adds kernel k's time inside [s, e) to the lane's kernel shares and
// to its launch: its name and how many of that name came before it in the
// span.
func (a *gpuAnalysis) share(lw *laneWindow, k *winKernel, s, e int64) {
	d := min(k.end, e) - max(k.start, s)
	if d <= 0 {
		return
	}
	name := k.name
	if int(name) >= len(a.nth) {
		a.nth = append(a.nth, make([]int32, int(name)+1-len(a.nth))...)
	}
	if a.nth[name] == 0 {
		a.touched = append(a.touched, name)
	}
	a.nth[name]++
	if int(name) >= len(lw.ns) {
		lw.ns = append(lw.ns, make([][]int64, int(name)+1-len(lw.ns))...)
	}
	byN := lw.ns[name]
	if len(byN) == 0 {
		lw.names = append(lw.names, name)
	}
	if n := int(a.nth[name]); n > len(byN) {
		byN = append(byN, make([]int64, n-len(byN))...)
		lw.ns[name] = byN
	}
	byN[a.nth[name]-1] += d
}

// flush moves the lane's sums into its maps.
func (lw *laneWindow) flush() {
	for _, name := range lw.names {
		var total int64
		for i, d := range lw.ns[name] {
			if d > 0 {
				lw.launches[launchKey{name, int32(i + 1)}] = d
				total += d
			}
		}
		lw.shares[name] = total
	}
}

// lane returns the window's result for key, made on first use with its
// maps reused from an earlier run.
func (a *gpuAnalysis) lane(key [2]int32) *laneWindow {
	if i, ok := a.laneAt[key]; ok {
		return &a.lanes[i]
	}
	i := len(a.lanes)
	a.laneAt[key] = i
	if i < cap(a.lanes) {
		a.lanes = a.lanes[:i+1]
	} else {
		a.lanes = append(a.lanes, laneWindow{})
	}
	lw := &a.lanes[i]
	if lw.shares == nil {
		lw.shares, lw.launches = make(map[int32]int64), make(map[launchKey]int64)
	}
	clear(lw.shares)
	clear(lw.launches)
	for _, name := range lw.names {
		lw.ns[name] = lw.ns[name][:0]
	}
	*lw = laneWindow{key: key, shares: lw.shares, launches: lw.launches, ns: lw.ns, names: lw.names[:0]}
	return lw
}

// topGap keeps g among the device's largest gaps (a.largest[lo:]), longest
// first, the earlier of equal ones first.
func (a *gpuAnalysis) topGap(lo int, g KernelGap) {
	top := a.largest[lo:]
	if len(top) == GPUTimeLargestGaps && g.Duration <= top[len(top)-1].Duration {
		return
	}
	i := sort.Search(len(top), func(i int) bool { return top[i].Duration < g.Duration })
	if len(top) < GPUTimeLargestGaps {
		a.largest = append(a.largest, KernelGap{})
		top = a.largest[lo:]
	}
	copy(top[i+1:], top[i:len(top)-1])
	top[i] = g
}

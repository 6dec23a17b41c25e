package gpuspans

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// GPU time: what the device did inside each lane span of a kernel window's
// steps, joined from the window's kernel records and the lane spans' event
// pairs, both placed on the host clock (docs/design.md, GPU time). Outside
// windows nothing is known, and nothing here reads as zero for it: a lane
// that no window has measured has no LaneGPUTime.
//
// Busy is the union of the device's kernel intervals, every stream, inside
// the span; idle is the span's event time less busy. Copies and memsets are
// not recorded (the tracer collects kernels only), so a lane waiting on a
// copy reads idle for it.

// LaneGPUTime is what kernel windows measured of one lane on one device.
type LaneGPUTime struct {
	Device int
	Lane   string
	// Spans counts the lane's spans measured; Time, Busy and Idle are
	// their totals (Time == Busy + Idle), over every window analysed.
	Spans            uint64
	Time, Busy, Idle time.Duration
	// Gaps is the part of Idle between the lane's kernels; the rest came
	// before its first kernel or after its last: the host launching (in a
	// window a graph launch also pays CUPTI's cost per node, which
	// lengthens the first) or the lane's stream waiting.
	Gaps time.Duration
	// RecentTime and RecentBusy are the totals over the lane's latest
	// GPUTimeRecentWindows windows; BusyRatio() is their ratio.
	RecentTime, RecentBusy time.Duration
	// Kernels are the kernels with the most time inside the lane in the
	// latest window that measured it, most first (at most
	// GPUTimeTopKernels), each with its share of the lane's kernel time.
	Kernels []KernelShare
	// Causes splits Idle by why the device waited; RecentCauses does the
	// same over the recent windows.
	Causes, RecentCauses IdleCauses
	// RecentServed is the lane's event time outside windows, estimated
	// for the recent windows' spans from the lane's spans on the steps
	// around each window; RecentWindowCost is what the windows' CUPTI
	// added to those spans (their event time less RecentServed).
	RecentServed, RecentWindowCost time.Duration
	// Unsettled counts windows whose served time could not be estimated
	// (the lane's time before and after the window differed too much);
	// their spans are left out of the Recent totals.
	Unsettled uint64
}

// IdleCauses splits a lane's idle time, the part of its span no kernel of
// the device ran, by why the device waited (docs/design.md, idle by cause).
// The parts sum to the idle time they split.
type IdleCauses struct {
	// Host: the device had run out of queued work before the call that
	// launched the next one returned.
	Host time.Duration
	// Launch: the next work was queued (its launch call had returned), yet
	// the device had not started it: launch latency.
	Launch time.Duration
	// Copy: copies and memsets ran on the device, and no kernel.
	Copy time.Duration
	// Wait: the next work was queued on a stream that waited on another
	// stream or an event.
	Wait time.Duration
	// Other: nothing recorded explains it.
	Other time.Duration
}

// BusyRatio is the fraction of the lane's recent span time the device was
// running kernels: RecentBusy / RecentTime.
func (l *LaneGPUTime) BusyRatio() float64 {
	if l.RecentTime <= 0 {
		return 0
	}
	return float64(l.RecentBusy) / float64(l.RecentTime)
}

// KernelShare is one kernel name's time inside a lane in one window.
type KernelShare struct {
	Kernel string
	Time   time.Duration // the kernel's intervals inside the lane's spans, summed
	Share  float64       // Time over the sum of every kernel's Time in the lane
}

// KernelGap is one idle gap between consecutive kernels inside a lane span:
// no kernel of the device ran from Start for Duration.
type KernelGap struct {
	Device   int
	Lane     string
	Step     uint64
	StartNs  int64 // Unix ns, host clock
	Duration time.Duration
	// Before is the kernel that ended last before the gap, After the one
	// that began it; OtherKernel for names without a label of their own.
	Before, After string
}

// StepGPUTime is one window step on one device: its extent, from the first
// lane span's begin or kernel's start to the last one's end, and the time
// kernels ran within it.
type StepGPUTime struct {
	Device       int
	Step         uint64
	StartNs      int64 // Unix ns, host clock
	Extent, Busy time.Duration
	Kernels      int
}

// KernelMove compares one launch of a kernel inside a lane, now and at the
// baseline: its time per lane span, averaged over windows with weights that
// halve every GPUTimeRecentHalfLife and GPUTimeBaselineHalfLife. A launch
// is a kernel name and its place among that name's launches in the lane
// span (Launch 3: the name's third), so one of a lane's 64 matmuls that
// slows down stands out from the other 63; a lane whose kernels change
// from step to step (eager prefill of varying shapes) moves more. A launch
// the lane did not make when the baseline began has a Baseline of 0.
type KernelMove struct {
	Device           int
	Lane, Kernel     string
	Launch           int
	Recent, Baseline time.Duration // per lane span
}

// TimelineKernel is one kernel of a Timeline.
type TimelineKernel struct {
	Stream         uint32 // the tracer's stream id
	Kernel         string
	StartNs, EndNs int64 // Unix ns, host clock
}

// TimelineLane is one lane span of a Timeline.
type TimelineLane struct {
	Lane           string
	StartNs, EndNs int64
	Busy           time.Duration
}

// Timeline is one window step on one device as it ran: its lane spans and
// its kernels (at most GPUTimeTimelineKernels, the first ones; Cut counts
// the rest), for a page to draw.
type Timeline struct {
	Device  int
	Step    uint64
	Lanes   []TimelineLane
	Kernels []TimelineKernel
	Cut     int
}

// GPUTime is what kernel windows measured of where the GPU's time went.
type GPUTime struct {
	// Windows counts windows analysed; Skipped windows that were not
	// (more than GPUTimeWindowKernels kernels or GPUTimeWindowLanes lane
	// spans); Late lane spans of a window that landed after its analysis
	// (not measured); Unplaced lane spans whose begin the device could not
	// place on the host clock (not measured).
	Windows, Skipped, Late, Unplaced uint64
	// AnalysisTime is the harvest's time spent analysing windows, in total.
	AnalysisTime time.Duration
	Lanes        []LaneGPUTime // by device, then lane: those measured
	// Gaps are, per device with measured lanes, the gaps between
	// consecutive kernels inside lane spans (Name "gap").
	Gaps []Aggregate
	// Of the latest window analysed: its steps, its largest gaps per
	// device (at most GPUTimeLargestGaps, longest first), and its last
	// step's timeline per device.
	Steps       []StepGPUTime
	LargestGaps []KernelGap
	Timelines   []Timeline
	// Moved are the kernels whose time per lane span grew most against
	// the baseline, most first: those that grew by at least
	// GPUTimeMovedMin and by GPUTimeMovedRatio of their baseline (at most
	// GPUTimeMovedMax).
	Moved []KernelMove
}

// Bounds and constants of the analysis.
const (
	GPUTimeWindowKernels   = 1 << 16 // kernel records a window keeps for its analysis
	GPUTimeWindowLanes     = 4096    // lane spans likewise
	GPUTimeRecentWindows   = 16      // windows LaneGPUTime.RecentTime covers
	GPUTimeTopKernels      = 5
	GPUTimeLargestGaps     = 8
	GPUTimeTimelineKernels = 4096
	GPUTimeMovedMax        = 10
	GPUTimeMovedRatio      = 0.10
	GPUTimeMovedMin        = 2 * time.Microsecond

	GPUTimeRecentHalfLife   = time.Minute
	GPUTimeBaselineHalfLife = time.Hour
)

// winLane is a lane span of a window step, held for its window's analysis.
type winLane struct {
	dev, lane int32
	step      uint64
	start     int64 // Unix ns; 0: not placed
	dur       int64
	span      Span // as it enters the recent ring once analysed
}

// winKernel is a kernel record of a window step.
type winKernel struct {
	start, end int64 // Unix ns
	step       uint64
	dev, name  int32 // name: the kernel aggregate index
	stream     uint32
	graph      uint32
}

// gpuWindow gathers one window's lane spans and kernels.
type gpuWindow struct {
	seq       uint64
	lanes     []winLane
	kernels   []winKernel
	overflow  bool
	finished  bool
	harvested bool // a harvest began after it finished: its lane spans have landed
}

// laneTotals is one device's lane's measurements.
type laneTotals struct {
	moves                  map[launchKey]*moveStat // by launch: its time per span, now and at the baseline
	spans                  uint64
	time, busy, idle, gaps int64
	recent                 [GPUTimeRecentWindows]struct{ time, busy int64 }
	windows                uint64
	kernels                []KernelShare
	lastNs                 int64 // host time of its latest window, for the averages' weights
}

// launchKey is a kernel launch's place in a lane span: its name and how
// many of that name came before it, plus one.
type launchKey struct {
	name, n int32
}

type moveStat struct {
	recent, base float64 // ns per lane span
}

// gpuTimes is the hub's GPU time state. Guarded by the harvest lock.
type gpuTimes struct {
	open  []*gpuWindow // windows gathering or waiting for their analysis, oldest first
	free  []*gpuWindow
	done  uint64 // Seq of the newest window analysed
	lanes map[[2]int32]*laneTotals
	gaps  map[int]*Aggregate
	// laneKeys and gapDevs are lanes' and gaps' keys, in order.
	laneKeys [][2]int32
	gapDevs  []int
	out      GPUTime // the latest analysis' per-window parts
	totals   GPUTime // the counters

	// Scratch, reused.
	merged   []busyRun
	shares   map[[2]int32]map[int32]int64
	launches map[[2]int32]map[launchKey]int64
	nth      map[int32]int32
}

// busyRun is a stretch of time some kernel of the device ran: merged kernel
// intervals, with the kernels that began and ended it.
type busyRun struct {
	start, end  int64
	first, last int32 // kernel aggregate indexes
}

// window returns the gathering window seq, made on first use; nil when it
// was analysed already.
func (g *gpuTimes) window(seq uint64) *gpuWindow {
	if seq <= g.done {
		return nil
	}
	for _, w := range g.open {
		if w.seq == seq {
			return w
		}
	}
	var w *gpuWindow
	if n := len(g.free); n > 0 {
		w, g.free = g.free[n-1], g.free[:n-1]
		*w = gpuWindow{seq: seq, lanes: w.lanes[:0], kernels: w.kernels[:0]}
	} else {
		w = &gpuWindow{seq: seq}
	}
	g.open = append(g.open, w)
	sort.Slice(g.open, func(a, b int) bool { return g.open[a].seq < g.open[b].seq })
	return w
}

// windowOfStep returns the kernel window seq that armed step, 0 for none.
// Caller holds the harvest lock.
func (l *tracerLanding) windowOfStep(step uint64) uint64 {
	i := sort.Search(len(l.win), func(i int) bool { return l.win[i].step >= step })
	if i < len(l.win) && l.win[i].step == step {
		return l.win[i].win
	}
	return 0
}

// holdLane keeps a landed lane span of a window step for its window's
// analysis; false when it is not one (it goes to the recent ring now).
// Caller holds the harvest lock.
func (h *Hub) holdLane(device int, lane uint64, s *Span) bool {
	seq := h.tl.windowOfStep(s.Step)
	if seq == 0 {
		return false
	}
	g := &h.gt
	w := g.window(seq)
	if w == nil {
		g.totals.Late++
		return false
	}
	if len(w.lanes) >= GPUTimeWindowLanes {
		w.overflow = true
		return false
	}
	w.lanes = append(w.lanes, winLane{dev: int32(device), lane: int32(lane), step: s.Step, start: s.StartNs, dur: s.DurationNs, span: *s})
	return true
}

// holdKernel keeps a traced kernel of a window step for its window's
// analysis, after which it reaches the recent ring behind the window's
// lane spans (exporters nest kernels in the lanes they have seen); false
// when it is not kept (it goes to the recent ring now). Caller holds the
// harvest lock.
func (h *Hub) holdKernel(win uint64, device, idx int, step uint64, r *backend.KernelRecord) bool {
	w := h.gt.window(win)
	if w == nil {
		return false
	}
	if len(w.kernels) >= GPUTimeWindowKernels {
		w.overflow = true
		return false
	}
	off := h.tl.offset
	w.kernels = append(w.kernels, winKernel{start: r.StartNs + off, end: max(r.EndNs, r.StartNs) + off, step: step,
		dev: int32(device), name: int32(idx), stream: r.Stream, graph: r.Graph})
	return true
}

// windowsFinished marks the windows up to closed as having all their
// kernel records. Caller holds the harvest lock.
func (g *gpuTimes) windowsFinished(closed uint64) {
	for _, w := range g.open {
		if w.seq <= closed {
			w.finished = true
		}
	}
}

// analyseWindows analyses the windows whose kernels have all landed (a
// window's close waits for them) and whose ended lane spans have too: a
// lane span still waiting for its end event holds its window to a later
// harvest, and one that lands after the analysis is counted Late. Caller
// holds the harvest lock, at a harvest's end.
func (h *Hub) analyseWindows() {
	g := &h.gt
	if len(g.open) == 0 {
		return
	}
	start := time.Now()
	kept := g.open[:0]
	for i, w := range g.open {
		// A window that never finishes (its tracer failed) gives its lane
		// spans up to the recent ring once newer ones pile up.
		if len(g.open)-i > recentWindows {
			w.harvested, w.overflow = true, true
		}
		switch {
		case w.harvested || w.finished && !h.lanesPending(w.seq):
			h.analyse(w)
			g.done = max(g.done, w.seq)
			g.free = append(g.free, w)
		case w.finished:
			w.harvested = true
			kept = append(kept, w)
		default:
			kept = append(kept, w)
		}
	}
	for i := len(kept); i < len(g.open); i++ {
		g.open[i] = nil
	}
	g.open = kept
	g.totals.AnalysisTime += time.Since(start)
}

// lanesPending reports whether a lane span of window seq has ended and
// awaits its harvest. Caller holds the harvest lock.
func (h *Hub) lanesPending(seq uint64) bool {
	for _, r := range h.recs {
		for i := range r.slots {
			sl := &r.slots[i]
			if sl.Word.Load()&slotStateMask == slotClosed && SpanKind(sl.Kind) == KindLane && h.tl.windowOfStep(sl.Step) == seq {
				return true
			}
		}
	}
	return false
}

// analyse measures one window and sends its lane spans on to the recent
// ring. Caller holds the harvest lock.
func (h *Hub) analyse(w *gpuWindow) {
	g := &h.gt
	defer func() {
		for i := range w.lanes {
			h.pushRecent(&w.lanes[i].span)
		}
		for i := range w.kernels {
			k := &w.kernels[i]
			h.pushRecent(&Span{Kind: KindKernel, Name: h.kernelNames[k.name], Device: int(k.dev), Stream: backend.Stream(k.stream),
				Step: k.step, StartNs: k.start, DurationNs: k.end - k.start, Graph: k.graph})
		}
	}()
	if w.overflow {
		g.totals.Skipped++
		return
	}
	if len(w.lanes) == 0 {
		return
	}
	g.totals.Windows++
	if g.lanes == nil {
		g.lanes = make(map[[2]int32]*laneTotals)
		g.gaps = make(map[int]*Aggregate)
		g.shares = make(map[[2]int32]map[int32]int64)
		g.launches = make(map[[2]int32]map[launchKey]int64)
		g.nth = make(map[int32]int32)
	}
	g.out.Steps, g.out.LargestGaps, g.out.Timelines = g.out.Steps[:0], g.out.LargestGaps[:0], g.out.Timelines[:0]
	sort.Slice(w.kernels, func(a, b int) bool {
		if w.kernels[a].dev != w.kernels[b].dev {
			return w.kernels[a].dev < w.kernels[b].dev
		}
		return w.kernels[a].start < w.kernels[b].start
	})
	sort.SliceStable(w.lanes, func(a, b int) bool {
		if w.lanes[a].dev != w.lanes[b].dev {
			return w.lanes[a].dev < w.lanes[b].dev
		}
		return w.lanes[a].start < w.lanes[b].start
	})
	for k := range g.shares {
		delete(g.shares, k)
	}
	for k := range g.launches {
		delete(g.launches, k)
	}
	lanesSeen := make(map[[2]int32]int64) // lane -> spans in this window
	for lo := 0; lo < len(w.lanes); {
		dev := w.lanes[lo].dev
		hi := lo
		for hi < len(w.lanes) && w.lanes[hi].dev == dev {
			hi++
		}
		kl := sort.Search(len(w.kernels), func(i int) bool { return w.kernels[i].dev >= dev })
		kh := sort.Search(len(w.kernels), func(i int) bool { return w.kernels[i].dev > dev })
		h.analyseDevice(int(dev), w.lanes[lo:hi], w.kernels[kl:kh], lanesSeen)
		lo = hi
	}
	now := h.now().UnixNano()
	for key, n := range lanesSeen {
		h.settleLane(key, n, now)
	}
	h.moved()
	sort.Slice(g.out.LargestGaps, func(a, b int) bool {
		if g.out.LargestGaps[a].Device != g.out.LargestGaps[b].Device {
			return g.out.LargestGaps[a].Device < g.out.LargestGaps[b].Device
		}
		return g.out.LargestGaps[a].Duration > g.out.LargestGaps[b].Duration
	})
}

// analyseDevice measures a window's lane spans on one device against its
// kernels (sorted by start). Caller holds the harvest lock.
func (h *Hub) analyseDevice(dev int, lanes []winLane, ks []winKernel, seen map[[2]int32]int64) {
	g := &h.gt
	// The device's busy runs: kernel intervals merged across streams.
	runs := g.merged[:0]
	for i := range ks {
		k := &ks[i]
		if n := len(runs); n > 0 && k.start <= runs[n-1].end {
			if k.end > runs[n-1].end {
				runs[n-1].end, runs[n-1].last = k.end, k.name
			}
			continue
		}
		runs = append(runs, busyRun{start: k.start, end: k.end, first: k.name, last: k.name})
	}
	g.merged = runs
	gaps := g.gaps[dev]
	if gaps == nil {
		gaps = &Aggregate{Device: dev, Name: "gap"}
		g.gaps[dev] = gaps
		g.gapDevs = append(g.gapDevs, dev)
		slices.Sort(g.gapDevs)
	}
	var top []KernelGap
	steps := map[uint64]*StepGPUTime{}
	var lastStep uint64
	for i := range lanes {
		ln := &lanes[i]
		if ln.start == 0 {
			g.totals.Unplaced++
			continue
		}
		s, e := ln.start, ln.start+ln.dur
		// Busy: the runs' overlap with [s, e); gaps: between runs inside it.
		var busy, inGaps int64
		j := sort.Search(len(runs), func(j int) bool { return runs[j].end > s })
		for ; j < len(runs) && runs[j].start < e; j++ {
			busy += min(runs[j].end, e) - max(runs[j].start, s)
			if j+1 < len(runs) && runs[j+1].start < e {
				gap := runs[j+1].start - runs[j].end
				inGaps += gap
				h.win.add(seriesKey(dev, true, gapIndex), gaps.observe(gap))
				top = append(top, KernelGap{Device: dev, Lane: h.lanes[ln.lane], Step: ln.step, StartNs: runs[j].end,
					Duration: time.Duration(gap), Before: h.kernelNames[runs[j].last], After: h.kernelNames[runs[j+1].first]})
			}
		}
		busy = min(busy, ln.dur)
		ln.span.GPUTimed, ln.span.BusyNs, ln.span.IdleNs = true, busy, ln.dur-busy
		key := [2]int32{int32(dev), ln.lane}
		t := g.lanes[key]
		if t == nil {
			t = &laneTotals{}
			g.lanes[key] = t
			g.laneKeys = append(g.laneKeys, key)
			slices.SortFunc(g.laneKeys, func(a, b [2]int32) int {
				if c := cmp.Compare(a[0], b[0]); c != 0 {
					return c
				}
				return cmp.Compare(a[1], b[1])
			})
		}
		t.spans++
		t.time += ln.dur
		t.busy += busy
		t.idle += ln.dur - busy
		t.gaps += min(inGaps, ln.dur-busy)
		r := &t.recent[t.windows%GPUTimeRecentWindows]
		if seen[key] == 0 {
			*r = struct{ time, busy int64 }{}
		}
		r.time += ln.dur
		r.busy += busy
		seen[key]++
		// Each kernel's time inside the span.
		sh := g.shares[key]
		if sh == nil {
			sh = make(map[int32]int64)
			g.shares[key] = sh
		}
		ls := g.launches[key]
		if ls == nil {
			ls = make(map[launchKey]int64)
			g.launches[key] = ls
		}
		for n := range g.nth {
			delete(g.nth, n)
		}
		for k := range ks {
			if ks[k].start >= e {
				break
			}
			if d := min(ks[k].end, e) - max(ks[k].start, s); d > 0 {
				name := ks[k].name
				sh[name] += d
				g.nth[name]++
				ls[launchKey{name, g.nth[name]}] += d
			}
		}
		st := steps[ln.step]
		if st == nil {
			st = &StepGPUTime{Device: dev, Step: ln.step, StartNs: s}
			steps[ln.step] = st
		}
		st.StartNs = min(st.StartNs, s)
		st.Extent = max(st.Extent, time.Duration(e-st.StartNs))
		lastStep = max(lastStep, ln.step)
	}
	// Steps: extents over their lanes and kernels, busy from the runs.
	for i := range ks {
		if st := steps[ks[i].step]; st != nil {
			st.Kernels++
			if ks[i].start < st.StartNs {
				st.Extent += time.Duration(st.StartNs - ks[i].start)
				st.StartNs = ks[i].start
			}
			st.Extent = max(st.Extent, time.Duration(ks[i].end-st.StartNs))
		}
	}
	order := make([]uint64, 0, len(steps))
	for s := range steps {
		order = append(order, s)
	}
	sort.Slice(order, func(a, b int) bool { return order[a] < order[b] })
	for _, s := range order {
		st := steps[s]
		lo, hi := st.StartNs, st.StartNs+int64(st.Extent)
		var busy int64
		for j := sort.Search(len(runs), func(j int) bool { return runs[j].end > lo }); j < len(runs) && runs[j].start < hi; j++ {
			busy += min(runs[j].end, hi) - max(runs[j].start, lo)
		}
		st.Busy = time.Duration(busy)
		g.out.Steps = append(g.out.Steps, *st)
	}
	sort.Slice(top, func(a, b int) bool { return top[a].Duration > top[b].Duration })
	g.out.LargestGaps = append(g.out.LargestGaps, top[:min(len(top), GPUTimeLargestGaps)]...)
	// The last step's timeline.
	tl := Timeline{Device: dev, Step: lastStep}
	if st := steps[lastStep]; st != nil {
		for i := range lanes {
			if ln := &lanes[i]; ln.step == lastStep && ln.start != 0 {
				tl.Lanes = append(tl.Lanes, TimelineLane{Lane: h.lanes[ln.lane], StartNs: ln.start, EndNs: ln.start + ln.dur, Busy: time.Duration(ln.span.BusyNs)})
			}
		}
		lo, hi := st.StartNs, st.StartNs+int64(st.Extent)
		for i := range ks {
			if k := &ks[i]; k.end > lo && k.start < hi {
				if len(tl.Kernels) >= GPUTimeTimelineKernels {
					tl.Cut++
					continue
				}
				tl.Kernels = append(tl.Kernels, TimelineKernel{Stream: k.stream, Kernel: h.kernelNames[k.name], StartNs: k.start, EndNs: k.end})
			}
		}
	}
	g.out.Timelines = append(g.out.Timelines, tl)
}

// settleLane finishes a lane's window: its recent totals, kernel shares
// and moves. now: Unix ns. Caller holds the harvest lock.
func (h *Hub) settleLane(key [2]int32, spans int64, now int64) {
	g := &h.gt
	t := g.lanes[key]
	t.windows++
	first := t.lastNs == 0
	dt := float64(now - t.lastNs)
	t.lastNs = now
	sh := g.shares[key]
	var total int64
	t.kernels = t.kernels[:0]
	for name, ns := range sh {
		total += ns
		t.kernels = append(t.kernels, KernelShare{Kernel: h.kernelNames[name], Time: time.Duration(ns)})
	}
	sort.Slice(t.kernels, func(a, b int) bool {
		if t.kernels[a].Time != t.kernels[b].Time {
			return t.kernels[a].Time > t.kernels[b].Time
		}
		return t.kernels[a].Kernel < t.kernels[b].Kernel
	})
	for i := range t.kernels {
		t.kernels[i].Share = float64(t.kernels[i].Time) / float64(max(total, 1))
	}
	if len(t.kernels) > GPUTimeTopKernels {
		t.kernels = t.kernels[:GPUTimeTopKernels]
	}
	// Moves: each launch's time per span, averaged; a launch absent from
	// this window ran 0 in it. The lane's first window sets the baseline.
	wr := 1 - math.Exp2(-dt/float64(GPUTimeRecentHalfLife))
	wb := 1 - math.Exp2(-dt/float64(GPUTimeBaselineHalfLife))
	ls := g.launches[key]
	if t.moves == nil {
		t.moves = make(map[launchKey]*moveStat)
	}
	for lk, ns := range ls {
		if t.moves[lk] == nil {
			m := &moveStat{}
			if first {
				v := float64(ns) / float64(spans)
				m.recent, m.base = v, v
			}
			t.moves[lk] = m
		}
	}
	if first {
		return
	}
	for lk, m := range t.moves {
		v := float64(ls[lk]) / float64(spans)
		m.recent += wr * (v - m.recent)
		m.base += wb * (v - m.base)
	}
}

// gpuTimeInto fills out with the hub's GPU time, reusing its slices, so
// that a steady exporter's SnapshotInto allocates nothing. Caller holds
// the harvest lock.
func (h *Hub) gpuTimeInto(out *GPUTime) {
	g := &h.gt
	out.Windows, out.Skipped, out.Late, out.Unplaced = g.totals.Windows, g.totals.Skipped, g.totals.Late, g.totals.Unplaced
	out.AnalysisTime = g.totals.AnalysisTime
	out.Steps = append(out.Steps[:0], g.out.Steps...)
	out.LargestGaps = append(out.LargestGaps[:0], g.out.LargestGaps...)
	out.Moved = append(out.Moved[:0], g.out.Moved...)
	out.Timelines = resize(out.Timelines, len(g.out.Timelines))
	for i := range g.out.Timelines {
		src, dst := &g.out.Timelines[i], &out.Timelines[i]
		lanes, kernels := dst.Lanes[:0], dst.Kernels[:0]
		*dst = *src
		dst.Lanes = append(lanes, src.Lanes...)
		dst.Kernels = append(kernels, src.Kernels...)
	}
	out.Lanes = resize(out.Lanes, len(g.laneKeys))
	for i, k := range g.laneKeys {
		t, l := g.lanes[k], &out.Lanes[i]
		kernels := l.Kernels[:0]
		*l = LaneGPUTime{Device: int(k[0]), Lane: h.lanes[k[1]], Spans: t.spans,
			Time: time.Duration(t.time), Busy: time.Duration(t.busy), Idle: time.Duration(t.idle), Gaps: time.Duration(t.gaps),
			Kernels: append(kernels, t.kernels...)}
		for j := 0; j < int(min(t.windows, GPUTimeRecentWindows)); j++ {
			l.RecentTime += time.Duration(t.recent[j].time)
			l.RecentBusy += time.Duration(t.recent[j].busy)
		}
	}
	out.Gaps = out.Gaps[:0]
	for _, d := range g.gapDevs {
		out.Gaps = append(out.Gaps, *g.gaps[d])
	}
}

// resize returns s with length n, its elements kept where it has them.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		s = append(s[:cap(s)], make([]T, n-cap(s))...)
	}
	return s[:n]
}

// moved lists the launches that grew most against their baseline, most
// first. Caller holds the harvest lock.
func (h *Hub) moved() {
	g := &h.gt
	g.out.Moved = g.out.Moved[:0]
	for _, key := range g.laneKeys {
		for lk, m := range g.lanes[key].moves {
			grew := m.recent - m.base
			if grew < float64(GPUTimeMovedMin) || grew < GPUTimeMovedRatio*m.base {
				continue
			}
			g.out.Moved = append(g.out.Moved, KernelMove{Device: int(key[0]), Lane: h.lanes[key[1]], Kernel: h.kernelNames[lk.name], Launch: int(lk.n),
				Recent: time.Duration(m.recent), Baseline: time.Duration(m.base)})
		}
	}
	slices.SortFunc(g.out.Moved, func(a, b KernelMove) int {
		if c := cmp.Compare(b.Recent-b.Baseline, a.Recent-a.Baseline); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Kernel, b.Kernel); c != 0 {
			return c
		}
		return cmp.Compare(a.Launch, b.Launch)
	})
	if len(g.out.Moved) > GPUTimeMovedMax {
		g.out.Moved = g.out.Moved[:GPUTimeMovedMax]
	}
}

// GPUTime returns what kernel windows measured of where the GPU's time
// went. Takes the harvest lock briefly.
func (h *Hub) GPUTime() GPUTime {
	h.mu.Lock()
	defer h.mu.Unlock()
	var g GPUTime
	h.gpuTimeInto(&g)
	return g
}

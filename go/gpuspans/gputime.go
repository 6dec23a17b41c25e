package gpuspans

import (
	"sort"
	"time"
)

// GPU time: what the device did inside each lane span of a kernel window's
// steps, joined from the window's kernel records and the lane spans' event
// pairs, both placed on the host clock (docs/design.md, GPU time). Outside
// windows nothing is known, and nothing here reads as zero for it: a lane
// that no window has measured has no LaneGPUTime.
//
// Busy is the union of the device's kernel intervals, every stream, inside
// the span; idle is the span's event time less busy, split by cause (a
// copy or memset running is idle by cause Copy). The analysis is
// gpuanalysis.go's, the window's gathering gpuwindow.go's, the per-launch
// averages gpumoves.go's.

// LaneGPUTime is what kernel windows measured of one lane on one device.
//
// A window slows the step it measures (CUPTI attached costs every launch),
// so its lane spans are longer than the engine's steps outside windows:
// busy is right inside a window, the lane's time outside one. Each
// window's lane spans are therefore also set against the served time, the
// lane's time per span on the steps around the window (docs/design.md,
// the served step), and the difference is the window's cost.
type LaneGPUTime struct {
	Device int
	Lane   string
	// Spans counts the lane's spans measured; Time, Busy and Idle are
	// their totals (Time == Busy + Idle) as the windows measured them, in
	// every window analysed, the windows' own cost included.
	Spans            uint64
	Time, Busy, Idle time.Duration
	// Gaps is the part of Idle between the lane's kernels; the rest came
	// before its first kernel or after its last: the host launching (in a
	// window a graph launch also pays CUPTI's cost per node, which
	// lengthens the first) or the lane's stream waiting.
	Gaps time.Duration
	// Served totals, since the start, over the windows whose served time
	// was estimated (all but the Unsettled): ServedSpans counts their
	// spans, ServedBusy is their busy time, Served their served time,
	// WindowCost the rest of their event time (what the windows added; a
	// window whose step ran shorter than the served estimate is carried
	// into the next windows' rather than decrease it), and Causes splits
	// the served idle, Served - ServedBusy, by why the device waited.
	ServedSpans                    uint64
	ServedBusy, Served, WindowCost time.Duration
	Causes                         IdleCauses
	// The same over the lane's latest GPUTimeRecentWindows settled
	// windows: RecentSpans counts their spans, RecentTime is their event
	// time (RecentServed + RecentWindowCost, a cost negative where the
	// windows fell on steps shorter than the lane's), RecentBusy their busy time,
	// RecentCauses splits RecentServed - RecentBusy. BusyRatio() is
	// RecentBusy / RecentServed.
	RecentSpans                                            uint64
	RecentTime, RecentBusy, RecentServed, RecentWindowCost time.Duration
	RecentCauses                                           IdleCauses
	// Unsettled counts windows whose served time could not be estimated:
	// the lane's time before and after the window differed by more than
	// GPUTimeServedShift and more than its noise, or no span of the lane
	// ran outside windows near it. Their spans are in Time, Busy and Idle, not in the served totals.
	Unsettled uint64
	// Kernels are the kernels with the most time inside the lane in the
	// latest window that measured it, most first (at most
	// GPUTimeTopKernels), each with its share of the lane's kernel time.
	Kernels []KernelShare
}

// IdleCauses splits a lane's idle time, the part of its span no kernel of
// the device ran, by why the device waited (docs/design.md, idle by cause).
// The parts sum to the idle time they split.
type IdleCauses struct {
	// Host: the device had run out of queued work before the call that
	// launched the next one returned; inside a span, the next work's
	// launch latency after that call too.
	Host time.Duration
	// Launch: the next work was queued (its launch call had returned; at
	// a span's start, the time after the call returned), yet the device
	// had not started it: launch latency.
	Launch time.Duration
	// Copy: copies and memsets ran on the device, and no kernel.
	Copy time.Duration
	// Wait: the next work was queued on a stream that waited on another
	// stream or an event.
	Wait time.Duration
	// Other: nothing recorded explains it.
	Other time.Duration
}

// Total is the idle time the causes split: their sum.
func (c IdleCauses) Total() time.Duration { return c.Host + c.Launch + c.Copy + c.Wait + c.Other }

// Add adds o's parts to c's.
func (c *IdleCauses) Add(o IdleCauses) {
	c.Host += o.Host
	c.Launch += o.Launch
	c.Copy += o.Copy
	c.Wait += o.Wait
	c.Other += o.Other
}

// BusyRatio is the fraction of the lane's served time, over its recent
// settled windows, the device was running kernels: RecentBusy /
// RecentServed; 0 when none settled.
func (l *LaneGPUTime) BusyRatio() float64 {
	if l.RecentServed <= 0 {
		return 0
	}
	return float64(l.RecentBusy) / float64(l.RecentServed)
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
	// Served is the span's served time (0: its window is unsettled);
	// Causes splits its served idle, Served - Busy.
	Served time.Duration
	Causes IdleCauses
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
	// (more than GPUTimeWindowKernels kernels or other records, or
	// GPUTimeWindowLanes lane spans); Late lane spans of a window that landed after its analysis
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
	GPUTimeWindowKernels   = 1 << 16 // kernel records a window keeps for its analysis, and as many others
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

	// A lane keeps the averages of at most GPUTimeLaunchesPerLane
	// launches, the heaviest, and forgets one not run for
	// GPUTimeLaunchForget (its baseline had decayed to a sixteenth).
	GPUTimeLaunchesPerLane = 4096
	GPUTimeLaunchForget    = 4 * GPUTimeBaselineHalfLife

	// The served estimate (docs/design.md, the served step): the kept
	// mean of the lane's latest GPUTimeServedSpans spans outside windows
	// before a window, and of its first ones after, averaged. Means
	// differing by more than GPUTimeServedShift of the smaller, and by more
	// than their noise, leave the window unsettled. A window's analysis
	// waits for its after side up to GPUTimeServedWaitSteps steps past the
	// window, GPUTimeServedWait of time, or the next window, whichever
	// comes first, and settles on the spans it has.
	GPUTimeServedSpans     = 16
	GPUTimeServedShift     = 0.10
	GPUTimeServedWaitSteps = 64
	GPUTimeServedWait      = time.Second
)

// laneTotals is one device's lane's measurements.
type laneTotals struct {
	moves                  launchAverages // by launch: its time per span, now and at the baseline
	spans                  uint64
	time, busy, idle, gaps int64
	recent                 [GPUTimeRecentWindows]settledWindow
	windows                uint64
	settled, unsettled     uint64
	servedSpans            uint64
	servedBusy, served     int64
	cost                   int64
	costCarry              int64      // a negative cost not yet taken out of the counter (<= 0)
	causes                 IdleCauses // the served idle's split, summed
	kernels                []KernelShare
	lastNs                 int64 // host time of its latest window, for the averages' weights
}

// settledWindow is one window's lane in served terms.
type settledWindow struct {
	spans, time, busy, served int64
	causes                    IdleCauses
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

	an gpuAnalysis // the latest window's analysis, and its scratch
}

// settleLane finishes a lane's window, which lw measured: its served
// time from sd, the lane's time outside windows around it (nil: none),
// with its spans in lanes; its recent totals, kernel shares and moves.
// now: Unix ns. Caller holds the harvest lock.
func (h *Hub) settleLane(lw *laneWindow, sd *laneSide, lanes []winLane, now int64) {
	g := &h.gt
	t := g.lanes[lw.key]
	t.windows++
	settled := t.settled
	h.settleServed(t, lw, sd, lanes)
	h.addProfileLane(lw, t, t.settled > settled)
	first := t.lastNs == 0
	dt := float64(now - t.lastNs)
	t.lastNs = now
	sh := lw.shares
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
	t.moves.update(lw.launches, lw.spans, now, dt, first)
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
			ServedSpans: t.servedSpans, ServedBusy: time.Duration(t.servedBusy), Served: time.Duration(t.served), WindowCost: time.Duration(t.cost), Causes: t.causes,
			Unsettled: t.unsettled, Kernels: append(kernels, t.kernels...)}
		for j := 0; j < int(min(t.settled, GPUTimeRecentWindows)); j++ {
			r := &t.recent[j]
			l.RecentSpans += uint64(r.spans)
			l.RecentTime += time.Duration(r.time)
			l.RecentBusy += time.Duration(r.busy)
			l.RecentServed += time.Duration(r.served)
			l.RecentCauses.Add(r.causes)
		}
		l.RecentWindowCost = l.RecentTime - l.RecentServed
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

// GPUTime returns what kernel windows measured of where the GPU's time
// went. Takes the harvest lock briefly.
func (h *Hub) GPUTime() GPUTime {
	h.mu.Lock()
	defer h.mu.Unlock()
	var g GPUTime
	h.gpuTimeInto(&g)
	return g
}

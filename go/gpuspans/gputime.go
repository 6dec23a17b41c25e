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
)

// laneTotals is one device's lane's measurements.
type laneTotals struct {
	moves                  launchAverages // by launch: its time per span, now and at the baseline
	spans                  uint64
	time, busy, idle, gaps int64
	causes                 IdleCauses // idle's split, summed
	recent                 [GPUTimeRecentWindows]struct{ time, busy int64 }
	windows                uint64
	kernels                []KernelShare
	lastNs                 int64 // host time of its latest window, for the averages' weights
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

// settleLane finishes a lane's window, which lw measured: its recent
// totals, kernel shares and moves. now: Unix ns. Caller holds the harvest
// lock.
func (h *Hub) settleLane(lw *laneWindow, now int64) {
	g := &h.gt
	t := g.lanes[lw.key]
	t.windows++
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
			Kernels: append(kernels, t.kernels...), Causes: t.causes}
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

// GPUTime returns what kernel windows measured of where the GPU's time
// went. Takes the harvest lock briefly.
func (h *Hub) GPUTime() GPUTime {
	h.mu.Lock()
	defer h.mu.Unlock()
	var g GPUTime
	h.gpuTimeInto(&g)
	return g
}

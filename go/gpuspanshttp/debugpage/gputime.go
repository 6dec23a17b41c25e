package debugpage

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/durfmt"
)

// gpuView is the page's "Where the GPU's time went": GPU time per lane,
// the latest window's timelines, its largest gaps, the kernels that moved.
type gpuView struct {
	Windows   uint64
	Lanes     []gpuLaneRow
	Timelines []timeline
	Gaps      []gpuGapRow
	Moved     []gpuMoveRow
}

type gpuLaneRow struct {
	Device      int
	Lane, Ratio string
	Spans       uint64
	Span, Gaps  string // per span measured
	// Per span of the settled windows: served, the windows' cost, busy,
	// and the served idle, whole and by cause.
	Served, Cost, Busy, Idle        string
	Host, Launch, Copy, Wait, Other string
	Unsettled                       uint64
	Kernels                         string
}

type gpuGapRow struct {
	Device        int
	Lane, Gap     string
	Step          uint64
	Before, After string
}

type gpuMoveRow struct {
	Device                 int
	Lane, Kernel           string
	Launch                 int
	Baseline, Recent, Grew string
}

// Timeline geometry: one row per lane, then one per stream, then the gaps.
const (
	tlWidth = 900
	tlLeft  = 110
	tlRight = 16
	tlRow   = 18
	tlTop   = 6
)

// timeline is one window step on one device, drawn: lane spans, each
// stream's kernels, the gaps between kernels inside lanes; each with a
// <title> for hover.
type timeline struct {
	Label         string
	Device        int
	Step          uint64
	Kernels, Cut  int
	Width, Height int
	Extent        string
	Rows          []tlLabel
	Rects         []tlRect
	Ticks         []tlTick
	Base          int
	PlotLeft      int
	PlotRight     int
}

type tlLabel struct {
	Y    int
	Text string
}

type tlRect struct {
	Class      string
	X, Y, W, H float64
	Title      string
}

type tlTick struct {
	X     float64
	Label string
}

func perSpan(d time.Duration, n uint64) string {
	if n == 0 {
		return "-"
	}
	return durfmt.Format(d / time.Duration(n))
}

// newGPUView makes the page's GPU time from a snapshot's; nil before any
// window measured a lane.
func newGPUView(g *gpuspans.GPUTime, multi bool) *gpuView {
	if g.Windows == 0 {
		return nil
	}
	v := &gpuView{Windows: g.Windows}
	for i := range g.Lanes {
		l := &g.Lanes[i]
		ks := ""
		for j, k := range l.Kernels {
			if j == 3 {
				break
			}
			if j > 0 {
				ks += ", "
			}
			ks += fmt.Sprintf("%s %.0f%%", k.Kernel, 100*k.Share)
		}
		ratio := "-" // no window settled: no served time to set busy against
		if l.RecentServed > 0 {
			ratio = strconv.FormatFloat(100*l.BusyRatio(), 'f', 1, 64) + "%"
		}
		n := l.ServedSpans
		v.Lanes = append(v.Lanes, gpuLaneRow{Device: l.Device, Lane: l.Lane, Ratio: ratio,
			Spans: l.Spans, Span: perSpan(l.Time, l.Spans), Gaps: perSpan(l.Gaps, l.Spans),
			Served: perSpan(l.Served, n), Cost: perSpan(l.WindowCost, n), Busy: perSpan(l.ServedBusy, n), Idle: perSpan(l.Served-l.ServedBusy, n),
			Host: perSpan(l.Causes.Host, n), Launch: perSpan(l.Causes.Launch, n), Copy: perSpan(l.Causes.Copy, n),
			Wait: perSpan(l.Causes.Wait, n), Other: perSpan(l.Causes.Other, n), Unsettled: l.Unsettled, Kernels: ks})
	}
	for _, x := range g.LargestGaps {
		v.Gaps = append(v.Gaps, gpuGapRow{Device: x.Device, Lane: x.Lane, Gap: durfmt.Format(x.Duration), Step: x.Step, Before: x.Before, After: x.After})
	}
	for _, m := range g.Moved {
		v.Moved = append(v.Moved, gpuMoveRow{Device: m.Device, Lane: m.Lane, Kernel: m.Kernel, Launch: m.Launch,
			Baseline: durfmt.Format(m.Baseline), Recent: durfmt.Format(m.Recent), Grew: durfmt.Format(m.Recent - m.Baseline)})
	}
	for i := range g.Timelines {
		if t := newTimeline(&g.Timelines[i], multi); t != nil {
			v.Timelines = append(v.Timelines, *t)
		}
	}
	return v
}

// newTimeline draws one window step; nil for one with nothing to draw.
func newTimeline(t *gpuspans.Timeline, multi bool) *timeline {
	if len(t.Lanes) == 0 && len(t.Kernels) == 0 {
		return nil
	}
	lo, hi := int64(1<<62), int64(-1<<62)
	for _, l := range t.Lanes {
		lo, hi = min(lo, l.StartNs), max(hi, l.EndNs)
	}
	for _, k := range t.Kernels {
		lo, hi = min(lo, k.StartNs), max(hi, k.EndNs)
	}
	if hi <= lo {
		hi = lo + 1
	}
	var streams []uint32
	seen := map[uint32]bool{}
	for _, k := range t.Kernels {
		if !seen[k.Stream] {
			seen[k.Stream] = true
			streams = append(streams, k.Stream)
		}
	}
	sort.Slice(streams, func(a, b int) bool { return streams[a] < streams[b] })
	lanes := []string{}
	laneRow := map[string]int{}
	for _, l := range t.Lanes {
		if _, ok := laneRow[l.Lane]; !ok {
			laneRow[l.Lane] = len(lanes)
			lanes = append(lanes, l.Lane)
		}
	}
	// A row of the lanes as served, when a lane's window settled.
	served := 0
	for _, l := range t.Lanes {
		if l.Served > 0 {
			served = 1
		}
	}
	rows := len(lanes) + served + len(streams) + 1
	tl := &timeline{Device: t.Device, Step: t.Step, Kernels: len(t.Kernels), Cut: t.Cut, Width: tlWidth,
		Height: tlTop + rows*tlRow + 22, Extent: durfmt.Format(time.Duration(hi - lo)), PlotLeft: tlLeft, PlotRight: tlWidth - tlRight}
	tl.Label = "step " + strconv.FormatUint(t.Step, 10)
	if multi {
		tl.Label = "gpu " + strconv.Itoa(t.Device) + ", " + tl.Label
	}
	tl.Base = tlTop + rows*tlRow
	scale := float64(tlWidth-tlLeft-tlRight) / float64(hi-lo)
	x := func(ns int64) float64 { return tlLeft + float64(ns-lo)*scale }
	w := func(a, b int64) float64 { return max(float64(b-a)*scale, 0.5) }
	y := func(row int) float64 { return float64(tlTop + row*tlRow + 2) }
	for i, l := range lanes {
		tl.Rows = append(tl.Rows, tlLabel{Y: tlTop + i*tlRow + 13, Text: "lane " + l})
	}
	if served > 0 {
		tl.Rows = append(tl.Rows, tlLabel{Y: tlTop + len(lanes)*tlRow + 13, Text: "as served"})
	}
	for i, s := range streams {
		tl.Rows = append(tl.Rows, tlLabel{Y: tlTop + (len(lanes)+served+i)*tlRow + 13, Text: "stream " + strconv.FormatUint(uint64(s), 10)})
	}
	tl.Rows = append(tl.Rows, tlLabel{Y: tlTop + (rows-1)*tlRow + 13, Text: "gaps"})
	for _, l := range t.Lanes {
		tl.Rects = append(tl.Rects, tlRect{Class: "lane", X: x(l.StartNs), Y: y(laneRow[l.Lane]), W: w(l.StartNs, l.EndNs), H: tlRow - 4,
			Title: fmt.Sprintf("lane %s: %s, busy %s, starting %s into the step", l.Lane, durfmt.Format(time.Duration(l.EndNs-l.StartNs)), durfmt.Format(l.Busy), durfmt.Format(time.Duration(l.StartNs-lo)))})
	}
	// As served: from each lane's start, its busy time, then its served
	// idle by cause (not placed in time: how much, not where), then the
	// window's cost up to its measured end.
	for _, l := range t.Lanes {
		if l.Served <= 0 {
			continue
		}
		at := l.StartNs
		c := &l.Causes
		for _, p := range [...]struct {
			class, what string
			d           time.Duration
		}{{"srv-busy", "busy", l.Busy}, {"cause-host", "idle, the host", c.Host}, {"cause-launch", "idle, launch latency", c.Launch},
			{"cause-copy", "idle, copies", c.Copy}, {"cause-wait", "idle, waits on another stream", c.Wait}, {"cause-other", "idle, other", c.Other},
			{"cost", "the window's cost", time.Duration(l.EndNs-l.StartNs) - l.Served}} {
			if p.d <= 0 {
				continue
			}
			end := at + int64(p.d)
			tl.Rects = append(tl.Rects, tlRect{Class: p.class, X: x(at), Y: y(len(lanes)), W: w(at, end), H: tlRow - 4,
				Title: fmt.Sprintf("lane %s as served (%s of %s measured): %s %s", l.Lane, durfmt.Format(l.Served), durfmt.Format(time.Duration(l.EndNs-l.StartNs)), p.what, durfmt.Format(p.d))})
			at = end
		}
	}
	streamRow := map[uint32]int{}
	for i, s := range streams {
		streamRow[s] = len(lanes) + served + i
	}
	for _, k := range t.Kernels {
		tl.Rects = append(tl.Rects, tlRect{Class: "kernel", X: x(k.StartNs), Y: y(streamRow[k.Stream]), W: w(k.StartNs, k.EndNs), H: tlRow - 4,
			Title: fmt.Sprintf("%s: %s, starting %s into the step", k.Kernel, durfmt.Format(time.Duration(k.EndNs-k.StartNs)), durfmt.Format(time.Duration(k.StartNs-lo)))})
	}
	// The gaps: between the device's busy runs, inside a lane span.
	ks := append([]gpuspans.TimelineKernel(nil), t.Kernels...)
	sort.Slice(ks, func(a, b int) bool { return ks[a].StartNs < ks[b].StartNs })
	end, last := int64(0), ""
	for i, k := range ks {
		if i > 0 && k.StartNs > end && insideLane(t.Lanes, end, k.StartNs) {
			tl.Rects = append(tl.Rects, tlRect{Class: "gap", X: x(end), Y: y(rows - 1), W: w(end, k.StartNs), H: tlRow - 4,
				Title: fmt.Sprintf("gap %s between %s and %s", durfmt.Format(time.Duration(k.StartNs-end)), last, k.Kernel)})
		}
		if i == 0 || k.EndNs > end {
			end, last = k.EndNs, k.Kernel
		}
	}
	for i := 0; i <= 4; i++ {
		ns := lo + (hi-lo)*int64(i)/4
		tl.Ticks = append(tl.Ticks, tlTick{X: x(ns), Label: durfmt.Format(time.Duration(ns - lo))})
	}
	return tl
}

// insideLane reports whether [a, b) lies within one lane span.
func insideLane(lanes []gpuspans.TimelineLane, a, b int64) bool {
	for _, l := range lanes {
		if l.StartNs <= a && b <= l.EndNs {
			return true
		}
	}
	return false
}

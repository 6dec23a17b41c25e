package debugpage

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/durfmt"
)

// Histogram geometry, in SVG user units. The plot leaves room on the left
// for the count axis and below for the bucket labels.
const (
	svgWidth   = 420
	svgHeight  = 150
	plotLeft   = 44
	plotRight  = 24
	plotTop    = 18
	plotBottom = 30
	minBars    = 6 // at least this many buckets are drawn, so one bar is not the whole chart
)

// page is what the HTML template renders.
type page struct {
	Title     string
	Backend   string
	Host      string // the request's Host, for the control examples
	Time      string
	RefreshMS int64
	Snap      snapshotJSON
	ArmedText string
	Multi     bool
	Lanes     []hist
	Kernels   []hist
	Rows      []row
	Dropped   []named
	Misuse    []named
	Windows   []string // the recent windows' headings: "last 1m", or "last 40s" while one fills
	DropCard  dropCard
	Trends    []trend // per lane, p50 and p99 over the hub's recent windows
	GPU       *gpuView
	Profile   *profileView
	Requests  *requestsView
}

// trend is one lane's p50 and p99 in each of the hub's recent windows,
// drawn as two lines over time, a gap where a window had no span.
type trend struct {
	Label, Name string
	Device      int
	Windows     int    // windows with spans of the lane
	Span        string // how far back the windows reach
	YMax        string
	P50, P99    string // SVG path data
	Width       int
	Height      int
	PlotLeft    int
	PlotRight   int
	PlotTop     int
	Base        int
}

// Trend chart geometry, in SVG user units.
const (
	trendHeight = 110
	trendBottom = 18
)

// dropCard sums up lost spans at the top of the page: a starved run must
// not look healthy.
type dropCard struct {
	Total  uint64 // since start, every reason but capturing
	Share  string // of spans begun
	Recent string // the last minute's drops per second by reason, or why unknown
	Alarm  bool
}

type named struct {
	Name, Help string
	Value      uint64
	Alarm      bool // a nonzero value means something is wrong (not so for capturing: that is the safety working)
}

type row struct {
	Kind, Name, Device, Count, P50, P99, Max, Mean string
	Recent                                         []windowCell // per recent window, beside since-start
	lane                                           bool
	agg                                            *gpuspans.Aggregate
}

// windowCell is one row's quantiles over a recent window.
type windowCell struct{ Count, P50, P99 string }

// hist is one histogram, drawn as an inline SVG bar chart over display
// buckets: the hub's buckets eight at a time, four to a doubling.
type hist struct {
	Kind, Name string
	Device     int
	Label      string
	Count      uint64
	P50, P99   string
	Max        string
	Width      int
	Height     int
	PlotLeft   int
	PlotRight  int // x of the plot's right edge
	PlotTop    int
	Base       int // y of the x axis
	TickY      int // y of the bucket labels
	TickMark   int // y where a tick mark below the axis ends
	YMax       uint64
	Bars       []bar
	Ticks      []tick
	Markers    []marker
}

// tick labels a bucket edge on the x axis, so a bar reads as "between
// these two".
type tick struct {
	X     float64
	Label string
}

type bar struct {
	X, Y, W, H  float64
	Title       string // tooltip
	Count       uint64
	Overflowing bool
}

type marker struct {
	X      float64
	Name   string
	Value  string
	Anchor string // p50's label sits left of its line and p99's right, so close ones stay legible
}

// bucketLabel names bucket i by its upper bound ("<=1ms"), the last one by
// its lower bound.
func bucketLabel(bounds []time.Duration, i int) string {
	if i >= len(bounds) {
		return ">" + durfmt.Format(bounds[len(bounds)-1])
	}
	return durfmt.Format(bounds[i])
}

// perDisplay is how many of the hub's buckets one bar draws: 2^(1/4) wide
// bars fit a lane's spread on a card, where 992 hub buckets would not.
const perDisplay = 8

// numDisplay is the number of display buckets; the last is drawn open-ended
// (it holds everything the hub clamps too).
const numDisplay = gpuspans.NumBuckets / perDisplay

// displayBounds are the display buckets' upper bounds, but the last's.
var displayBounds = func() []time.Duration {
	b := make([]time.Duration, numDisplay-1)
	for j := range b {
		b[j] = time.Duration(gpuspans.BucketUpperBound(perDisplay*j+perDisplay-1) * 1e9)
	}
	return b
}()

// display sums a's buckets into display buckets, the zero bucket into the
// first.
func display(a *gpuspans.Aggregate) *[numDisplay]uint64 {
	var d [numDisplay]uint64
	d[0] = a.ZeroCount
	for i, c := range a.Buckets {
		d[i/perDisplay] += c
	}
	return &d
}

// bucketRange picks the buckets to draw: the non-empty ones with one empty
// neighbour each side, widened to minBars.
func bucketRange(counts *[numDisplay]uint64) (lo, hi int) {
	lo, hi = -1, -1
	for i, c := range counts {
		if c == 0 {
			continue
		}
		if lo < 0 {
			lo = i
		}
		hi = i
	}
	if lo < 0 {
		return 0, minBars - 1
	}
	if lo > 0 {
		lo--
	}
	if hi < numDisplay-1 {
		hi++
	}
	for hi-lo+1 < minBars {
		if lo > 0 {
			lo--
		}
		if hi-lo+1 < minBars && hi < numDisplay-1 {
			hi++
		}
	}
	return lo, hi
}

// newHist lays out the histogram of a; a nil a draws empty axes for a lane
// with no span yet.
func newHist(kind gpuspans.SpanKind, name string, device int, multi bool, a *gpuspans.Aggregate) hist {
	h := hist{
		Kind: kind.String(), Name: name, Device: device, Label: name,
		Width: svgWidth, Height: svgHeight,
		PlotLeft: plotLeft, PlotRight: svgWidth - plotRight, PlotTop: plotTop,
		Base: svgHeight - plotBottom, TickY: svgHeight - plotBottom + 16, TickMark: svgHeight - plotBottom + 4,
	}
	if multi {
		h.Label = fmt.Sprintf("%s (GPU %d)", name, device)
	}
	empty := gpuspans.Aggregate{}
	if a == nil {
		a = &empty
	}
	h.Count = a.Count
	bounds := displayBounds
	counts := display(a)
	lo, hi := bucketRange(counts)
	n := hi - lo + 1
	plotW := float64(h.PlotRight - h.PlotLeft)
	plotH := float64(h.Base - h.PlotTop)
	slot := plotW / float64(n)
	for i := lo; i <= hi; i++ {
		if c := counts[i]; c > h.YMax {
			h.YMax = c
		}
	}
	every := 1
	if n > 10 {
		every = 2 // keep labels from overlapping
	}
	edge := func(i int) string { // the lower edge of bucket i
		if i == 0 {
			return "0"
		}
		return durfmt.Format(bounds[i-1])
	}
	for i := lo; i <= hi; i++ {
		c := counts[i]
		x := float64(h.PlotLeft) + float64(i-lo)*slot
		height := 0.0
		if h.YMax > 0 {
			height = plotH * float64(c) / float64(h.YMax)
		}
		if c > 0 && height < 1 {
			height = 1 // a bucket with any span stays visible
		}
		lower := edge(i)
		title := fmt.Sprintf("%s: %d spans in (%s, %s]", name, c, lower, bucketLabel(bounds, i))
		if i >= len(bounds) {
			title = fmt.Sprintf("%s: %d spans above %s", name, c, lower)
		}
		h.Bars = append(h.Bars, bar{
			X: x + 1, W: slot - 2, Y: float64(h.Base) - height, H: height,
			Title: title, Count: c, Overflowing: i >= len(bounds),
		})
		if (i-lo)%every == 0 {
			h.Ticks = append(h.Ticks, tick{X: x, Label: lower})
		}
	}
	if (n%every) == 0 && hi < len(bounds) {
		// The right edge of the last bar, unless it is the open-ended one.
		h.Ticks = append(h.Ticks, tick{X: float64(h.PlotRight), Label: durfmt.Format(bounds[hi])})
	}
	if a.Count > 0 {
		p50, p99 := a.Quantile(0.5), a.Quantile(0.99)
		h.P50, h.P99, h.Max = durfmt.Format(p50), durfmt.Format(p99), durfmt.Format(a.Max)
		for _, m := range []struct {
			name, anchor string
			v            time.Duration
		}{{"p50", "end", p50}, {"p99", "start", p99}} {
			h.Markers = append(h.Markers, marker{
				X:    float64(h.PlotLeft) + position(bounds, m.v, lo)*slot,
				Name: m.name, Value: durfmt.Format(m.v), Anchor: m.anchor,
			})
		}
	}
	return h
}

// position places v on the bucket axis, in bucket widths from bucket lo's
// left edge: the bucket that holds it, plus the linear fraction within it.
func position(bounds []time.Duration, v time.Duration, lo int) float64 {
	i := 0
	for i < len(bounds) && v > bounds[i] {
		i++
	}
	var left, right time.Duration
	if i > 0 {
		left = bounds[i-1]
	}
	if i < len(bounds) {
		right = bounds[i]
	} else {
		right = 2 * left // the overflow bucket: draw it as one more doubling
	}
	frac := 0.0
	if right > left {
		frac = float64(v-left) / float64(right-left)
	}
	if frac > 1 {
		frac = 1
	}
	return float64(i-lo) + frac
}

// rowOf is a table row of an aggregate.
func rowOf(kind gpuspans.SpanKind, a *gpuspans.Aggregate) row {
	mean := time.Duration(0)
	if a.Count > 0 {
		mean = a.Sum / time.Duration(a.Count)
	}
	return row{
		Kind: kind.String(), Name: a.Name, Device: strconv.Itoa(a.Device),
		Count: strconv.FormatUint(a.Count, 10),
		P50:   durfmt.Format(a.Quantile(0.5)), P99: durfmt.Format(a.Quantile(0.99)),
		Max: durfmt.Format(a.Max), Mean: durfmt.Format(mean),
	}
}

// newPage builds the page of snapshot s of a hub with the given lanes.
func newPage(s *gpuspans.Snapshot, lanes []string, o *Options, now time.Time) *page {
	p := &page{
		Title:     "gpuspans",
		Backend:   o.Backend,
		Time:      now.Format("15:04:05"),
		RefreshMS: o.Refresh.Milliseconds(),
		Snap:      toJSON(s, o.Backend, now),
	}
	devices := map[int]bool{}
	var order []int
	addDev := func(d int) {
		if !devices[d] {
			devices[d] = true
			order = append(order, d)
		}
	}
	for _, d := range s.Devices {
		addDev(d.Device)
	}
	for _, a := range s.Lanes {
		addDev(a.Device)
	}
	for _, a := range s.Kernels {
		addDev(a.Device)
	}
	p.Multi = len(order) > 1
	if len(order) == 0 {
		order = []int{0} // nothing installed yet: draw the lanes empty
	}
	for _, d := range order {
		for _, name := range lanes {
			var agg *gpuspans.Aggregate
			for i := range s.Lanes {
				if s.Lanes[i].Device == d && s.Lanes[i].Name == name {
					agg = &s.Lanes[i]
				}
			}
			p.Lanes = append(p.Lanes, newHist(gpuspans.KindLane, name, d, p.Multi, agg))
		}
	}
	for i := range s.Kernels {
		// Charts for kernels with spans only: 65 empty ones would bury
		// them. Their zero rows are in the table.
		if a := &s.Kernels[i]; a.Count > 0 {
			p.Kernels = append(p.Kernels, newHist(gpuspans.KindKernel, a.Name, a.Device, p.Multi, a))
		}
	}
	for i := range s.Lanes {
		r := rowOf(gpuspans.KindLane, &s.Lanes[i])
		r.lane, r.agg = true, &s.Lanes[i]
		p.Rows = append(p.Rows, r)
	}
	for i := range s.Kernels {
		r := rowOf(gpuspans.KindKernel, &s.Kernels[i])
		r.agg = &s.Kernels[i]
		p.Rows = append(p.Rows, r)
	}
	if s.Step > 0 {
		p.ArmedText = fmt.Sprintf("%d of %d steps armed (%.1f%%)", s.ArmedSteps, s.Step, 100*float64(s.ArmedSteps)/float64(s.Step))
	} else {
		p.ArmedText = "no step counted yet"
	}
	c := &s.Counters
	help := map[gpuspans.DropReason]string{
		gpuspans.DropSlotBusy:   "the ring's next slot still held an older span: kernels too long, or harvests too rare",
		gpuspans.DropCapturing:  "the stream was being captured into a CUDA graph: nothing was recorded, so the capture stays intact",
		gpuspans.DropRetired:    "the device's recorder was being replaced or removed",
		gpuspans.DropLeaked:     "begun and never ended (a lost KernelSpan, a lane never ended): reclaimed after " + fmt.Sprint(gpuspans.LeakSteps) + " steps",
		gpuspans.DropTracerLost: "kernels the tracer (CUPTI) saw but could not deliver: no buffer in time, or its ring full",
	}
	for r := 0; r < gpuspans.NumDropReasons; r++ {
		p.Dropped = append(p.Dropped, named{
			Name: gpuspans.DropReason(r).String(), Help: help[gpuspans.DropReason(r)], Value: c.Dropped[r],
			Alarm: gpuspans.DropReason(r) != gpuspans.DropCapturing,
		})
	}
	var lost uint64
	for r, n := range c.Dropped {
		if gpuspans.DropReason(r) != gpuspans.DropCapturing {
			lost += n
		}
	}
	p.DropCard = dropCard{Total: lost, Share: "0%", Recent: "recent rate not known yet", Alarm: lost > 0}
	if c.Begun > 0 {
		p.DropCard.Share = strconv.FormatFloat(100*float64(lost)/float64(c.Begun), 'f', 2, 64) + "%"
	}
	p.Misuse = []named{
		{"lane already open", "LaneBegin on a lane already open (ignored)", c.LaneAlreadyOpen, true},
		{"unknown lane", "LaneBegin with an index outside the hub's lanes (ignored)", c.UnknownLane, true},
		{"bad end", "KernelEnd of a span not open on this hub, or reclaimed as leaked (ignored)", c.BadEnd, true},
		{"install failures", "event pools that could not be opened", c.InstallFailures, true},
		{"sticky disables", "recorders turned off by a sticky CUDA error", c.StickyDisables, true},
		{"pool panics", "recorders turned off because a method of their event pool panicked", c.PoolPanics, true},
		{"harvest failures", "harvests that failed as a whole without a sticky error; their spans wait for the next", c.HarvestFailures, true},
		{"abandoned pools", "retired pools given up on while still busy, left unclosed", c.AbandonedPools, true},
	}
	p.GPU = newGPUView(&s.GPUTime, p.Multi)
	p.Profile = newProfileView(&s.Profile)
	p.Requests = newRequestsView(&s.Requests)
	return p
}

// windows are the recent spans of time the page shows beside since-start,
// each made of the hub's recent windows (gpuspans.Hub.Windows) begun within
// it: the newest 50 to 60 s, and 4m50s to 5m.
var windows = [...]time.Duration{time.Minute, 5 * time.Minute}

// minHistory is how far back the hub's windows must reach before the page
// shows quantiles over them.
const minHistory = 5 * time.Second

// addWindows fills the recent-window columns and the drop card's recent
// rate from the hub's recent windows ws (oldest first, the open one last).
func (p *page) addWindows(ws []gpuspans.Window) {
	var end, first time.Time
	if n := len(ws); n > 0 {
		end, first = ws[n-1].End, ws[0].Start
	}
	history := time.Duration(0)
	if !first.IsZero() {
		history = end.Sub(first)
	}
	type rowKey struct {
		lane   bool
		device int
		name   string
	}
	rowOf := make(map[rowKey]int, len(p.Rows))
	for i := range p.Rows {
		rowOf[rowKey{p.Rows[i].lane, p.Rows[i].agg.Device, p.Rows[i].agg.Name}] = i
	}
	merged := make([]gpuspans.Aggregate, len(p.Rows))
	for wi, d := range windows {
		if history < minHistory {
			p.Windows = append(p.Windows, "last "+shortDuration(d)+": filling")
			for i := range p.Rows {
				p.Rows[i].Recent = append(p.Rows[i].Recent, windowCell{"–", "–", "–"})
			}
			continue
		}
		label := "last " + shortDuration(d)
		if history < d {
			label = "last " + shortDuration(history.Round(time.Second))
		}
		p.Windows = append(p.Windows, label)
		for i := range merged {
			merged[i] = gpuspans.Aggregate{}
		}
		var dropped [gpuspans.NumDropReasons]uint64
		recent := gpuspans.WindowsWithin(ws, d)
		for _, w := range recent {
			for l, list := range [][]gpuspans.WindowAggregate{w.Lanes, w.Kernels} {
				for j := range list {
					if i, ok := rowOf[rowKey{l == 0, list[j].Device, list[j].Name}]; ok {
						list[j].AddTo(&merged[i])
					}
				}
			}
			for r, n := range w.Dropped {
				dropped[r] += n
			}
		}
		for i := range p.Rows {
			w := &merged[i]
			cell := windowCell{Count: strconv.FormatUint(w.Count, 10), P50: "–", P99: "–"}
			if w.Count > 0 {
				cell.P50, cell.P99 = durfmt.Format(w.Quantile(0.5)), durfmt.Format(w.Quantile(0.99))
			}
			p.Rows[i].Recent = append(p.Rows[i].Recent, cell)
		}
		if wi != 0 {
			continue
		}
		span := d
		if len(recent) > 0 {
			span = end.Sub(recent[0].Start)
		}
		var parts []string
		alarm := false
		for r, n := range dropped {
			alarm = alarm || (n > 0 && gpuspans.DropReason(r) != gpuspans.DropCapturing)
			parts = append(parts, fmt.Sprintf("%s %.1f/s", gpuspans.DropReason(r), float64(n)/span.Seconds()))
		}
		p.DropCard.Recent = label + ": " + strings.Join(parts, ", ")
		p.DropCard.Alarm = alarm
	}
}

// addTrends draws each lane's p50 and p99 over the hub's recent windows ws
// (oldest first), x by the windows' middles, from the oldest's start to
// the newest's end.
func (p *page) addTrends(ws []gpuspans.Window) {
	if len(ws) == 0 || ws[0].Start.IsZero() {
		return
	}
	t0, t1 := ws[0].Start, ws[len(ws)-1].End
	if !t1.After(t0) {
		return
	}
	for _, h := range p.Lanes {
		tr := trend{Label: h.Label, Name: h.Name, Device: h.Device, Span: shortDuration(t1.Sub(t0).Round(time.Second)),
			Width: svgWidth, Height: trendHeight, PlotLeft: plotLeft, PlotRight: svgWidth - plotRight, PlotTop: plotTop,
			Base: trendHeight - trendBottom}
		p50 := make([]time.Duration, len(ws))
		p99 := make([]time.Duration, len(ws))
		var ymax time.Duration
		for i := range ws {
			for j := range ws[i].Lanes {
				if a := &ws[i].Lanes[j]; a.Device == h.Device && a.Name == h.Name && a.Count > 0 {
					p50[i], p99[i] = a.Quantile(0.5), a.Quantile(0.99)
					ymax = max(ymax, p99[i])
					tr.Windows++
				}
			}
		}
		if ymax == 0 {
			continue
		}
		tr.YMax = durfmt.Format(ymax)
		xs := float64(tr.PlotRight - tr.PlotLeft)
		ys := float64(tr.Base - tr.PlotTop)
		path := func(v []time.Duration) string {
			var b strings.Builder
			move := true
			for i, d := range v {
				if d == 0 {
					move = true
					continue
				}
				mid := ws[i].Start.Add(ws[i].End.Sub(ws[i].Start) / 2)
				x := float64(tr.PlotLeft) + xs*float64(mid.Sub(t0))/float64(t1.Sub(t0))
				y := float64(tr.Base) - ys*float64(d)/float64(ymax)
				cmd := "L"
				if move {
					cmd, move = "M", false
				}
				fmt.Fprintf(&b, "%s%.1f %.1f ", cmd, x, y)
			}
			return strings.TrimSpace(b.String())
		}
		tr.P50, tr.P99 = path(p50), path(p99)
		p.Trends = append(p.Trends, tr)
	}
}

// shortDuration writes whole minutes as "5m", anything else in seconds.
func shortDuration(d time.Duration) string {
	if d >= time.Minute && d%time.Minute == 0 {
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.Itoa(int(d/time.Second)) + "s"
}

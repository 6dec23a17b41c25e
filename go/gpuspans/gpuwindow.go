package gpuspans

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// A kernel window's records and lane spans, gathered as they land and held
// until the window can be analysed (docs/design.md, GPU time: held until
// analysed), then measured (gpuAnalysis) and sent on to the recent ring.

// winLane is a lane span of a window step, held for its window's analysis.
type winLane struct {
	dev, lane int32
	step      uint64
	start     int64 // Unix ns; 0: not placed
	dur       int64
	span      Span // as it enters the recent ring once analysed
}

// winKernel is a record of a window step: a kernel, a copy or memset, or
// a launch call (kind).
type winKernel struct {
	start, end int64 // Unix ns
	step       uint64
	dev, name  int32 // name: the kernel aggregate index
	stream     uint32
	graph      uint32
	corr       uint32 // the launch call's correlation id
	kind       backend.RecordKind
}

// gpuWindow gathers one window's lane spans and kernels.
type gpuWindow struct {
	seq       uint64
	lanes     []winLane
	kernels   []winKernel // records of every kind
	others    int         // of them, copies, memsets and launch calls
	overflow  bool
	finished  bool
	harvested bool // a harvest began after it finished: its lane spans have landed
	sides     []laneSide
	readyAt   int64 // Unix ns: when a harvest first found it finished
}

// laneSide is a window's lane's time outside windows: its spans' durations
// before the window (the latest, when its first span of the window landed)
// and after it (the first).
type laneSide struct {
	key           [2]int32
	last          uint64 // the lane's latest step in the window
	before, after [GPUTimeServedSpans]int64
	nb, na        int32
}

// outsideLane is one device's lane outside windows: its latest span
// durations, and the window that takes its next ones as its after side.
// Guarded by the harvest lock.
type outsideLane struct {
	ring [GPUTimeServedSpans]int64
	n    uint64
	w    *gpuWindow
	seq  uint64 // w's Seq when it took the lane (windows are reused)
	side int32  // in w.sides
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
		*w = gpuWindow{seq: seq, lanes: w.lanes[:0], kernels: w.kernels[:0], sides: w.sides[:0]}
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

// holdLane keeps a landed lane span of a step of window seq for the
// window's analysis; false when it is not kept (it goes to the recent ring
// now). Caller holds the harvest lock.
func (h *Hub) holdLane(seq uint64, device int, lane uint64, s *Span) bool {
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
	o := h.outsideLane(device, lane)
	if o == nil {
		return true
	}
	if o.w == w && o.seq == w.seq {
		sd := &w.sides[o.side]
		sd.last = max(sd.last, s.Step)
		return true
	}
	// The lane's first span of the window: a lane's spans land in the
	// order they ran (one stream), so its ring holds only spans before
	// the window, and the window before, if any, takes no more after it.
	w.sides = append(w.sides, laneSide{key: [2]int32{int32(device), int32(lane)}, last: s.Step})
	sd := &w.sides[len(w.sides)-1]
	for i := uint64(0); i < min(o.n, GPUTimeServedSpans); i++ {
		sd.before[i] = o.ring[(o.n-1-i)%GPUTimeServedSpans]
	}
	sd.nb = int32(min(o.n, GPUTimeServedSpans))
	o.w, o.seq, o.side = w, w.seq, int32(len(w.sides)-1)
	return true
}

// landOutside notes a lane span of a step outside windows: the lane's
// ring, and the after side of the window before it while that waits.
// Caller holds the harvest lock.
func (h *Hub) landOutside(device int, lane uint64, step uint64, dur int64) {
	o := h.outsideLane(device, lane)
	if o == nil {
		return
	}
	o.ring[o.n%GPUTimeServedSpans] = dur
	o.n++
	if w := o.w; w != nil && w.seq == o.seq && w.seq > h.gt.done {
		if sd := &w.sides[o.side]; step > sd.last && sd.na < GPUTimeServedSpans {
			sd.after[sd.na] = dur
			sd.na++
		}
	}
}

// outsideLane returns a device's lane's state outside windows; nil without
// a kernel tracer (no window ever opens) or for a lane out of range.
// Caller holds the harvest lock.
func (h *Hub) outsideLane(device int, lane uint64) *outsideLane {
	d := h.devs[device]
	if d == nil || lane >= uint64(len(d.outside)) {
		return nil
	}
	return &d.outside[lane]
}

// holdKernel keeps a traced record of a window step for its window's
// analysis, after which a kernel reaches the recent ring behind the
// window's lane spans (exporters nest kernels in the lanes they have
// seen); false when it is not kept (a kernel then goes to the recent ring
// now). A window keeps GPUTimeWindowKernels kernels and as many other
// records. Caller holds the harvest lock.
func (h *Hub) holdKernel(win uint64, device, idx int, step uint64, r *backend.KernelRecord) bool {
	w := h.gt.window(win)
	if w == nil {
		return false
	}
	other := !isKernel(r.Kind)
	if n := len(w.kernels) - w.others; other && w.others >= GPUTimeWindowKernels || !other && n >= GPUTimeWindowKernels {
		w.overflow = true
		return false
	}
	if other {
		w.others++
	}
	off := h.tl.offset
	w.kernels = append(w.kernels, winKernel{start: r.StartNs + off, end: max(r.EndNs, r.StartNs) + off, step: step,
		dev: int32(device), name: int32(idx), stream: r.Stream, graph: r.Graph, corr: r.Correlation, kind: r.Kind})
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
	now := h.now().UnixNano()
	// Without a background harvester this runs in BeginStep: one window
	// analysed a harvest, the next ones at the next steps.
	bg, analysed := h.background.Load(), 0
	kept := g.open[:0]
	for i, w := range g.open {
		// A window that never finishes (its tracer failed) gives its lane
		// spans up to the recent ring once newer ones pile up.
		if len(g.open)-i > recentWindows {
			w.harvested, w.overflow = true, true
		}
		if w.finished && w.readyAt == 0 {
			w.readyAt = now
		}
		landed := w.harvested || w.finished && !h.lanesPending(w.seq)
		ready := landed && (w.overflow || h.sidesReady(w, i < len(g.open)-1, now))
		switch {
		case ready && !bg && analysed > 0 && !w.overflow:
			kept = append(kept, w)
		case ready:
			if !w.overflow {
				analysed++
			}
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

// sidesReady reports whether window w's lanes have their after sides:
// GPUTimeServedSpans spans each, or the wait is over (GPUTimeServedWait
// since the window finished, GPUTimeServedWaitSteps steps past a lane's
// last, or a newer window began). now: Unix ns. Caller holds the harvest
// lock.
func (h *Hub) sidesReady(w *gpuWindow, newer bool, now int64) bool {
	if newer || now-w.readyAt >= int64(GPUTimeServedWait) {
		return true
	}
	step := h.step.Load()
	for i := range w.sides {
		if sd := &w.sides[i]; sd.na < GPUTimeServedSpans && step < sd.last+GPUTimeServedWaitSteps {
			return false
		}
	}
	return true
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

// analyse measures one window and sends its lane spans and kernels on to
// the recent ring. Caller holds the harvest lock.
func (h *Hub) analyse(w *gpuWindow) {
	g := &h.gt
	defer func() {
		for i := range w.lanes {
			h.pushRecent(&w.lanes[i].span)
		}
		for i := range w.kernels {
			if k := &w.kernels[i]; isKernel(k.kind) {
				h.pushRecent(&Span{Kind: KindKernel, Name: h.kernelNames[k.name], Device: int(k.dev), Stream: backend.Stream(k.stream),
					Step: k.step, StartNs: k.start, DurationNs: k.end - k.start, Graph: k.graph})
			}
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
	}
	a := &g.an
	a.run(w.lanes, w.kernels, h.kernelNames, h.lanes)
	g.totals.Unplaced += a.unplaced
	for i := range w.lanes {
		if sp := &a.spans[i]; sp.placed {
			w.lanes[i].span.GPUTimed, w.lanes[i].span.BusyNs, w.lanes[i].span.IdleNs = true, sp.busy, sp.idle
		}
	}
	for i := range a.timelines {
		h.gapsOf(a.timelines[i].Device)
	}
	for _, gp := range a.gaps {
		h.win.add(seriesKey(int(gp.dev), true, gapIndex), g.gaps[int(gp.dev)].observe(gp.ns))
	}
	g.out.Steps = append(g.out.Steps[:0], a.steps...)
	g.out.LargestGaps = append(g.out.LargestGaps[:0], a.largest...)
	g.out.Timelines = resize(g.out.Timelines, len(a.timelines))
	for i := range a.timelines {
		src, dst := &a.timelines[i], &g.out.Timelines[i]
		lanes, kernels := dst.Lanes[:0], dst.Kernels[:0]
		*dst = *src
		dst.Lanes = append(lanes, src.Lanes...)
		dst.Kernels = append(kernels, src.Kernels...)
	}
	for i := range a.lanes {
		h.addLaneWindow(&a.lanes[i])
	}
	now := h.now().UnixNano()
	for i := range a.lanes {
		lw := &a.lanes[i]
		var sd *laneSide
		for j := range w.sides {
			if w.sides[j].key == lw.key {
				sd = &w.sides[j]
				break
			}
		}
		h.settleLane(lw, sd, w.lanes, now)
	}
	h.flushProfileWindow()
	h.servedTimelines(w.lanes)
	h.moved()
}

// gapsOf returns device dev's gap histogram, made on first use. Caller
// holds the harvest lock.
func (h *Hub) gapsOf(dev int) *Aggregate {
	g := &h.gt
	gaps := g.gaps[dev]
	if gaps == nil {
		gaps = &Aggregate{Device: dev, Name: "gap"}
		g.gaps[dev] = gaps
		g.gapDevs = append(g.gapDevs, dev)
		slices.Sort(g.gapDevs)
	}
	return gaps
}

// addLaneWindow adds a window's measurements of a lane to its totals, the
// lane made on first use. Caller holds the harvest lock.
func (h *Hub) addLaneWindow(lw *laneWindow) {
	g := &h.gt
	t := g.lanes[lw.key]
	if t == nil {
		t = &laneTotals{}
		g.lanes[lw.key] = t
		g.laneKeys = append(g.laneKeys, lw.key)
		slices.SortFunc(g.laneKeys, func(a, b [2]int32) int {
			if c := cmp.Compare(a[0], b[0]); c != 0 {
				return c
			}
			return cmp.Compare(a[1], b[1])
		})
	}
	t.spans += uint64(lw.spans)
	t.time += lw.time
	t.busy += lw.busy
	t.idle += lw.idle
	t.gaps += lw.gaps
}

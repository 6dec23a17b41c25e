package gpuspans

import (
	"math"
	"sort"
	"time"
)

// Recent windows: the hub keeps what landed in each of its last NumWindows
// windows of WindowLength, whoever reads them, in a ring made at New (and,
// for each device's lanes, at its first Install) and never grown
// (docs/design.md, section 10). A window holds, per lane and kernel of
// every device, the spans landed in it as a sparse histogram of the
// aggregates' own buckets, the gaps between kernels that kernel windows
// measured while it was open (GPUTime.Gaps' recent part), and the hub's
// span outcomes counted in it. Each
// lane of each installed device has cells of its own (LaneWindowCells), so
// that no number of lanes, devices or kernels crowds one out; kernels share
// WindowCells.
const (
	// WindowLength is how long a window lasts. The open window closes at
	// the first harvest at least WindowLength after it opened (harvests
	// come with BeginStep at level Kernel, or RunHarvester's ticks), so one
	// lasts longer only while no harvest runs, when nothing lands.
	WindowLength = 10 * time.Second
	// NumWindows is how many closed windows a hub keeps besides the open
	// one: 5 minutes of them.
	NumWindows = 30
	// WindowCells is how many (kernel, bucket) counts a window holds (and
	// lane ones, for a ring made without New). A window that would fill more than three quarters of them
	// merges its buckets pairwise, as Prometheus lowers a native
	// histogram's schema, halving its resolution (quantiles within 2.2%,
	// then 4.4%, ...); spans past schema 0 with no cell left are counted in
	// Window.Lost. A kernel takes a cell per bucket its spans hit in the
	// window: a few dozen for spans that vary by 25% either way.
	WindowCells = 1024
	// WindowRingBytes is the ring's memory, allocated by New: NumWindows+1
	// windows (the open one too) of WindowCells 8-byte cells and their
	// counters, and one window's cells to merge buckets in. A test holds it
	// to the types' sizes.
	WindowRingBytes = (NumWindows+1)*winBufBytes + WindowCells*8
	winBufBytes     = WindowCells*8 + 136
	// LaneWindowCells is how many buckets a lane of a device holds in a
	// window: 4 doublings at Schema 5 (spans from a quarter to 4 times
	// its median), twice as many at each lower schema, which a lane whose
	// spans spread wider takes on its own (its quantiles within 2.2%,
	// 4.4%, ...), never losing a span. Its quantiles read the recent
	// percentiles of the Prometheus exporter, per lane and device.
	LaneWindowCells = 128
	// LaneWindowBytes is what each lane of each installed device adds to
	// the ring, allocated at the device's first Install: NumWindows+1
	// windows of LaneWindowCells counts. 16 KiB: 48 KiB for 3 lanes, 8 MiB
	// for 64 lanes on 8 devices. A test holds it to the type's size.
	LaneWindowBytes = (NumWindows + 1) * laneHistBytes
	laneHistBytes   = LaneWindowCells*4 + 16
)

// Window is what landed in one recent window: a copy, owned by the caller.
// A recent window is a span of host time (Hub.Windows), unrelated to a
// KernelWindow, the steps during which the kernel tracer collects.
type Window struct {
	Start time.Time // when the window opened (Options.Now's clock)
	End   time.Time // when it closed; for the open one, when it was read
	Open  bool      // the window still open: it grows until it closes
	// Schema is the native-histogram schema of the buckets of Kernels:
	// Schema (5), the aggregates' own, unless the window had more distinct
	// buckets than WindowCells holds and merged them. Each of Lanes has
	// its own (WindowAggregate.Schema).
	Schema int
	// Lost counts kernel spans and gaps landed in the window that it had
	// no cell left for: they are in the aggregates, not in Kernels or
	// Gaps. No lane span is lost.
	Lost uint64
	// Span outcomes counted while the window was open, by every device:
	// as Counters' fields of the same names.
	Begun, Landed, Errored uint64
	Dropped                [NumDropReasons]uint64
	// Lanes and Kernels are the lanes and kernels with spans landed in the
	// window, by device and then as in a Snapshot.
	Lanes, Kernels []WindowAggregate
	// Gaps are, per device (Name "gap"), the gaps between kernels inside
	// lane spans that kernel windows analysed while this window was open
	// measured (those of GPUTime.Gaps), at the window's Schema: they
	// share the kernels' cells.
	Gaps []WindowAggregate
}

// WindowAggregate is the spans of one lane or kernel of one device landed
// in a window: their count and sparse histogram.
type WindowAggregate struct {
	Device    int
	Name      string
	Count     uint64 // ZeroCount plus the bucket counts
	ZeroCount uint64 // spans of at most ZeroThreshold
	// Keys and Counts are the non-empty buckets in order: Counts[i] spans
	// in (2^((Keys[i]-1)/2^Schema), 2^(Keys[i]/2^Schema)] seconds, Schema
	// being the window's; the last key of schema 5 also holds longer ones.
	Keys   []int
	Counts []uint64
	Schema int // a kernel's: the window's; a lane's: its own
}

// Quantile estimates the q-quantile (0 < q < 1) of the spans: the
// geometric middle of the bucket holding the span of rank ceil(q*Count),
// within 1.1% of it at Schema 5 (2.2% at 4, 4.4% at 3, ...), and 30 ns for
// the zero bucket. q <= 0 or q >= 1 take the first or last bucket; an
// empty one gives 0.
func (w *WindowAggregate) Quantile(q float64) time.Duration {
	if w.Count == 0 {
		return 0
	}
	rank := uint64(1)
	switch {
	case !(q < 1): // also catches NaN
		rank = w.Count
	case q > 0:
		rank = uint64(math.Ceil(q * float64(w.Count)))
	}
	if rank < 1 {
		rank = 1
	}
	cum := w.ZeroCount
	if cum >= rank {
		return zeroNs / 2
	}
	for i, c := range w.Counts {
		if cum += c; cum >= rank {
			return keyMiddle(w.Keys[i], w.Schema)
		}
	}
	return keyMiddle(w.Keys[len(w.Keys)-1], w.Schema)
}

// AddTo adds the spans to a, each in the aggregates' bucket at its own
// bucket's geometric middle (its own bucket at Schema 5), so that windows
// merge into an Aggregate whose Quantile reads them; a's Min and Max widen
// to the buckets' edges and its Sum is left alone (a window keeps no sums).
func (w *WindowAggregate) AddTo(a *Aggregate) {
	if w.Count == 0 {
		return
	}
	var lo, hi time.Duration
	if w.ZeroCount > 0 {
		a.ZeroCount += w.ZeroCount
		hi = zeroNs
	}
	shift := Schema - w.Schema
	for i, k := range w.Keys {
		// The schema-5 bucket whose upper edge is the middle (the bucket
		// itself at schema 5).
		k5 := k << shift
		if shift > 0 {
			k5 -= 1 << (shift - 1)
		}
		j := min(max(k5-MinBucketKey, 0), NumBuckets-1)
		a.Buckets[j] += w.Counts[i]
		if i == 0 && w.ZeroCount == 0 {
			lo = time.Duration(KeyUpperBound((k-1)<<shift) * 1e9)
		}
		hi = time.Duration(math.Ceil(KeyUpperBound(k<<shift) * 1e9))
	}
	if a.Count == 0 || lo < a.Min {
		a.Min = lo
	}
	if hi > a.Max {
		a.Max = hi
	}
	a.Count += w.Count
}

// keyMiddle is the geometric middle of the bucket of key k at schema s:
// 2^((k-1/2)/2^s) seconds.
func keyMiddle(k, s int) time.Duration {
	return time.Duration(math.Exp2((float64(k)-0.5)/float64(int(1)<<s)) * 1e9)
}

// cell is one count of a window: key 0 is an empty cell, else
// cellUsed | device<<22 | lane-or-kernel<<21 | index<<10 | bucket, bucket
// being 0 for the zero bucket and 1 + the key's offset from the lowest
// key at the window's schema otherwise.
type cell struct {
	key, count uint32
}

const (
	cellUsed    = 1 << 31
	cellKernel  = 1 << 21
	cellBits    = 10 // log2(WindowCells)
	cellMaxUsed = WindowCells * 3 / 4
)

// gapIndex is the kernel index whose cells count a device's gaps between
// kernels: above any kernel's (MaxKernels names and OtherKernel).
const gapIndex = 1<<11 - 1

// No kernel index reaches gapIndex: MaxKernels names and OtherKernel.
const _ = uint(gapIndex - MaxKernels - 1)

// seriesKey is the cell key of a lane (kernel false) or kernel index of
// device, bucket 0; kernel index gapIndex is the device's gaps.
func seriesKey(device int, kernel bool, idx int) uint32 {
	k := cellUsed | uint32(device)<<22 | uint32(idx)<<10
	if kernel {
		k |= cellKernel
	}
	return k
}

// winBuf is one window.
type winBuf struct {
	start, end time.Time
	shift      uint   // Schema minus the window's schema
	used       int    // cells in use
	lost       uint64 // spans with no cell left
	begun      uint64
	landed     uint64
	errored    uint64
	dropped    [NumDropReasons]uint64
	cells      [WindowCells]cell
}

// laneHist is one lane's spans of one device in one window: counts of
// LaneWindowCells consecutive bucket keys from base, at schema
// Schema-shift, and the zero bucket's.
type laneHist struct {
	shift  uint32
	zero   uint32
	n      uint32 // spans in counts
	base   int32  // the key of counts[0]
	counts [LaneWindowCells]uint32
}

// winRing is the hub's recent windows, guarded by the harvest lock.
type winRing struct {
	bufs    []winBuf // NumWindows+1, as a ring: the open one is bufs[cur]
	cur     int
	closed  int                // closed windows held, up to NumWindows
	scratch *[WindowCells]cell // to merge buckets in
	// lanes are each installed device's lane windows, window-major:
	// lanes[dev][buf*nlanes+lane] is lane's of bufs[buf]. A device with
	// none (a ring made without New) keeps its lanes in the cells.
	lanes  [MaxDevices][]laneHist
	nlanes int
	// The hub's span outcomes when the open window opened.
	begun, landed, errored uint64
	dropped                [NumDropReasons]uint64
}

// newWinRing makes the ring, whole: nothing grows it later.
func newWinRing() winRing {
	return winRing{bufs: make([]winBuf, NumWindows+1), scratch: new([WindowCells]cell)}
}

// lowKey is the lowest bucket key at schema Schema-shift.
func lowKey(shift uint) int {
	return (MinBucketKey + 1<<shift - 1) >> shift
}

// addLanes gives device's lanes their windows. Caller holds the harvest
// lock.
func (w *winRing) addLanes(device, nlanes int) {
	if w.lanes[device] == nil && nlanes > 0 {
		w.nlanes = nlanes
		w.lanes[device] = make([]laneHist, len(w.bufs)*nlanes)
	}
}

// add counts a span of bucket i (-1: the zero bucket) for the series of
// key s (seriesKey). Caller holds the harvest lock. Allocates nothing.
func (w *winRing) add(s uint32, i int) {
	if s&cellKernel == 0 {
		if ls := w.lanes[s>>22&(MaxDevices-1)]; ls != nil {
			ls[w.cur*w.nlanes+int(s>>cellBits&(1<<11-1))].add(i)
			return
		}
	}
	b := &w.bufs[w.cur]
	for {
		k := s
		if i >= 0 {
			k |= uint32((MinBucketKey+i+1<<b.shift-1)>>b.shift-lowKey(b.shift)) + 1
		}
		if b.inc(k) {
			return
		}
		if b.shift >= Schema {
			b.lost++
			return
		}
		w.coarsen(b)
	}
}

// add counts a span of the aggregates' bucket i (-1: the zero bucket),
// sliding the counts or lowering the histogram's schema until the span's
// bucket is in reach.
func (l *laneHist) add(i int) {
	if i < 0 {
		l.zero = satAdd(l.zero, 1)
		return
	}
	k5 := int32(MinBucketKey + i)
	for {
		k := (k5 + 1<<l.shift - 1) >> l.shift // ceil(k5 / 2^shift)
		if l.n == 0 {
			l.base = k - LaneWindowCells/2
		} else if k < l.base || k >= l.base+LaneWindowCells {
			lo, hi := l.span()
			lo, hi = min(lo, k), max(hi, k)
			if hi-lo >= LaneWindowCells && l.shift < Schema {
				l.coarsen()
				continue
			}
			l.rebase(lo - max(LaneWindowCells-1-(hi-lo), 0)/2)
		}
		j := min(max(k-l.base, 0), LaneWindowCells-1) // past schema 0: the edge bucket
		l.counts[j] = satAdd(l.counts[j], 1)
		l.n++
		return
	}
}

// span returns the lowest and highest keys with a count (l.n > 0).
func (l *laneHist) span() (lo, hi int32) {
	lo, hi = math.MaxInt32, math.MinInt32
	for j, c := range l.counts {
		if c != 0 {
			lo, hi = min(lo, l.base+int32(j)), max(hi, l.base+int32(j))
		}
	}
	return lo, hi
}

// rebase moves the counts so that counts[0] holds key base; a key out of
// reach joins the edge bucket (past schema 0 only).
func (l *laneHist) rebase(base int32) {
	var c [LaneWindowCells]uint32
	for j, n := range l.counts {
		if n != 0 {
			d := min(max(l.base+int32(j)-base, 0), LaneWindowCells-1)
			c[d] = satAdd(c[d], n)
		}
	}
	l.counts, l.base = c, base
}

// coarsen halves the resolution: schema one lower, key k to ceil(k/2).
// The counts, in reach before, stay in reach from their lowest key.
func (l *laneHist) coarsen() {
	lo, _ := l.span()
	var c [LaneWindowCells]uint32
	base := (lo + 1) >> 1
	for j, n := range l.counts {
		if n != 0 {
			d := (l.base+int32(j)+1)>>1 - base
			c[d] = satAdd(c[d], n)
		}
	}
	l.counts, l.base = c, base
	l.shift++
}

// inc adds one to key's cell, taking a free cell if it has none; false
// when it would need a cell past cellMaxUsed.
func (b *winBuf) inc(key uint32) bool {
	h := (key * 0x9E3779B1) >> (32 - cellBits)
	for {
		c := &b.cells[h]
		if c.key == key {
			if c.count != math.MaxUint32 {
				c.count++
			}
			return true
		}
		if c.key == 0 {
			if b.used >= cellMaxUsed {
				return false
			}
			c.key, c.count = key, 1
			b.used++
			return true
		}
		h = (h + 1) & (WindowCells - 1)
	}
}

// coarsen merges b's buckets pairwise: schema one lower.
func (w *winRing) coarsen(b *winBuf) {
	*w.scratch = b.cells
	b.cells = [WindowCells]cell{}
	b.used = 0
	lo, lo2 := lowKey(b.shift), lowKey(b.shift+1)
	b.shift++
	for _, c := range w.scratch {
		if c.key == 0 {
			continue
		}
		k := c.key
		if bk := int(k & (1<<cellBits - 1)); bk > 0 {
			key := bk - 1 + lo
			k = k&^(1<<cellBits-1) | uint32((key+1)>>1-lo2+1)
		}
		h := (k * 0x9E3779B1) >> (32 - cellBits)
		for {
			d := &b.cells[h]
			if d.key == k {
				d.count = satAdd(d.count, c.count)
				break
			}
			if d.key == 0 {
				d.key, d.count = k, c.count
				b.used++
				break
			}
			h = (h + 1) & (WindowCells - 1)
		}
	}
}

func satAdd(a, b uint32) uint32 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxUint32
}

// roll closes the open window if it is WindowLength old (or the clock
// went back) and opens the next, overwriting the oldest. Harvests call it
// before they land, so a span lands in the window open at its harvest.
// Caller holds the harvest lock. Allocates nothing.
func (h *Hub) roll(now time.Time) {
	w := &h.win
	b := &w.bufs[w.cur]
	if b.start.IsZero() { // the first harvest opens the first window
		b.start = now
		return
	}
	if d := now.Sub(b.start); d >= 0 && d < WindowLength {
		return
	}
	var o outcomes
	h.outcomes(&o)
	b.end = now
	b.begun, b.landed, b.errored = o.begun-w.begun, o.landed-w.landed, o.errored-w.errored
	for i := range o.dropped {
		b.dropped[i] = o.dropped[i] - w.dropped[i]
	}
	w.begun, w.landed, w.errored, w.dropped = o.begun, o.landed, o.errored, o.dropped
	w.cur = (w.cur + 1) % len(w.bufs)
	if w.closed < NumWindows {
		w.closed++
	}
	n := &w.bufs[w.cur]
	for _, ls := range w.lanes {
		if ls != nil {
			clear(ls[w.cur*w.nlanes : (w.cur+1)*w.nlanes])
		}
	}
	n.cells = [WindowCells]cell{}
	n.start, n.end = now, time.Time{}
	n.shift, n.used, n.lost = 0, 0, 0
	n.begun, n.landed, n.errored, n.dropped = 0, 0, 0, [NumDropReasons]uint64{}
}

// outcomes are the hub's span outcome totals.
type outcomes struct {
	begun, landed, errored uint64
	dropped                [NumDropReasons]uint64
}

// outcomes sums the span outcomes of every device into o, as
// SnapshotInto does. Caller holds the harvest lock.
func (h *Hub) outcomes(o *outcomes) {
	for dev, d := range h.devs {
		if d == nil {
			continue
		}
		dc := &h.devc[dev]
		o.begun += dc.begunFinished
		o.landed += dc.landed
		o.errored += dc.errored.Load()
		for i := range o.dropped {
			o.dropped[i] += dc.dropped[i].Load()
		}
	}
	for _, r := range h.recs {
		o.begun += r.next.Load()
	}
}

// WindowsWithin returns the tail of ws (as Windows returns them, oldest
// first) begun within d of the newest one's end: the windows a "last d"
// reads. An open window that began earlier (no harvest since) holds
// nothing as recent and is left out. The live page's columns and the
// Prometheus exporter's recent percentiles both take their windows here.
func WindowsWithin(ws []Window, d time.Duration) []Window {
	if len(ws) == 0 {
		return nil
	}
	end := ws[len(ws)-1].End
	k := len(ws)
	for k > 0 && end.Sub(ws[k-1].Start) <= d {
		k--
	}
	return ws[k:]
}

// Windows returns the hub's recent windows, oldest first: up to NumWindows
// closed ones, then the open one, read now. They are kept whether or not
// anything reads them; reading changes nothing. Takes the harvest lock
// briefly, and allocates what it returns.
func (h *Hub) Windows() []Window {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := &h.win
	now := h.now()
	out := make([]Window, 0, w.closed+1)
	var cells []cell
	for j := w.closed; j >= 0; j-- {
		b := &w.bufs[(w.cur-j+len(w.bufs))%len(w.bufs)]
		win := Window{Start: b.start, End: b.end, Schema: Schema - int(b.shift), Lost: b.lost,
			Begun: b.begun, Landed: b.landed, Errored: b.errored, Dropped: b.dropped}
		if j == 0 {
			var o outcomes
			h.outcomes(&o)
			win.Open, win.End = true, now
			win.Begun, win.Landed, win.Errored = o.begun-w.begun, o.landed-w.landed, o.errored-w.errored
			for i := range o.dropped {
				win.Dropped[i] = o.dropped[i] - w.dropped[i]
			}
		}
		cells = cells[:0]
		for _, c := range b.cells {
			if c.key != 0 {
				cells = append(cells, c)
			}
		}
		sort.Slice(cells, func(a, b int) bool { return cells[a].key < cells[b].key })
		low := lowKey(b.shift)
		var a *WindowAggregate
		var series uint32
		for _, c := range cells {
			if s := c.key &^ (1<<cellBits - 1); a == nil || s != series {
				series = s
				dev, idx := int(s>>22&(MaxDevices-1)), int(s>>cellBits&(1<<11-1))
				list := &win.Lanes
				name := ""
				if s&cellKernel != 0 && idx == gapIndex {
					list, name = &win.Gaps, "gap"
				} else if s&cellKernel != 0 {
					list = &win.Kernels
					if idx < len(h.kernelNames) {
						name = h.kernelNames[idx]
					}
				} else if idx < len(h.lanes) {
					name = h.lanes[idx]
				}
				*list = append(*list, WindowAggregate{Device: dev, Name: name, Schema: win.Schema})
				a = &(*list)[len(*list)-1]
			}
			a.Count += uint64(c.count)
			if bk := int(c.key & (1<<cellBits - 1)); bk == 0 {
				a.ZeroCount += uint64(c.count)
			} else {
				a.Keys = append(a.Keys, bk-1+low)
				a.Counts = append(a.Counts, uint64(c.count))
			}
		}
		w.laneAggregates(&win, (w.cur-j+len(w.bufs))%len(w.bufs), h.lanes)
		out = append(out, win)
	}
	return out
}

// laneAggregates appends to win.Lanes the lanes with spans in window buf,
// in a Snapshot's order, after any the cells held (a ring made without
// New). Caller holds the harvest lock.
func (w *winRing) laneAggregates(win *Window, buf int, names []string) {
	for dev, ls := range w.lanes {
		if ls == nil {
			continue
		}
		for lane, l := range ls[buf*w.nlanes : (buf+1)*w.nlanes] {
			a := WindowAggregate{Device: dev, Schema: Schema - int(l.shift), ZeroCount: uint64(l.zero), Count: uint64(l.zero)}
			if lane < len(names) {
				a.Name = names[lane]
			}
			for j, c := range l.counts {
				if c != 0 {
					a.Keys = append(a.Keys, int(l.base)+j)
					a.Counts = append(a.Counts, uint64(c))
					a.Count += uint64(c)
				}
			}
			if a.Count > 0 {
				win.Lanes = append(win.Lanes, a)
			}
		}
	}
}

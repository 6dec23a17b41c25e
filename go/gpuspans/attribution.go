package gpuspans

import (
	"math"
	"math/bits"
	"sort"
	"strings"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans/internal/costmodel"
)

// The harvest's side of whose GPU time: each landed lane span of a step
// whose requests the engine said is split among them by the lane's cost
// model (internal/costmodel), and the parts are added to the requests,
// their classes and the lane; a request ended whose spans are all in
// comes out as a RequestRecord. docs/design.md ("Whose GPU time") states
// the method and its limits.

// RequestRecord is a finished request's GPU time: its parts of the lane
// spans that served it, on every device. A plain value.
type RequestRecord struct {
	Seq   uint64 // numbers the records in the order they finished, from 1
	ID    uint64
	Class RequestClass
	// Model, Adapter and Tenant are its class's names.
	Model, Adapter, Tenant string
	TraceID                [16]byte
	SpanID                 [8]byte
	// Steps counts the lane spans that served it (a span on several
	// devices counts once); FirstStep and LastStep are their steps.
	Steps, FirstStep, LastStep uint64
	NewTokens, DecodedTokens   uint64
	// GPUTime is its parts of those spans, summed over lanes and devices.
	// Input and Output split it by its new and decoded tokens, span by
	// span. Busy is the part of its time kernels ran, estimated from each
	// lane's busy ratio where kernel windows measured it: BusyTime is the
	// part of GPUTime it covers.
	GPUTime, Input, Output, Busy, BusyTime time.Duration
	// Unmeasured counts lane spans that served it and never landed on any
	// device (dropped, or waited for past RequestSpanWait); Fallback the
	// spans split by tokens because the lane's cost model could not say
	// (LaneAttribution.Model.Status).
	Unmeasured, Fallback uint64
	// Abandoned: the hub ended it after RequestIdle unserved, not EndRequest.
	Abandoned bool
	// StartNs and EndNs bound its spans on the host clock (Unix ns) where
	// they were placed; 0: none was.
	StartNs, EndNs int64
	// Lanes is its time per lane it was served in, by lane order.
	Lanes []RequestLaneTime
}

// RequestLaneTime is a request's time in one lane.
type RequestLaneTime struct {
	Lane                    string
	Steps                   uint64
	GPUTime, Busy, BusyTime time.Duration
}

// CostModel is a lane's fitted model: a step costs Fixed plus, summed over
// its requests, PerToken ns per token processed, PerContext ns per token
// of context its tokens read (a decoded token reads its whole KV cache)
// and PerPair ns per attention pair (a token times the context it attends
// to: a long prompt's); Fixed is shared equally. Status says whether the
// hub splits by it.
type CostModel struct {
	// Status is "fitting", "ok", "undetermined" or "unexplained"
	// (docs/design.md): spans are split by the model only at "ok", by
	// tokens otherwise.
	Status                        string
	Fixed                         time.Duration
	PerToken, PerContext, PerPair float64 // ns
	// Residual is the fit's root-mean-square error over the mean step
	// time; Steps the steps fitted.
	Residual float64
	Steps    uint64
}

// LaneAttribution is what one lane's spans on one device gave its
// requests.
type LaneAttribution struct {
	Device int
	Lane   string
	Model  CostModel
	// Spans counts the spans split, ModelSpans those split by the model,
	// the rest by tokens; Unmeasured the spans with requests that never
	// landed. Time is their time split (the served time, for a kernel
	// window's step: WindowCost is the rest, what the window added, which
	// no request pays); Busy the part kernels ran where the lane's busy
	// ratio was known, over BusyTime of Time.
	Spans, ModelSpans, Unmeasured uint64
	Time, Busy, BusyTime          time.Duration
	WindowCost                    time.Duration
	// Unattributed counts the lane's spans no request was said for (the
	// lane ran with no ServeRequests that step) and their time: no request
	// pays it. Counted unclaimedAfter spans after they landed.
	Unattributed     uint64
	UnattributedTime time.Duration
	// FLOPs and Bytes are the work LaneWork gave its spans; WorkTime and
	// WorkBusy are those spans' time and busy time (WorkBusyTime of
	// WorkTime known), for AchievedFLOPS.
	FLOPs, Bytes                     float64
	WorkTime, WorkBusy, WorkBusyTime time.Duration
	// PeakFlops and PeakBandwidth are the device's (Options.PeakFlops and
	// PeakBandwidth, else its model's dense BF16 and memory figures; 0:
	// not known).
	PeakFlops, PeakBandwidth float64
}

// Achieved returns the FLOP/s and bytes/s the lane's spans with work
// achieved over their served time and over their busy time (0 where not
// known).
func (l *LaneAttribution) Achieved() (flopsServed, flopsBusy, bytesServed, bytesBusy float64) {
	if s := l.WorkTime.Seconds(); s > 0 {
		flopsServed, bytesServed = l.FLOPs/s, l.Bytes/s
	}
	if l.WorkBusy > 0 && l.WorkBusyTime > 0 {
		// The work of the spans whose busy time is known, over that time.
		f := float64(l.WorkBusyTime) / float64(l.WorkTime)
		s := l.WorkBusy.Seconds()
		flopsBusy, bytesBusy = l.FLOPs*f/s, l.Bytes*f/s
	}
	return
}

// ClassAttribution is what one request class was given: the classes with
// labels of their own (Options.RequestLabels), or "other" (Other set):
// the rest folded.
type ClassAttribution struct {
	Class                    RequestClass // RequestClassOther for the fold
	Model, Adapter, Tenant   string
	Other                    bool
	Lanes                    []ClassLaneTime // by lane order, lanes it was served in
	NewTokens, DecodedTokens uint64
	Finished, Abandoned      uint64
	FLOPs                    float64
	// PerRequest holds the GPU time of each request finished.
	PerRequest Aggregate
}

// ClassLaneTime is a class's time in one lane, summed over devices, as
// RequestRecord splits it.
type ClassLaneTime struct {
	Lane                                   string
	GPUTime, Input, Output, Busy, BusyTime time.Duration
}

// RequestCounters count what engines said and what became of it.
type RequestCounters struct {
	Batches   uint64 // lane spans said to serve requests
	Served    uint64 // requests in them (a request in a span on several devices once)
	Refused   uint64 // ServeRequests and RequestClass calls refused
	Backlog   uint64 // calls dropped on a full inbox (ErrRequestsBacklog)
	Expired   uint64 // batches whose span did not land within RequestSpanWait
	Overrun   uint64 // batches given up to make room for newer ones
	Abandoned uint64 // requests the hub ended after RequestIdle unserved
	// RecordsOverwritten counts records overwritten before
	// FinishedRequests returned them.
	RecordsOverwritten uint64
}

// RequestAttribution is the hub's whose-GPU-time state (Hub.Attribution).
type RequestAttribution struct {
	InFlight int    // requests the hub holds: in flight, or ended with spans to come
	Finished uint64 // records made: the newest's Seq
	Counters RequestCounters
	Lanes    []LaneAttribution // by device, then lane: those with a span split
	Classes  []ClassAttribution
	// Heaviest are the records kept (the latest Options.MaxRequests) with
	// the most GPU time, most first: at most HeaviestRequests.
	Heaviest []RequestRecord
}

// HeaviestRequests bounds RequestAttribution.Heaviest.
const HeaviestRequests = 8

// Attribution returns the hub's whose-GPU-time state. Takes the harvest
// lock briefly.
func (h *Hub) Attribution() RequestAttribution {
	h.mu.Lock()
	defer h.mu.Unlock()
	var a RequestAttribution
	h.attributionInto(&a)
	return a
}

// FinishedRequests returns into[:0] with the records of requests finished
// after Seq after that the hub still keeps (the latest Options.MaxRequests),
// oldest first, reusing into's records and their Lanes, so that a steady
// poller allocates nothing. Records a poller never read before they were
// overwritten are counted (RecordsOverwritten). Takes the harvest lock,
// and brings in what engines said since the last harvest.
func (h *Hub) FinishedRequests(after uint64, into []RequestRecord) []RequestRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attribute()
	return h.led.finishedInto(after, into)
}

// Sizes of the ledger's fixed parts.
const (
	servedOf       = 16 // spans outside windows a window step's served time is the median of
	unclaimedAfter = 64 // spans landed after one before a span no batch claimed counts as unattributed
)

// ledger is the harvest's side. Guarded by the harvest lock.
type ledger struct {
	ok        bool
	lanes     int
	laneNames []string
	labels    int
	peakF     float64 // Options.PeakFlops
	peakB     float64 // Options.PeakBandwidth
	ents      []reqEntry
	entLanes  []reqLaneAcc // ents[i]'s lanes at [i*lanes, (i+1)*lanes)

	pend               []reqCell // ring of the waiting batches' requests
	pendHead, pendTail uint64
	heads              []pendBatch // ring of the waiting batches
	headHead, headTail uint64

	landed   map[[2]int32]*landedRing
	attrs    map[[2]int32]*laneAttr
	attrKeys [][2]int32

	classes []classAcc
	names   []classNames
	labeled int
	touched []RequestClass // classes first served in this harvest, to label

	fin      []RequestRecord // ring of finished records
	finLanes []RequestLaneTime
	finSeq   uint64
	finRead  uint64
	emit     []uint32 // slots to finish this harvest
	released []uint32

	counters RequestCounters

	// Scratch for one span.
	work  []costmodel.Request
	w     []float64
	parts []int64
	busy  []int64
}

// reqEntry is a request's totals so far.
type reqEntry struct {
	id                 uint64
	class              RequestClass
	trace              [24]byte
	pending            uint32 // batches naming it that wait for their spans
	ended, abandoned   bool
	queued             bool // in emit
	steps, first, last uint64
	newTok, decTok     uint64
	gpu, in, out       int64
	busy, busyTime     int64
	unmeasured, fell   uint64
	startNs, endNs     int64
}

// reqLaneAcc is a request's totals in one lane.
type reqLaneAcc struct {
	steps               uint64
	gpu, busy, busyTime int64
}

// pendBatch is a lane span's batch waiting for its span on each device.
type pendBatch struct {
	pos          uint64 // its first request in pend
	n            uint32
	lane         int32
	step         uint64
	mask, done   uint64 // devices it waits for; those decided
	measured     bool   // some device's span landed
	resolved     bool
	createdNs    int64
	flops, bytes float64
}

// landedRing is a device's lane's latest landed spans, oldest first, for
// the batches that wait for them. It holds every span one harvest can land
// (a device has at most Options.Slots in flight) and those not yet swept:
// a harvester that falls behind loses no span's time.
type landedRing struct {
	s     []landedSpan
	n     uint64
	swept uint64 // spans counted as claimed or not
}

type landedSpan struct {
	step       uint64
	dur, start int64
	window     bool // a kernel window's step
	claimed    bool // a batch split it
}

// laneAttr is one device's lane's fit and totals.
type laneAttr struct {
	fit                              costmodel.Fit
	spans, modelSpans, unmeasured    uint64
	time, busy, busyTime, windowCost int64
	unattributed                     uint64
	unattributedTime                 int64
	flops, bytes                     float64
	workTime, workBusy, workBusyTime int64
}

// classAcc is a class's totals.
type classAcc struct {
	lanes               []classLaneAcc
	newTok, decTok      uint64
	finished, abandoned uint64
	flops               float64
	gpu                 int64
	seen, labeled       bool
	perReq              *Aggregate // labeled classes and the fold's
}

type classLaneAcc struct {
	gpu, in, out, busy, busyTime int64
}

// init sizes the ledger for maxReqs requests in flight.
func (l *ledger) init(maxReqs int, lanes []string, labels int, peakF, peakB float64) {
	l.ok, l.lanes, l.laneNames, l.labels, l.peakF, l.peakB = true, len(lanes), lanes, labels, peakF, peakB
	l.classes = make([]classAcc, 0, MaxRequestClasses)
	l.ents = make([]reqEntry, maxReqs)
	l.entLanes = make([]reqLaneAcc, maxReqs*l.lanes)
	l.pend = make([]reqCell, 2*inboxCells(maxReqs))
	l.heads = make([]pendBatch, 4096)
	l.landed = make(map[[2]int32]*landedRing)
	l.attrs = make(map[[2]int32]*laneAttr)
	l.fin = make([]RequestRecord, maxReqs)
	l.finLanes = make([]RequestLaneTime, maxReqs*l.lanes)
	for i := range l.fin {
		l.fin[i].Lanes = l.finLanes[i*l.lanes : i*l.lanes : (i+1)*l.lanes]
	}
	l.emit = make([]uint32, 0, maxReqs)
	l.released = make([]uint32, 0, maxReqs)
	l.work = make([]costmodel.Request, maxReqs)
	l.w = make([]float64, maxReqs)
	l.parts = make([]int64, maxReqs)
	l.busy = make([]int64, maxReqs)
	l.fold() // the fold's histogram exists from the start
}

// landLane notes a landed lane span for the batches that wait for it.
// Caller holds the harvest lock.
func (h *Hub) landLane(device int, lane uint64, s *Span, window bool) {
	if !h.rq.used.Load() {
		return
	}
	h.ledger()
	k := [2]int32{int32(device), int32(lane)}
	r := h.led.landed[k]
	if r == nil {
		r = &landedRing{s: make([]landedSpan, h.slots+unclaimedAfter)}
		h.led.landed[k] = r
	}
	r.s[r.n%uint64(len(r.s))] = landedSpan{step: s.Step, dur: s.DurationNs, start: s.StartNs, window: window}
	r.n++
}

// ledger returns the ledger, made at its first use. Caller holds the
// harvest lock.
func (h *Hub) ledger() *ledger {
	if !h.led.ok {
		h.led.init(h.rq.maxReqs, h.lanes, h.reqLabels, h.peakFLOPS, h.peakBW)
	}
	return &h.led
}

// attribute brings in what engines said, splits every span that landed
// for it, and finishes the requests whose spans are all in. Caller holds
// the harvest lock.
func (h *Hub) attribute() {
	if !h.rq.used.Load() {
		return
	}
	l := h.ledger()
	now := h.now().UnixNano()
	cells, ends := h.rq.take(l.released, now, &l.names)
	l.released = l.released[:0]
	l.drain(cells, now)
	h.resolve(now)
	l.sweepUnclaimed()
	for _, e := range ends {
		ent := &l.ents[e.idx]
		ent.ended, ent.abandoned = true, e.abandoned
		if e.abandoned {
			l.counters.Abandoned++
		}
		l.queue(e.idx)
	}
	if len(l.touched) > 0 {
		l.label()
	}
	for _, idx := range l.emit {
		l.finish(idx)
	}
	l.emit = l.emit[:0]
}

// drain files the cells of one take. now: Unix ns.
func (l *ledger) drain(cells []reqCell, now int64) {
	for i := 0; i < len(cells); i++ {
		c := &cells[i]
		switch c.kind {
		case cellNew:
			l.newEntry(c)
		case cellBatch:
			b := pendBatch{lane: int32(c.lane), step: c.step, mask: c.mask, createdNs: now}
			// The batch's requests, with the new requests' cells among them.
			// pend holds twice what the inbox can, so they always fit.
			l.room(c.n)
			b.pos = l.pendHead
			for j := i + 1; j < len(cells) && b.n < c.n; j++ {
				r := &cells[j]
				i = j
				if r.kind == cellNew {
					l.newEntry(r)
					continue
				}
				l.pend[l.pendHead%uint64(len(l.pend))] = *r
				l.pendHead++
				l.ents[r.idx].pending++
				b.n++
			}
			l.counters.Batches++
			l.push(b)
		case cellWork:
			l.addWork(c, now)
		}
	}
}

// newEntry starts a request's totals in its slot.
func (l *ledger) newEntry(c *reqCell) {
	l.ents[c.idx] = reqEntry{id: c.id, class: c.class, trace: c.trace}
	clear(l.entLanes[int(c.idx)*l.lanes : int(c.idx+1)*l.lanes])
}

// room makes room in pend for n requests, giving up the oldest batches if
// it must.
func (l *ledger) room(n uint32) {
	for l.pendHead+uint64(n)-l.pendTail > uint64(len(l.pend)) && l.headTail < l.headHead {
		b := &l.heads[l.headTail%uint64(len(l.heads))]
		if !b.resolved {
			l.counters.Overrun++
			l.close(b)
		}
		l.advance()
	}
}

// push queues a batch, giving up the oldest if the ring is full.
func (l *ledger) push(b pendBatch) {
	if l.headHead-l.headTail == uint64(len(l.heads)) {
		if o := &l.heads[l.headTail%uint64(len(l.heads))]; !o.resolved {
			l.counters.Overrun++
			l.close(o)
		}
		l.advance()
	}
	l.heads[l.headHead%uint64(len(l.heads))] = b
	l.headHead++
}

// advance drops resolved batches off the tail, and their requests off
// pend's.
func (l *ledger) advance() {
	for l.headTail < l.headHead {
		b := &l.heads[l.headTail%uint64(len(l.heads))]
		if !b.resolved {
			return
		}
		if b.n > 0 {
			l.pendTail = b.pos + uint64(b.n)
		}
		l.headTail++
	}
	if l.headTail == l.headHead {
		l.pendTail = l.pendHead
	}
}

// addWork adds a LaneWork cell to its span's batch, or queues a batch of
// no requests for it.
func (l *ledger) addWork(c *reqCell, now int64) {
	for p := l.headHead; p > l.headTail && l.headHead-p < 64; p-- {
		b := &l.heads[(p-1)%uint64(len(l.heads))]
		if !b.resolved && b.lane == int32(c.lane) && b.step == c.step {
			b.flops += c.flops
			b.bytes += c.bytes
			return
		}
	}
	l.push(pendBatch{lane: int32(c.lane), step: c.step, mask: c.mask, createdNs: now, flops: c.flops, bytes: c.bytes})
}

// resolve splits the spans that landed for waiting batches, and gives up
// on the spans that will not. now: Unix ns. Caller holds the harvest lock.
func (h *Hub) resolve(now int64) {
	l := &h.led
	for p := l.headTail; p < l.headHead; p++ {
		b := &l.heads[p%uint64(len(l.heads))]
		if b.resolved {
			continue
		}
		for m := b.mask &^ b.done; m != 0; m &= m - 1 {
			dev := bits.TrailingZeros64(m)
			r := l.landed[[2]int32{int32(dev), b.lane}]
			sp, found, gone := r.find(b.step)
			switch {
			case found:
				sp.claimed = true
				h.split(b, dev, sp)
				b.done |= 1 << uint(dev)
				b.measured = true
			case gone:
				l.attr(dev, int(b.lane)).unmeasured++
				b.done |= 1 << uint(dev)
			}
		}
		if b.done == b.mask {
			l.close(b)
		} else if now-b.createdNs > int64(RequestSpanWait) {
			l.counters.Expired++
			for m := b.mask &^ b.done; m != 0; m &= m - 1 {
				l.attr(bits.TrailingZeros64(m), int(b.lane)).unmeasured++
			}
			l.close(b)
		}
	}
	l.advance()
}

// find looks for step's span: found, or gone (a later span landed, so
// this one never will, or the ring forgot it).
func (r *landedRing) find(step uint64) (sp *landedSpan, found, gone bool) {
	if r == nil || r.n == 0 {
		return nil, false, false
	}
	size := uint64(len(r.s))
	for i := uint64(0); i < min(r.n, size); i++ {
		s := &r.s[(r.n-1-i)%size]
		if s.step == step {
			return s, true, false
		}
		if s.step < step {
			// Spans of a lane land in step order: an older one means this
			// step's was never recorded or was dropped.
			return nil, false, i > 0
		}
	}
	return nil, false, true
}

// served returns a window step's served time: the median of the lane's
// latest spans outside windows before it (the span itself without them).
func (r *landedRing) served(step uint64, dur int64) int64 {
	var v [servedOf]int64
	n := 0
	size := uint64(len(r.s))
	for i := uint64(0); i < min(r.n, size) && n < servedOf; i++ {
		s := &r.s[(r.n-1-i)%size]
		if s.step < step && !s.window {
			v[n] = s.dur
			n++
		}
	}
	if n == 0 {
		return dur
	}
	for i := 1; i < n; i++ { // insertion sort: sort.Slice would allocate
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
	return min(v[n/2], dur)
}

// sweepUnclaimed counts the spans no batch claimed, unclaimedAfter spans
// after they landed: by then the engine has said any batch of their step,
// and a harvest has matched it.
func (l *ledger) sweepUnclaimed() {
	for k, r := range l.landed {
		if r.n <= unclaimedAfter {
			continue
		}
		var a *laneAttr
		for ; r.swept < r.n-unclaimedAfter; r.swept++ {
			if s := &r.s[r.swept%uint64(len(r.s))]; !s.claimed {
				if a == nil {
					a = l.attr(int(k[0]), int(k[1]))
				}
				a.unattributed++
				a.unattributedTime += s.dur
			}
		}
	}
}

// attr returns a device's lane's fit and totals, made on first use.
func (l *ledger) attr(dev, lane int) *laneAttr {
	k := [2]int32{int32(dev), int32(lane)}
	a := l.attrs[k]
	if a == nil {
		a = &laneAttr{}
		l.attrs[k] = a
		l.attrKeys = append(l.attrKeys, k)
		sort.Slice(l.attrKeys, func(i, j int) bool {
			if l.attrKeys[i][0] != l.attrKeys[j][0] {
				return l.attrKeys[i][0] < l.attrKeys[j][0]
			}
			return l.attrKeys[i][1] < l.attrKeys[j][1]
		})
	}
	return a
}

// split divides a device's span of batch b among its requests. Caller
// holds the harvest lock.
func (h *Hub) split(b *pendBatch, dev int, sp *landedSpan) {
	l := &h.led
	a := l.attr(dev, int(b.lane))
	total := sp.dur
	if sp.window {
		// A kernel window's CUPTI slows the step it measures: the requests
		// pay the lane's served time, and the window's cost stays the
		// window's.
		total = l.landed[[2]int32{int32(dev), b.lane}].served(sp.step, sp.dur)
		a.windowCost += sp.dur - total
	}
	ratio, known := h.laneBusyRatio(dev, int(b.lane))
	busyTotal := int64(0)
	if known {
		busyTotal = int64(math.Round(float64(total) * ratio))
	}
	a.spans++
	a.time += total
	if known {
		a.busy += busyTotal
		a.busyTime += total
	}
	if b.flops > 0 || b.bytes > 0 {
		a.flops += b.flops
		a.bytes += b.bytes
		a.workTime += total
		if known {
			a.workBusy += busyTotal
			a.workBusyTime += total
		}
	}
	n := int(b.n)
	if n == 0 {
		return
	}
	reqs, w, parts, busy := l.work[:n], l.w[:n], l.parts[:n], l.busy[:n]
	for i := range reqs {
		c := &l.pend[(b.pos+uint64(i))%uint64(len(l.pend))]
		t := c.newTok + c.decTok
		reqs[i] = costmodel.NewRequest(t, c.ctx)
	}
	if !sp.window {
		a.fit.Observe(reqs, float64(sp.dur))
	}
	m := a.fit.Model()
	modelled := costmodel.Weights(m, reqs, w)
	if modelled {
		a.modelSpans++
	}
	costmodel.Split(total, w, parts)
	if known {
		costmodel.Split(busyTotal, w, busy)
	}
	for i := range reqs {
		c := &l.pend[(b.pos+uint64(i))%uint64(len(l.pend))]
		e := &l.ents[c.idx]
		la := &l.entLanes[int(c.idx)*l.lanes+int(b.lane)]
		p := parts[i]
		in := int64(math.Round(float64(p) * float64(c.newTok) / float64(c.newTok+c.decTok)))
		e.gpu += p
		e.in += in
		e.out += p - in
		la.gpu += p
		if !modelled {
			e.fell++
		}
		cl := l.classAcc(e.class)
		cll := &cl.lanes[b.lane]
		cll.gpu += p
		cll.in += in
		cll.out += p - in
		cl.gpu += p
		if known {
			e.busy += busy[i]
			e.busyTime += p
			la.busy += busy[i]
			la.busyTime += p
			cll.busy += busy[i]
			cll.busyTime += p
		}
		if b.flops > 0 && total > 0 {
			cl.flops += b.flops * float64(p) / float64(total)
		}
		if sp.start > 0 {
			if e.startNs == 0 || sp.start < e.startNs {
				e.startNs = sp.start
			}
			e.endNs = max(e.endNs, sp.start+sp.dur)
		}
	}
}

// close finishes a batch: each request counts the span, its tokens, and
// is finished if it was its last. An unmeasured batch counts as such.
func (l *ledger) close(b *pendBatch) {
	b.resolved = true
	for i := uint64(0); i < uint64(b.n); i++ {
		c := &l.pend[(b.pos+i)%uint64(len(l.pend))]
		e := &l.ents[c.idx]
		la := &l.entLanes[int(c.idx)*l.lanes+int(b.lane)]
		la.steps++
		if e.steps == 0 || b.step < e.first {
			e.first = b.step
		}
		e.last = max(e.last, b.step)
		e.steps++
		e.newTok += uint64(c.newTok)
		e.decTok += uint64(c.decTok)
		cl := l.classAcc(e.class)
		cl.newTok += uint64(c.newTok)
		cl.decTok += uint64(c.decTok)
		l.counters.Served++
		if !b.measured {
			e.unmeasured++
		}
		e.pending--
		l.queue(c.idx)
	}
}

// queue finishes a request this harvest if it ended and nothing it waits
// for is left.
func (l *ledger) queue(idx uint32) {
	e := &l.ents[idx]
	if e.ended && e.pending == 0 && !e.queued {
		e.queued = true
		l.emit = append(l.emit, idx)
	}
}

// classAcc returns c's totals, made on first use (a class is first served
// here: it is labeled at the end of the harvest, if labels are left).
func (l *ledger) classAcc(c RequestClass) *classAcc {
	for int(c) >= len(l.classes) {
		l.classes = append(l.classes, classAcc{})
	}
	a := &l.classes[c]
	if !a.seen {
		a.seen = true
		a.lanes = make([]classLaneAcc, l.lanes)
		if c != RequestClassOther {
			l.touched = append(l.touched, c)
		}
	}
	return a
}

// fold returns the fold's totals ("other").
func (l *ledger) fold() *classAcc {
	a := l.classAcc(RequestClassOther)
	if a.perReq == nil {
		a.perReq = &Aggregate{Name: "other"}
		a.labeled = true
	}
	return a
}

// label gives labels to the classes first served this harvest, heaviest
// first, while Options.RequestLabels lasts; the rest fold for good, so
// that a class's series never moves between its own labels and "other".
func (l *ledger) label() {
	sort.Slice(l.touched, func(i, j int) bool {
		a, b := &l.classes[l.touched[i]], &l.classes[l.touched[j]]
		if a.gpu != b.gpu {
			return a.gpu > b.gpu
		}
		return l.touched[i] < l.touched[j]
	})
	for _, c := range l.touched {
		if l.labeled < l.labels {
			a := &l.classes[c]
			a.labeled = true
			a.perReq = &Aggregate{Name: "request"}
			l.labeled++
		}
	}
	l.touched = l.touched[:0]
}

// finish makes slot idx's record, counts it in its class, and releases
// the slot.
func (l *ledger) finish(idx uint32) {
	e := &l.ents[idx]
	l.finSeq++
	r := &l.fin[l.finSeq%uint64(len(l.fin))]
	if r.Seq > l.finRead {
		l.counters.RecordsOverwritten++
	}
	lanes := r.Lanes[:0]
	*r = RequestRecord{Seq: l.finSeq, ID: e.id, Class: e.class,
		Steps: e.steps, FirstStep: e.first, LastStep: e.last, NewTokens: e.newTok, DecodedTokens: e.decTok,
		GPUTime: time.Duration(e.gpu), Input: time.Duration(e.in), Output: time.Duration(e.out),
		Busy: time.Duration(e.busy), BusyTime: time.Duration(e.busyTime),
		Unmeasured: e.unmeasured, Fallback: e.fell, Abandoned: e.abandoned, StartNs: e.startNs, EndNs: e.endNs}
	copy(r.TraceID[:], e.trace[:16])
	copy(r.SpanID[:], e.trace[16:])
	if int(e.class) < len(l.names) {
		n := l.names[e.class]
		r.Model, r.Adapter, r.Tenant = n[0], n[1], n[2]
	}
	for lane, la := range l.entLanes[int(idx)*l.lanes : int(idx+1)*l.lanes] {
		if la.steps > 0 {
			lanes = append(lanes, RequestLaneTime{Lane: l.laneNames[lane], Steps: la.steps, GPUTime: time.Duration(la.gpu), Busy: time.Duration(la.busy), BusyTime: time.Duration(la.busyTime)})
		}
	}
	r.Lanes = lanes
	cl := l.classAcc(e.class)
	cl.finished++
	if e.abandoned {
		cl.abandoned++
	}
	if !cl.labeled {
		cl = l.fold()
	}
	cl.perReq.Observe(time.Duration(e.gpu))
	*e = reqEntry{}
	l.released = append(l.released, idx)
}

// laneBusyRatio is the share of a device's lane's served time kernels ran,
// over its latest settled kernel windows; false while none settled.
// Caller holds the harvest lock.
func (h *Hub) laneBusyRatio(dev, lane int) (float64, bool) {
	t := h.gt.lanes[[2]int32{int32(dev), int32(lane)}]
	if t == nil {
		return 0, false
	}
	var busy, served int64
	for j := 0; j < int(min(t.settled, GPUTimeRecentWindows)); j++ {
		busy += t.recent[j].busy
		served += t.recent[j].served
	}
	if served <= 0 {
		return 0, false
	}
	return min(float64(busy)/float64(served), 1), true
}

// finishedInto is FinishedRequests. Caller holds the harvest lock.
func (l *ledger) finishedInto(after uint64, into []RequestRecord) []RequestRecord {
	into = into[:0]
	if !l.ok || l.finSeq <= after {
		return into
	}
	n := uint64(len(l.fin))
	first := after + 1
	if l.finSeq-after > n {
		first = l.finSeq - n + 1
	}
	for seq := first; seq <= l.finSeq; seq++ {
		src := &l.fin[seq%n]
		var lanes []RequestLaneTime
		if len(into) < cap(into) {
			lanes = into[:len(into)+1][len(into)].Lanes[:0]
		}
		into = append(into, *src)
		into[len(into)-1].Lanes = append(lanes, src.Lanes...)
	}
	l.finRead = max(l.finRead, l.finSeq)
	return into
}

// attributionInto fills out, reusing its slices. Caller holds the harvest
// lock.
func (h *Hub) attributionInto(out *RequestAttribution) {
	l := &h.led
	out.InFlight = 0
	out.Finished = l.finSeq
	out.Counters = l.counters
	h.rq.countersInto(&out.Counters, &out.InFlight)
	out.Lanes = out.Lanes[:0]
	out.Classes = resize(out.Classes, 0)
	out.Heaviest = resize(out.Heaviest, 0)
	if !l.ok {
		return
	}
	peaks := h.devicePeaks()
	for _, k := range l.attrKeys {
		a := l.attrs[k]
		m := a.fit.Model()
		la := LaneAttribution{Device: int(k[0]), Lane: h.lanes[k[1]],
			Model: CostModel{Status: m.Status.String(), Fixed: time.Duration(m.A), PerToken: m.Coef[0], PerContext: m.Coef[1], PerPair: m.Coef[2], Residual: m.Residual, Steps: m.Steps},
			Spans: a.spans, ModelSpans: a.modelSpans, Unmeasured: a.unmeasured,
			Unattributed: a.unattributed, UnattributedTime: time.Duration(a.unattributedTime),
			Time: time.Duration(a.time), Busy: time.Duration(a.busy), BusyTime: time.Duration(a.busyTime), WindowCost: time.Duration(a.windowCost),
			FLOPs: a.flops, Bytes: a.bytes, WorkTime: time.Duration(a.workTime), WorkBusy: time.Duration(a.workBusy), WorkBusyTime: time.Duration(a.workBusyTime)}
		la.PeakFlops, la.PeakBandwidth = peaks[k[0]].flops, peaks[k[0]].bw
		out.Lanes = append(out.Lanes, la)
	}
	// The labeled classes in class order, then the fold: "other" and every
	// class without a label.
	for c := range l.classes {
		if a := &l.classes[c]; a.seen && a.labeled && RequestClass(c) != RequestClassOther {
			out.Classes = resize(out.Classes, len(out.Classes)+1)
			l.classInto(&out.Classes[len(out.Classes)-1], RequestClass(c), a, false)
		}
	}
	out.Classes = resize(out.Classes, len(out.Classes)+1)
	fold := &out.Classes[len(out.Classes)-1]
	l.classInto(fold, RequestClassOther, l.fold(), false)
	for c := range l.classes {
		if a := &l.classes[c]; a.seen && !a.labeled {
			l.classInto(fold, RequestClassOther, a, true)
		}
	}
	fold.Other = true
	l.heaviestInto(out)
}

// heaviestInto fills out.Heaviest from the records kept. Caller holds the
// harvest lock.
func (l *ledger) heaviestInto(out *RequestAttribution) {
	var top [HeaviestRequests]*RequestRecord
	n := 0
	kept := min(l.finSeq, uint64(len(l.fin)))
	for seq := l.finSeq - kept + 1; seq <= l.finSeq; seq++ {
		r := &l.fin[seq%uint64(len(l.fin))]
		if n < len(top) {
			n++
		} else if r.GPUTime <= top[n-1].GPUTime {
			continue
		}
		i := n - 1
		for ; i > 0 && top[i-1].GPUTime < r.GPUTime; i-- {
			top[i] = top[i-1]
		}
		top[i] = r
	}
	out.Heaviest = resize(out.Heaviest, n)
	for i, r := range top[:n] {
		lanes := out.Heaviest[i].Lanes[:0]
		out.Heaviest[i] = *r
		out.Heaviest[i].Lanes = append(lanes, r.Lanes...)
	}
}

// classInto copies (add: adds) class c's totals a into dst.
func (l *ledger) classInto(dst *ClassAttribution, c RequestClass, a *classAcc, add bool) {
	if !add {
		lanes := dst.Lanes[:0]
		*dst = ClassAttribution{Class: c, Lanes: lanes}
		if int(c) < len(l.names) {
			n := l.names[c]
			dst.Model, dst.Adapter, dst.Tenant = n[0], n[1], n[2]
		}
		if a.perReq != nil {
			dst.PerRequest = *a.perReq
		}
	}
	dst.NewTokens += a.newTok
	dst.DecodedTokens += a.decTok
	dst.Finished += a.finished
	dst.Abandoned += a.abandoned
	dst.FLOPs += a.flops
	for lane, x := range a.lanes {
		if x.gpu == 0 && x.busyTime == 0 {
			continue
		}
		i := 0
		for i < len(dst.Lanes) && dst.Lanes[i].Lane != l.laneNames[lane] {
			i++
		}
		if i == len(dst.Lanes) {
			dst.Lanes = append(dst.Lanes, ClassLaneTime{Lane: l.laneNames[lane]})
		}
		d := &dst.Lanes[i]
		d.GPUTime += time.Duration(x.gpu)
		d.Input += time.Duration(x.in)
		d.Output += time.Duration(x.out)
		d.Busy += time.Duration(x.busy)
		d.BusyTime += time.Duration(x.busyTime)
	}
}

// devicePeak is a device's peak dense BF16 FLOP/s and memory bandwidth.
type devicePeak struct{ flops, bw float64 }

// knownPeaks are the datasheet figures of device models, matched in order
// against the name the driver reports (dense BF16 tensor FLOP/s, without
// sparsity; memory bandwidth in bytes/s).
var knownPeaks = []struct {
	match string
	peak  devicePeak
}{
	{"H200", devicePeak{989e12, 4.8e12}},
	{"GH200", devicePeak{989e12, 4.0e12}},
	{"H100 PCIe", devicePeak{756e12, 2.0e12}},
	{"H100 NVL", devicePeak{835e12, 3.9e12}},
	{"H100", devicePeak{989e12, 3.35e12}},
	{"H800", devicePeak{989e12, 3.35e12}},
	{"B200", devicePeak{2250e12, 8e12}},
	{"A100-SXM4-40GB", devicePeak{312e12, 1.555e12}},
	{"A100-PCIE-40GB", devicePeak{312e12, 1.555e12}},
	{"A100", devicePeak{312e12, 2.039e12}},
	{"L40S", devicePeak{362e12, 0.864e12}},
	{"L4", devicePeak{121e12, 0.3e12}},
}

// peakOf returns the known peak of a device called name.
func peakOf(name string) devicePeak {
	for _, k := range knownPeaks {
		if strings.Contains(name, k.match) {
			return k.peak
		}
	}
	return devicePeak{}
}

// devicePeaks returns each device's peaks: the options' where given, else
// its model's. Caller holds the harvest lock.
func (h *Hub) devicePeaks() (p [MaxDevices]devicePeak) {
	for _, r := range h.recs {
		p[r.device] = peakOf(r.id.Name)
	}
	for i := range p {
		if h.peakFLOPS > 0 {
			p[i].flops = h.peakFLOPS
		}
		if h.peakBW > 0 {
			p[i].bw = h.peakBW
		}
	}
	return p
}

package gpuspans

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Whose GPU time: an engine says which requests each lane span served
// (ServeRequests) and when a request is done (EndRequest); harvests split
// every landed lane span among its requests (attribution.go), and the
// finished requests come back through FinishedRequests. This file is the
// engine's side: the calls, their checks, and the inbox the harvest
// drains. docs/design.md ("Whose GPU time") has the method.

// RequestClass is a model, adapter and tenant combination that requests
// are counted under (Hub.RequestClass). The zero RequestClass is a request
// with none of them.
type RequestClass uint16

// Request classes every hub has.
const (
	// RequestClassNone is the class of requests that name no model,
	// adapter or tenant.
	RequestClassNone RequestClass = 0
	// RequestClassOther is where classes past MaxRequestClasses fold
	// (model, adapter and tenant "other").
	RequestClassOther RequestClass = 1
)

// Bounds of what a step may say of its requests.
const (
	// MaxRequestClasses bounds Hub.RequestClass's registrations (the two
	// built-in classes included); more fold into RequestClassOther.
	MaxRequestClasses = 1024
	// MaxRequestTokens bounds a request's new plus decoded tokens in one
	// lane span.
	MaxRequestTokens = 1 << 24
	// MaxRequestContext bounds a request's context length.
	MaxRequestContext = 1 << 30
	// MaxRequests bounds Options.MaxRequests.
	MaxRequests = 1 << 16
	// DefaultMaxRequests and DefaultRequestLabels are the zero Options'.
	DefaultMaxRequests   = 4096
	DefaultRequestLabels = 8
	// RequestIdle is how long a request may go unserved before the hub
	// ends it itself (counted as abandoned): an engine that loses an
	// EndRequest must not hold a slot for good.
	RequestIdle = time.Minute
	// RequestSpanWait is how long a lane span's requests wait for the
	// span to land before it counts as unmeasured.
	RequestSpanWait = 10 * time.Second
)

// RequestWork is what one request brought to one lane span.
type RequestWork struct {
	// ID is the engine's request id: not 0, unique among the requests in
	// flight (an id ended may be used again).
	ID uint64
	// NewTokens are the prompt (prefill) tokens the span processed for it,
	// DecodedTokens the tokens it decoded; together 1..MaxRequestTokens.
	NewTokens, DecodedTokens uint32
	// Context is its context length after the span: the tokens in its KV
	// cache that those tokens attend to, them included (0: as many as the
	// span's tokens). At most MaxRequestContext.
	Context uint32
	// Class is its model, adapter and tenant (Hub.RequestClass), fixed by
	// its first span.
	Class RequestClass
	// TraceID and SpanID are its span context in a trace (all zero: none),
	// as Exporter.LinkStep takes it: a finished request's GPU time is sent
	// as a span under that span. Fixed by its first span.
	TraceID [16]byte
	SpanID  [8]byte
}

// ErrUnknownRequest is EndRequest's answer for an id the hub holds no
// request of.
var ErrUnknownRequest = errors.New("gpuspans: EndRequest: no request of that id is in flight")

// ErrRequestsBacklog is ServeRequests' and LaneWork's answer when the hub's
// inbox is full (harvests too rare for the batches declared): the call is
// dropped and counted (RequestCounters.Backlog), never waited for.
var ErrRequestsBacklog = errors.New("gpuspans: the request inbox is full: harvests are too rare for the batches declared; the call was dropped")

// RequestError is a refused ServeRequests, LaneWork or RequestClass call:
// nothing of the call was recorded.
type RequestError struct {
	Op    string // the call
	Lane  int    // the lane given, or -1
	Index int    // the request's position in the call, or -1
	ID    uint64 // its id
	Why   string
}

func (e *RequestError) Error() string {
	s := "gpuspans: " + e.Op
	if e.Lane >= 0 {
		s += fmt.Sprintf(" lane %d", e.Lane)
	}
	if e.Index >= 0 {
		s += fmt.Sprintf(": request %d (id %d)", e.Index, e.ID)
	}
	return s + ": " + e.Why
}

// ServeRequests says that lane's span of the current step (Step) serves
// reqs. Calls for one lane and step add up. Call it between the step's
// BeginStep and the next, before or after the lane's work. A call with an
// unknown lane, a zero or repeated id (within the lane's span), tokens
// outside 1..MaxRequestTokens, a context over MaxRequestContext, or more
// requests in flight than Options.MaxRequests is refused whole with a
// *RequestError, and ErrRequestsBacklog drops it when the inbox is full;
// either way nothing of it is recorded. It never allocates (but for a
// refusal's error) or waits for the GPU or a harvest: it takes the request
// lock for a copy of reqs. Below LevelKernel, where no lane span is
// recorded, it loads the state word and returns nil.
func (h *Hub) ServeRequests(lane int, reqs []RequestWork) error {
	if Level(atomic.LoadUint32(&h.state)&levelMask) == LevelKernel {
		return h.serveRequests(lane, reqs)
	}
	return nil
}

func (h *Hub) serveRequests(lane int, reqs []RequestWork) error {
	if uint(lane) >= uint(len(h.lanes)) {
		return h.rq.refuse(&RequestError{Op: "ServeRequests", Lane: lane, Index: -1, Why: fmt.Sprintf("no such lane (the hub has %d)", len(h.lanes))})
	}
	return h.rq.serve(lane, h.step.Load(), h.openDevices(), h.now().UnixNano(), reqs)
}

// EndRequest says the request id is done: once the lane spans that served
// it have landed (or are given up), its record comes out of
// FinishedRequests and its totals reach the exporters. It returns
// ErrUnknownRequest when no request of that id is in flight, as for every
// id while the hub never recorded a request (below LevelKernel, say).
// Safe from any goroutine; takes the request lock briefly and never
// allocates. With no request in flight it loads one word.
func (h *Hub) EndRequest(id uint64) error {
	if h.rq.live.Load() == 0 {
		return ErrUnknownRequest
	}
	return h.rq.end(id)
}

// LaneWork says how much work lane's span of the current step did on each
// device: flops floating-point operations and bytes moved to and from
// device memory (either 0: not known), for achieved FLOP/s and bandwidth
// over its busy and served time (LaneAttribution). Calls for one span add
// up. Negative, NaN or infinite values are refused with a *RequestError.
// Like ServeRequests it returns nil below LevelKernel after one load.
func (h *Hub) LaneWork(lane int, flops, bytes float64) error {
	if Level(atomic.LoadUint32(&h.state)&levelMask) == LevelKernel {
		return h.laneWork(lane, flops, bytes)
	}
	return nil
}

func (h *Hub) laneWork(lane int, flops, bytes float64) error {
	if uint(lane) >= uint(len(h.lanes)) {
		return h.rq.refuse(&RequestError{Op: "LaneWork", Lane: lane, Index: -1, Why: fmt.Sprintf("no such lane (the hub has %d)", len(h.lanes))})
	}
	if !(flops >= 0 && flops <= maxWork) || !(bytes >= 0 && bytes <= maxWork) {
		return h.rq.refuse(&RequestError{Op: "LaneWork", Lane: lane, Index: -1, Why: fmt.Sprintf("flops %v and bytes %v: want finite values from 0 to %g", flops, bytes, maxWork)})
	}
	return h.rq.work(lane, h.step.Load(), h.openDevices(), flops, bytes)
}

// maxWork bounds LaneWork's values: 1e30 is far past any span.
const maxWork = 1e30

// openDevices is the mask of devices whose recorder records spans now:
// the lane spans a step's requests wait for.
func (h *Hub) openDevices() uint64 {
	var m uint64
	for _, r := range h.set.Load().current {
		if r.status.Load() == recOpen {
			m |= 1 << uint(r.device)
		}
	}
	return m
}

// RequestClass returns the class of requests of model, adapter and tenant
// (each empty, or a name as lane names are), registering it on first use,
// for RequestWork.Class. Classes are counted apart on every surface; past
// MaxRequestClasses it returns RequestClassOther with an error, so that
// label sets stay bounded. Exporters label the Options.RequestLabels
// heaviest classes and fold the rest into "other". Takes the request
// lock; call it when a model, adapter or tenant first appears, not per
// step.
func (h *Hub) RequestClass(model, adapter, tenant string) (RequestClass, error) {
	for i, s := range [3]string{model, adapter, tenant} {
		if s == "" {
			continue
		}
		if err := checkName(s); err != nil {
			return RequestClassNone, &RequestError{Op: "RequestClass", Lane: -1, Index: -1, Why: fmt.Sprintf("%s: %v", [3]string{"model", "adapter", "tenant"}[i], err)}
		}
	}
	return h.rq.class(classNames{model, adapter, tenant})
}

// classNames are a class's model, adapter and tenant.
type classNames [3]string

// The inbox: what engines said since the last harvest, in cells a
// harvest takes whole (reqInbox.take swaps two buffers).
const (
	cellNew   uint8 = iota + 1 // a request's first span: its id, class and span context
	cellBatch                  // a lane span's batch: the next n cells are its requests
	cellReq                    // one request of a batch
	cellWork                   // a lane span's work (LaneWork)
)

// reqCell is one thing an engine said. The fields each kind uses:
//
//	cellNew    idx, id, class, trace (TraceID, SpanID)
//	cellBatch  lane, step, n, mask (the devices it waits for)
//	cellReq    idx, newTok, decTok, ctx
//	cellWork   lane, step, mask, flops, bytes
type reqCell struct {
	kind                uint8
	lane                uint8
	class               RequestClass
	idx, n              uint32
	newTok, decTok, ctx uint32
	id, step, mask      uint64
	flops, bytes        float64
	trace               [24]byte // TraceID then SpanID
}

// reqSlot is the engine side's state of one request slot.
type reqSlot struct {
	id       uint64
	step     uint64 // the step of its latest span
	lanes    uint64 // lanes it was served in at that step
	call     uint64 // the latest ServeRequests call that named it
	servedNs int64  // when it was last served
	live     bool   // in flight: EndRequest not called yet
}

// reqEnd is an ended request for the harvest.
type reqEnd struct {
	idx       uint32
	abandoned bool
}

// reqInbox is the engine side of attribution: the ids in flight, their
// slots, and the inbox. Guarded by mu, which the engine's calls and a
// harvest's take hold only for a copy; nothing under it waits.
type reqInbox struct {
	live atomic.Int64 // requests in flight, for EndRequest's fast path
	used atomic.Bool  // the table is made: harvests attribute

	mu      sync.Mutex
	maxReqs int
	ids     idTable
	slots   []reqSlot
	free    []uint32  // slots not in use, for new requests
	cells   []reqCell // what engines said since the last take
	ends    []reqEnd  // requests ended since the last take
	scratch []uint32  // per request of a call: its slot, or newBit for a new one
	calls   uint64    // ServeRequests calls, to find an id named twice in one
	sweepNs int64     // when slots were last swept for idle requests

	// The harvest's buffers between takes: take swaps them in.
	spare     []reqCell
	spareEnds []reqEnd

	classes []classNames
	classOf map[classNames]RequestClass

	backlog, refused uint64
}

const newBit = 1 << 31

// inboxCells is the inbox's size for maxReqs requests in flight: a few
// steps of batches holding all of them.
func inboxCells(maxReqs int) int { return 2*maxReqs + 1024 }

// serve records a batch of lane's span at step. mask: the devices it
// waits for; now: Unix ns.
func (in *reqInbox) serve(lane int, step, mask uint64, now int64, reqs []RequestWork) error {
	for i := range reqs {
		r := &reqs[i]
		why := ""
		switch t := uint64(r.NewTokens) + uint64(r.DecodedTokens); {
		case r.ID == 0:
			why = "id 0: ids must not be 0"
		case t == 0:
			why = "no tokens: a request a span serves processes at least one"
		case t > MaxRequestTokens:
			why = fmt.Sprintf("%d tokens in one span, more than %d", t, MaxRequestTokens)
		case r.Context > MaxRequestContext:
			why = fmt.Sprintf("context of %d tokens, more than %d", r.Context, MaxRequestContext)
		}
		if why != "" {
			return in.refuse(&RequestError{Op: "ServeRequests", Lane: lane, Index: i, ID: r.ID, Why: why})
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.ensure()
	if len(reqs) > in.maxReqs {
		return in.refuseLocked(&RequestError{Op: "ServeRequests", Lane: lane, Index: -1, Why: fmt.Sprintf("%d requests in one span, more than Options.MaxRequests (%d)", len(reqs), in.maxReqs)})
	}
	// Check everything first: a refusal must leave no trace.
	in.calls++
	bit := uint64(1) << uint(lane)
	fresh := 0
	for i := range reqs {
		r := &reqs[i]
		if int(r.Class) >= len(in.classes) {
			return in.refuseLocked(&RequestError{Op: "ServeRequests", Lane: lane, Index: i, ID: r.ID, Why: fmt.Sprintf("class %d was never returned by RequestClass", r.Class)})
		}
		idx, ok := in.ids.get(r.ID)
		if !ok {
			in.scratch[i] = newBit
			fresh++
			continue
		}
		s := &in.slots[idx]
		switch {
		case s.call == in.calls:
			return in.refuseLocked(&RequestError{Op: "ServeRequests", Lane: lane, Index: i, ID: r.ID, Why: "named twice in one call"})
		case s.step == step && s.lanes&bit != 0:
			return in.refuseLocked(&RequestError{Op: "ServeRequests", Lane: lane, Index: i, ID: r.ID, Why: fmt.Sprintf("served twice in the lane's span of step %d", step)})
		}
		s.call = in.calls
		in.scratch[i] = idx
	}
	// Bounded before repeatedNew marks the new ids, so that the table stays
	// at most half full.
	if fresh > len(in.free) {
		return in.refuseLocked(&RequestError{Op: "ServeRequests", Lane: lane, Index: -1, Why: fmt.Sprintf("%d requests would be in flight, more than Options.MaxRequests (%d): end requests with EndRequest", in.maxReqs-len(in.free)+fresh, in.maxReqs)})
	}
	if fresh > 0 {
		if err := in.repeatedNew(lane, reqs); err != nil {
			return in.refuseLocked(err)
		}
	}
	if len(in.cells)+1+len(reqs)+fresh > cap(in.cells) {
		in.backlog++
		return ErrRequestsBacklog
	}
	in.cells = append(in.cells, reqCell{kind: cellBatch, lane: uint8(lane), step: step, n: uint32(len(reqs)), mask: mask})
	for i := range reqs {
		r := &reqs[i]
		idx := in.scratch[i]
		if idx == newBit {
			idx = in.free[len(in.free)-1]
			in.free = in.free[:len(in.free)-1]
			in.ids.put(r.ID, idx)
			in.slots[idx] = reqSlot{id: r.ID, live: true}
			in.live.Add(1)
			c := reqCell{kind: cellNew, idx: idx, id: r.ID, class: r.Class}
			copy(c.trace[:16], r.TraceID[:])
			copy(c.trace[16:], r.SpanID[:])
			in.cells = append(in.cells, c)
		}
		s := &in.slots[idx]
		if s.step != step {
			s.step, s.lanes = step, 0
		}
		s.lanes |= bit
		s.servedNs = now
		in.cells = append(in.cells, reqCell{kind: cellReq, idx: idx, newTok: r.NewTokens, decTok: r.DecodedTokens, ctx: r.Context})
	}
	return nil
}

// ensure makes the table at the first call that needs it, so that a hub
// whose engine never says its requests holds none. Caller holds mu.
func (in *reqInbox) ensure() {
	if in.slots != nil {
		return
	}
	n := in.maxReqs
	in.ids.init(n)
	in.slots = make([]reqSlot, n)
	in.free = make([]uint32, n)
	for i := range in.free {
		in.free[i] = uint32(n - 1 - i)
	}
	in.cells = make([]reqCell, 0, inboxCells(n))
	in.spare = make([]reqCell, 0, inboxCells(n))
	in.ends = make([]reqEnd, 0, n)
	in.spareEnds = make([]reqEnd, 0, n)
	in.scratch = make([]uint32, n)
	in.initClasses()
	in.used.Store(true)
}

// repeatedNew refuses a call naming one new id twice. Caller holds mu.
func (in *reqInbox) repeatedNew(lane int, reqs []RequestWork) *RequestError {
	// Mark each new id in the table as it is met, then take the marks out:
	// the table is the only set at hand that allocates nothing.
	var err *RequestError
	n := 0
	for i := range reqs {
		if in.scratch[i] != newBit {
			continue
		}
		if _, ok := in.ids.get(reqs[i].ID); ok {
			err = &RequestError{Op: "ServeRequests", Lane: lane, Index: i, ID: reqs[i].ID, Why: "named twice in one call"}
			break
		}
		in.ids.put(reqs[i].ID, newBit)
		n++
	}
	for i := range reqs {
		if n == 0 {
			break
		}
		if in.scratch[i] == newBit {
			if idx, ok := in.ids.get(reqs[i].ID); ok && idx == newBit {
				in.ids.del(reqs[i].ID)
				n--
			}
		}
	}
	return err
}

func (in *reqInbox) refuse(e *RequestError) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.refuseLocked(e)
}

func (in *reqInbox) refuseLocked(e *RequestError) error {
	in.refused++
	return e
}

// work records a lane span's work.
func (in *reqInbox) work(lane int, step, mask uint64, flops, bytes float64) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.ensure()
	if len(in.cells) >= cap(in.cells) {
		in.backlog++
		return ErrRequestsBacklog
	}
	in.cells = append(in.cells, reqCell{kind: cellWork, lane: uint8(lane), step: step, mask: mask, flops: flops, bytes: bytes})
	return nil
}

// end ends request id.
func (in *reqInbox) end(id uint64) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.slots == nil {
		return ErrUnknownRequest
	}
	idx, ok := in.ids.get(id)
	if !ok {
		return ErrUnknownRequest
	}
	in.endLocked(idx, false)
	return nil
}

// endLocked ends the live request in slot idx. Caller holds mu.
func (in *reqInbox) endLocked(idx uint32, abandoned bool) {
	s := &in.slots[idx]
	in.ids.del(s.id)
	s.live = false
	in.live.Add(-1)
	in.ends = append(in.ends, reqEnd{idx: idx, abandoned: abandoned})
}

// take hands a harvest what engines said since the last take: the cells,
// then the requests ended (an end follows every cell of its request), and
// takes back the slots the harvest released. It ends requests not served
// for RequestIdle first (once a second at most). The slices returned are
// the harvest's until its next take; the two buffers swap, so a take
// copies nothing. now: Unix ns.
func (in *reqInbox) take(released []uint32, now int64, names *[]classNames) ([]reqCell, []reqEnd) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.slots == nil {
		return nil, nil
	}
	*names = append(*names, in.classes[len(*names):]...)
	in.free = append(in.free, released...)
	if now-in.sweepNs >= int64(time.Second) {
		in.sweepNs = now
		for idx := range in.slots {
			if s := &in.slots[idx]; s.live && now-s.servedNs >= int64(RequestIdle) {
				in.endLocked(uint32(idx), true)
			}
		}
	}
	cells, ends := in.cells, in.ends
	in.cells, in.ends = in.spare[:0], in.spareEnds[:0]
	in.spare, in.spareEnds = cells, ends
	return cells, ends
}

// class returns the class of names, registering it.
func (in *reqInbox) class(n classNames) (RequestClass, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.initClasses()
	if c, ok := in.classOf[n]; ok {
		return c, nil
	}
	if len(in.classes) >= MaxRequestClasses {
		in.refused++
		return RequestClassOther, &RequestError{Op: "RequestClass", Lane: -1, Index: -1, Why: fmt.Sprintf("%d classes registered already: %q, %q, %q counts as other", MaxRequestClasses, n[0], n[1], n[2])}
	}
	c := RequestClass(len(in.classes))
	in.classes = append(in.classes, n)
	in.classOf[n] = c
	return c, nil
}

// initClasses makes the built-in classes. Caller holds mu.
func (in *reqInbox) initClasses() {
	if in.classOf != nil {
		return
	}
	in.classOf = make(map[classNames]RequestClass)
	for _, n := range []classNames{{}, {"other", "other", "other"}} {
		in.classOf[n] = RequestClass(len(in.classes))
		in.classes = append(in.classes, n)
	}
}

// countersInto adds the engine side's counts to c, and the requests held
// to held.
func (in *reqInbox) countersInto(c *RequestCounters, held *int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	c.Refused += in.refused
	c.Backlog += in.backlog
	if in.slots != nil {
		*held = in.maxReqs - len(in.free)
	}
}

// idTable maps request ids to slots: open addressing with linear probing
// and backward-shift deletion, in fixed memory (twice the slots, rounded
// up to a power of two), so that nothing on the serving path allocates.
type idTable struct {
	keys []uint64 // 0: empty (ids are never 0)
	vals []uint32
	mask uint64
}

func (t *idTable) init(n int) {
	size := 1
	for size < 2*n {
		size <<= 1
	}
	t.keys = make([]uint64, size)
	t.vals = make([]uint32, size)
	t.mask = uint64(size - 1)
}

// home is key's first probe: a multiplicative hash, so that sequential
// ids spread out.
func (t *idTable) home(key uint64) uint64 { return (key * 0x9e3779b97f4a7c15) >> 32 & t.mask }

func (t *idTable) get(key uint64) (uint32, bool) {
	for i := t.home(key); ; i = (i + 1) & t.mask {
		switch t.keys[i] {
		case key:
			return t.vals[i], true
		case 0:
			return 0, false
		}
	}
}

// put sets key's value; the table must have room (callers bound the keys
// at half its size).
func (t *idTable) put(key uint64, val uint32) {
	i := t.home(key)
	for t.keys[i] != 0 && t.keys[i] != key {
		i = (i + 1) & t.mask
	}
	t.keys[i], t.vals[i] = key, val
}

func (t *idTable) del(key uint64) {
	i := t.home(key)
	for t.keys[i] != key {
		if t.keys[i] == 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	// Shift back the entries after i that probed past it.
	for j := (i + 1) & t.mask; t.keys[j] != 0; j = (j + 1) & t.mask {
		h := t.home(t.keys[j])
		if (j-h)&t.mask >= (j-i)&t.mask {
			t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
			i = j
		}
	}
	t.keys[i] = 0
}

package gpuspans

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
)

// hubModel is a reference model of a hub with device 0 installed, again and
// again, on counting fakes: what the hub should count, which recorders it
// should hold, which pools it should have closed and what it should have
// logged, for any sequence of calls from one goroutine. It mirrors the
// hub's rules (hub.go, recorder.go, spans.go) in the plainest terms: a ring
// per recorder, positions handed out in turn, each span's fate decided at
// the call that decides it.
type hubModel struct {
	slots int
	recs  []*modelRec // the hub's recorders not yet finished, oldest first
	cur   *modelRec   // the installed recorder, or nil
	all   []*modelRec // every recorder ever made, for the fakes' checks
	pools int         // pools opened and not closed

	level     Level
	every     uint64
	armed     bool
	step      uint64
	capturing bool // kernelStream is being captured
	beginErr  bool
	endErr    bool
	round     int // harvests so far, to vary outcomes

	begunFinished                                uint64
	landed, errored, badEnd, laneAlreadyOpen     uint64
	unknownLane, stickyDisables, installFailures uint64
	dropped                                      [NumDropReasons]uint64
}

// modelRec is one install: a recorder and its fake pool.
type modelRec struct {
	f        *fake.Pool
	status   uint32 // recPending, recOpen, recFailed or recDead, and recRetired
	failOpen bool   // the opener fails
	opened   bool
	slots    []modelSlot // made when the pool opens
	next     uint64
	lanes    [2]int64 // open lane span position, or -1
	sticky   bool     // the fake fails every call from now on
	logged   bool     // the first span error was logged
	finished bool     // swept: pool closed, count moved to begunFinished
}

type modelSlot struct {
	pos   int64 // -1: never used
	state uint64
}

func (r *modelRec) state() uint32 { return r.status & recStateMask }
func (r *modelRec) retired() bool { return r.status&recRetired != 0 }

func (r *modelRec) inFlight() uint64 {
	var n uint64
	for _, s := range r.slots {
		if s.state != slotFree {
			n++
		}
	}
	return n
}

// outcome is the harvest outcome of slot in round: the fakes play it, the
// model predicts it.
func outcome(slot, round int) backend.SpanState {
	switch (slot*7 + round*3) % 5 {
	case 0, 1:
		return backend.Done
	case 2, 3:
		return backend.InFlight
	}
	return backend.Failed
}

// call is one backend call on r's pool; false when it met the sticky fault,
// which kills r.
func (m *hubModel) call(r *modelRec) bool {
	if !r.sticky {
		return true
	}
	if r.state() != recDead {
		r.status = r.status&recRetired | recDead
		m.stickyDisables++
	}
	return false
}

func (m *hubModel) logFirst(r *modelRec) { r.logged = true }

// begin mirrors recorder.begin on an open recorder; it returns the position
// or -1.
func (m *hubModel) begin(r *modelRec, capturing bool) int64 {
	pos := r.next
	r.next++
	s := &r.slots[pos%uint64(len(r.slots))]
	switch {
	case s.state != slotFree:
		m.dropped[DropSlotBusy]++
	case !m.call(r):
		m.errored++
	case capturing:
		m.dropped[DropCapturing]++
	case m.beginErr:
		m.errored++
		m.logFirst(r)
	default:
		*s = modelSlot{pos: int64(pos), state: slotOpen}
		return int64(pos)
	}
	return -1
}

// end mirrors recorder.end; false when the span at pos is not open. The
// backend refuses a record on a capturing stream before it could fail
// otherwise, and fails every call once sticky.
func (m *hubModel) end(r *modelRec, pos int64, capturing bool) bool {
	s := &r.slots[uint64(pos)%uint64(len(r.slots))]
	if s.pos != pos || s.state != slotOpen {
		return false
	}
	s.state = slotFree
	switch {
	case r.state() == recDead || !m.call(r):
		m.errored++
	case capturing:
		m.dropped[DropCapturing]++
	case m.endErr:
		m.errored++
		m.logFirst(r)
	default:
		s.state = slotClosed
	}
	return true
}

// harvest mirrors Hub.Harvest; it returns the number of items the fakes
// should have been handed.
func (m *hubModel) harvest() int {
	items := 0
	for _, r := range m.recs {
		var closed []int
		for i, s := range r.slots {
			if s.state == slotClosed {
				closed = append(closed, i)
			}
		}
		if len(closed) == 0 {
			continue
		}
		failAll := r.state() == recDead // no backend call once dead
		if !failAll {
			items += len(closed)
			failAll = !m.call(r)
		}
		for _, i := range closed {
			s := &r.slots[i]
			switch {
			case failAll:
				m.errored++
				s.state = slotFree
			case outcome(i, m.round) == backend.Done:
				m.landed++
				s.state = slotFree
			case outcome(i, m.round) == backend.Failed:
				m.errored++
				m.logFirst(r)
				s.state = slotFree
			}
		}
	}
	m.round++
	m.sweep()
	return items
}

// sweep mirrors Hub.sweep: retired recorders with no slot held finish.
func (m *hubModel) sweep() {
	kept := m.recs[:0]
	for _, r := range m.recs {
		if !r.retired() || r.inFlight() != 0 {
			kept = append(kept, r)
			continue
		}
		if r.opened {
			m.pools--
		}
		m.begunFinished += r.next
		r.finished = true
	}
	m.recs = kept
}

// replace mirrors Hub.replace: r (nil: none) becomes the installed
// recorder and the previous one retires, abandoning its open lane spans.
func (m *hubModel) replace(r *modelRec) {
	prev := m.cur
	m.cur = r
	if prev == nil {
		return
	}
	prev.status |= recRetired
	for lane, pos := range prev.lanes {
		if pos < 0 {
			continue
		}
		prev.lanes[lane] = -1
		s := &prev.slots[uint64(pos)%uint64(len(prev.slots))]
		if s.pos == pos && s.state == slotOpen {
			s.state = slotFree
			m.dropped[DropRetired]++
		}
	}
	m.sweep()
}

// openPending mirrors Hub.openPending.
func (m *hubModel) openPending() {
	for _, r := range m.recs {
		if r.status != recPending {
			continue
		}
		if r.failOpen {
			r.status = recFailed
			m.installFailures++
			continue
		}
		r.opened = true
		r.slots = make([]modelSlot, m.slots)
		for i := range r.slots {
			r.slots[i].pos = -1
		}
		r.status = recOpen
		m.pools++
	}
}

// beginStep mirrors Hub.BeginStep; it returns the harvest's items, or -1
// when it does not harvest.
func (m *hubModel) beginStep() int {
	switch m.level {
	case LevelOff:
	case LevelStep:
		m.step++
	default:
		m.step++
		m.armed = m.step%m.every == 0
		m.openPending()
		return m.harvest()
	}
	if m.pools != 0 {
		return m.harvest()
	}
	return -1
}

func (r *modelRec) wantState() DeviceState {
	switch {
	case r.retired():
		return DeviceRetiring
	case r.status == recPending:
		return DevicePending
	case r.status == recOpen:
		return DeviceOpen
	case r.status == recFailed:
		return DeviceFailed
	}
	return DeviceDead
}

// modelToken is a kernel span the run holds, with the model's view of it.
type modelToken struct {
	sp  KernelSpan
	r   *modelRec
	pos int64
}

func TestRandomSequencesMatchModel(t *testing.T) {
	var total hubModel
	finished := 0
	for seed := int64(1); seed <= 300; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			budget := 1000 // choices: about 400 calls
			slots := []int{8, 8, 8, 1, 3}[seed%5]
			m := runModel(t, slots, func(n int) (int, bool) {
				budget--
				return rng.Intn(n), budget >= 0
			})
			total.landed += m.landed
			total.errored += m.errored
			total.badEnd += m.badEnd
			total.stickyDisables += m.stickyDisables
			total.installFailures += m.installFailures
			total.laneAlreadyOpen += m.laneAlreadyOpen
			total.unknownLane += m.unknownLane
			for i, d := range m.dropped {
				total.dropped[i] += d
			}
			for _, r := range m.all {
				if r.finished && r.opened {
					finished++
				}
			}
		})
	}
	// The runs must reach every outcome, or the model checks little.
	t.Logf("over all seeds: landed %d errored %d dropped %v bad ends %d sticky %d failed opens %d pools closed %d",
		total.landed, total.errored, total.dropped, total.badEnd, total.stickyDisables, total.installFailures, finished)
	for _, n := range []uint64{total.landed, total.errored, total.badEnd, total.stickyDisables, total.installFailures,
		total.laneAlreadyOpen, total.unknownLane, total.dropped[DropSlotBusy], total.dropped[DropCapturing],
		total.dropped[DropRetired], uint64(finished)} {
		if n == 0 {
			t.Errorf("an outcome never happened: landed %d errored %d dropped %v bad ends %d sticky %d failed opens %d lane open %d unknown lane %d pools closed %d",
				total.landed, total.errored, total.dropped, total.badEnd, total.stickyDisables, total.installFailures,
				total.laneAlreadyOpen, total.unknownLane, finished)
			break
		}
	}
}

// runModel plays the calls that next chooses (next(n) returns a choice in
// [0, n), or false once the run is over) on a hub and on the model, on a
// ring of slots, and fails t at the first difference: every counter,
// every recorder's state, the backend calls, the closed pools and the log
// lines. The calls include misuse (unknown lanes, double and stale ends,
// junk levels and periods), re-installs, failing opens, uninstalls,
// captures, record errors and sticky faults.
func runModel(t *testing.T, slots int, next func(n int) (int, bool)) *hubModel {
	t.Helper()
	choose := func(n int) int {
		k, _ := next(n)
		return k
	}
	log := NewLog()
	h, err := New(Options{Level: LevelKernel, KernelSpanEvery: 1, Slots: slots, Logf: log.Logf})
	if err != nil {
		t.Fatal(err)
	}
	m := &hubModel{slots: slots, level: LevelKernel, every: 1}
	recordErr := func(op fake.Op, slot int, s backend.Stream) error {
		if op == fake.OpRecordBegin && m.beginErr || op == fake.OpRecordEnd && m.endErr {
			return fmt.Errorf("scripted %v error", op)
		}
		return nil
	}
	install := func(failOpen bool) {
		o := fake.Options{Slots: slots}
		if failOpen {
			o.OpenErr = fmt.Errorf("scripted open error: %w", backend.ErrNoDriver)
		}
		f := newFake(t, o)
		f.SetOutcome(func(slot int) (backend.SpanState, int64) { return outcome(slot, m.round), 1000 })
		f.SetRecordError(recordErr)
		f.SetCapturing(kernelStream, m.capturing)
		if err := h.Install(0, laneStream, f.Opener()); err != nil {
			t.Fatal(err)
		}
		r := &modelRec{f: f, failOpen: failOpen, lanes: [2]int64{-1, -1}}
		m.recs = append(m.recs, r)
		m.all = append(m.all, r)
		m.replace(r)
	}
	var tokens []modelToken
	var trace []string
	items := func() int64 {
		var n int64
		for _, r := range m.all {
			n += r.f.Calls().Items
		}
		return n
	}
	harvest := func(call func(), model func() int) {
		before := items()
		call() // the fakes play round m.round
		want := model()
		if want < 0 {
			want = 0
		}
		if got := items() - before; got != int64(want) {
			t.Fatalf("harvest submitted %d items; the model has %d\n%v", got, want, strings.Join(trace, "\n"))
		}
	}

	install(false)
	harvest(h.BeginStep, m.beginStep)
	for op := 0; ; op++ {
		k, ok := next(100)
		if !ok {
			break
		}
		var name string
		switch {
		case k < 26:
			name = "KernelBegin"
			sp := h.KernelBegin(1, kernelStream)
			pos := int64(-1)
			if m.armed && m.cur != nil && m.cur.status == recOpen {
				pos = m.begin(m.cur, m.capturing)
			}
			if (sp != KernelSpan{}) != (pos >= 0) || pos >= 0 && (sp.gen != uint64(pos)+1 || sp.r != h.set.Load().byDevice[0]) {
				t.Fatalf("KernelBegin gave %+v; model position %d\n%v", sp, pos, strings.Join(trace, "\n"))
			}
			if pos >= 0 {
				tokens = append(tokens, modelToken{sp, m.cur, pos})
			}
		case k < 46 && len(tokens) > 0:
			i := choose(len(tokens))
			tok := tokens[i]
			name = fmt.Sprint("KernelEnd pos ", tok.pos)
			h.KernelEnd(tok.sp)
			if !m.end(tok.r, tok.pos, m.capturing) {
				m.badEnd++
			}
			if choose(4) != 0 { // else keep it, to end it again later
				tokens = append(tokens[:i], tokens[i+1:]...)
			}
		case k < 56:
			lane := choose(4) - 1 // -1 and 2 are unknown lanes
			name = fmt.Sprint("LaneBegin ", lane)
			h.LaneBegin(lane)
			switch {
			case m.level != LevelKernel:
			case lane < 0 || lane > 1:
				m.unknownLane++
			case m.cur == nil || m.cur.status != recOpen:
			case m.cur.lanes[lane] >= 0:
				m.laneAlreadyOpen++
			default:
				m.cur.lanes[lane] = m.begin(m.cur, false)
			}
		case k < 64:
			lane := choose(4) - 1
			name = fmt.Sprint("LaneEnd ", lane)
			h.LaneEnd(lane)
			if lane >= 0 && lane <= 1 && m.cur != nil && m.cur.lanes[lane] >= 0 {
				m.end(m.cur, m.cur.lanes[lane], false)
				m.cur.lanes[lane] = -1
			}
		case k < 70:
			name = "Harvest"
			harvest(h.Harvest, m.harvest)
		case k < 78:
			name = "BeginStep"
			harvest(h.BeginStep, m.beginStep)
		case k < 80:
			m.capturing = !m.capturing
			name = fmt.Sprint("capturing ", m.capturing)
			for _, r := range m.all {
				r.f.SetCapturing(kernelStream, m.capturing)
			}
		case k < 83:
			m.beginErr = choose(3) == 0
			m.endErr = choose(3) == 0
			name = fmt.Sprint("errors ", m.beginErr, m.endErr)
		case k < 86:
			l := Level(choose(5)) // 3 and 4 are junk
			name = fmt.Sprint("SetLevel ", l)
			err := h.SetLevel(l)
			if (err == nil) != l.valid() {
				t.Fatalf("SetLevel(%v) = %v", l, err)
			}
			if l.valid() {
				m.level = l
				if l != LevelKernel {
					m.armed = false
				}
			}
		case k < 88:
			n := choose(5) - 1 // -1 and 0 are refused
			name = fmt.Sprint("SetKernelSpanEvery ", n)
			err := h.SetKernelSpanEvery(n)
			if (err == nil) != (n > 0) {
				t.Fatalf("SetKernelSpanEvery(%d) = %v", n, err)
			}
			if n > 0 {
				m.every = uint64(n)
			}
		case k < 92:
			failOpen := choose(4) == 0
			name = fmt.Sprint("Install, failing open: ", failOpen)
			install(failOpen)
		case k < 93:
			name = "Uninstall"
			h.Uninstall(0)
			m.replace(nil)
		case k < 95:
			name = "sticky fault"
			if r := m.cur; r != nil && r.status == recOpen && !r.sticky {
				r.sticky = true
				r.f.SetSticky(true)
			}
		default:
			name = "KernelEnd zero"
			h.KernelEnd(KernelSpan{})
		}
		trace = append(trace, name)
		m.check(t, h, log, trace)
	}
	return m
}

// check compares the hub with the model after a call.
func (m *hubModel) check(t *testing.T, h *Hub, log Log, trace []string) {
	t.Helper()
	fail := func(format string, args ...interface{}) {
		t.Helper()
		t.Fatalf("after %d calls: %s\n%s", len(trace), fmt.Sprintf(format, args...), strings.Join(trace, "\n"))
	}
	s := h.Snapshot()
	CheckBalance(t, &s)
	begun, inFlight := m.begunFinished, uint64(0)
	for _, r := range m.recs {
		begun += r.next
		inFlight += r.inFlight()
	}
	c := s.Counters
	if c.Begun != begun || c.Landed != m.landed || c.Errored != m.errored || c.InFlight != inFlight ||
		c.Dropped != m.dropped || c.BadEnd != m.badEnd || c.LaneAlreadyOpen != m.laneAlreadyOpen ||
		c.UnknownLane != m.unknownLane || c.StickyDisables != m.stickyDisables || c.InstallFailures != m.installFailures {
		fail("the hub has %+v\nthe model has begun %d landed %d errored %d in flight %d dropped %v bad end %d lane open %d unknown lane %d sticky %d install failures %d",
			c, begun, m.landed, m.errored, inFlight, m.dropped, m.badEnd, m.laneAlreadyOpen, m.unknownLane, m.stickyDisables, m.installFailures)
	}
	if s.Level != m.level || s.Step != m.step || s.KernelSpanEvery != int(m.every) {
		fail("level %v step %d every %d; the model has %v %d %d", s.Level, s.Step, s.KernelSpanEvery, m.level, m.step, m.every)
	}
	if len(s.Devices) != len(m.recs) {
		fail("devices %+v; the model has %d recorders", s.Devices, len(m.recs))
	}
	for i, r := range m.recs {
		if d := s.Devices[i]; d.State != r.wantState() || d.InFlight != r.inFlight() {
			fail("device %d is %+v; the model has %v with %d in flight", i, d, r.wantState(), r.inFlight())
		}
	}
	logged := 0
	for i, r := range m.all {
		calls := r.f.Calls()
		if calls.CallsAfterSticky != 0 {
			fail("recorder %d called its pool %d times after a sticky error", i, calls.CallsAfterSticky)
		}
		if r.f.Closed() != (r.finished && r.opened) {
			fail("recorder %d: pool closed %v; the model has finished %v opened %v", i, r.f.Closed(), r.finished, r.opened)
		}
		if r.logged {
			logged++
		}
	}
	// The sticky error and the failed open say why once each; span errors
	// are logged once per recorder.
	if n := log.Count("until it is installed again"); n != int(m.stickyDisables) {
		fail("%d sticky log lines for %d sticky disables: %q", n, m.stickyDisables, log.Lines())
	}
	if n := log.Count("GPU spans off on device 0"); n != int(m.stickyDisables+m.installFailures) {
		fail("%d 'spans off' log lines for %d sticky disables and %d failed opens", n, m.stickyDisables, m.installFailures)
	}
	if n := log.Count("span error on device 0"); n != logged {
		fail("%d span error log lines; the model logged for %d recorders", n, logged)
	}
}

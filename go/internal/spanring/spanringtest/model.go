// Package spanringtest is the reference model of go/internal/spanring's
// protocol, the whole of it in one place: go/capi's TestRingDifferential
// drives the ring's two writers, go/gpuspans' recorder and go/capi's
// spanpath.c, on one hub by the same operations and compares every word
// with this model after each one. It models one device whose events
// complete at once, driven from one thread: steps (BeginStep, and
// NextStep's step and shared boundary), lane begins, ends and shared
// boundaries, harvests, levels, a stream being captured, record calls that
// fail (an error, or a sticky one that kills the recorder), failing pool
// opens, and installs and uninstalls that retire the recorder, whose pool
// closes once its spans are gone.
//
// To change the ring, change this model first, then both writers
// (CONTRIBUTING.md, changing the span ring).
package spanringtest

import (
	"fmt"
	"math/rand"
	"strings"
	"sync/atomic"

	"github.com/gpuspans/gpuspans/go/internal/spanring"
)

// Op is one operation on the hub.
type Op struct {
	Kind     OpKind
	From, To int    // lanes: Begin and End take To; Next and NextStep end From and begin To
	Level    uint32 // SetLevel's: LevelOff, LevelStep or LevelKernel
	Fault    Fault  // what the op's first event record does (lane ops and NextStep)
	C        bool   // through the C path (else Go's)
}

// OpKind is what an Op does.
type OpKind uint8

// The operations. Harvest, SetLevel, Capture, Install and Uninstall are Go's
// only (the C path has none); the others go either way.
const (
	Begin     OpKind = iota // LaneBegin(To)
	End                     // LaneEnd(To)
	Next                    // NextLane(From, To)
	Harvest                 // a harvest, which lands every closed span and closes idle retired pools
	Step                    // BeginStep: counts the step, arms one in Every, opens a pending pool
	NextStep                // NextStep(From, To): BeginStep, then NextLane(From, To)
	SetLevel                // SetLevel(Level)
	Capture                 // the lane stream starts (To 1) or stops (To 0) being captured into a graph
	Install                 // Install on the device again: the recorder retires, a new one waits for a step at Kernel
	Uninstall               // the recorder retires and none replaces it
)

// Fault is what the first event record of an op does, should it make one:
// records after it in the op succeed.
type Fault uint8

// The faults.
const (
	NoFault      Fault = iota
	RecordError        // the record fails with a driver error: the span is counted errored
	RecordSticky       // the record fails with a sticky error: the recorder turns dead
)

// The levels (gpuspans.Level, hub.h's GS_HUB_LEVEL_*).
const (
	LevelOff uint32 = iota
	LevelStep
	LevelKernel
)

func (o Op) String() string {
	path := "go"
	if o.C {
		path = "c"
	}
	fault := [...]string{"", ", record fails", ", record sticky"}[o.Fault]
	switch o.Kind {
	case Step:
		return path + " step"
	case Begin:
		return fmt.Sprintf("%s begin %d%s", path, o.To, fault)
	case End:
		return fmt.Sprintf("%s end %d%s", path, o.To, fault)
	case Next:
		return fmt.Sprintf("%s next %d->%d%s", path, o.From, o.To, fault)
	case NextStep:
		return fmt.Sprintf("%s next step %d->%d%s", path, o.From, o.To, fault)
	case SetLevel:
		return fmt.Sprintf("level %s", [...]string{"off", "step", "kernel", "?"}[min(o.Level, 3)])
	case Capture:
		return fmt.Sprintf("capturing %v", o.To != 0)
	case Install:
		return "install"
	case Uninstall:
		return "uninstall"
	}
	return "harvest"
}

// Ops generates random operations over lanes lanes, each span operation
// sent to C or Go at random.
type Ops struct {
	rng   *rand.Rand
	lanes int
}

// NewOps returns a generator seeded with seed.
func NewOps(seed int64, lanes int) *Ops {
	return &Ops{rng: rand.New(rand.NewSource(seed)), lanes: lanes}
}

// Op returns the next operation, out of 1000: begins 230, ends 180, shared
// boundaries 220, next steps 80, harvests 110, steps 120, levels 25 (half of
// them Kernel), captures 15 (a quarter of them on), installs 15,
// uninstalls 5. One span operation in 25 has a fault, one in 4 of those
// sticky.
func (g *Ops) Op() Op {
	o := Op{From: g.rng.Intn(g.lanes), To: g.rng.Intn(g.lanes), C: g.rng.Intn(2) == 0}
	switch r := g.rng.Intn(1000); {
	case r < 230:
		o.Kind = Begin
	case r < 410:
		o.Kind = End
	case r < 630:
		o.Kind = Next
	case r < 710:
		o.Kind = NextStep
	case r < 820:
		o.Kind, o.C = Harvest, false
	case r < 940:
		o.Kind = Step
	case r < 965:
		o.Kind, o.C, o.Level = SetLevel, false, [...]uint32{LevelOff, LevelStep, LevelKernel, LevelKernel}[g.rng.Intn(4)]
	case r < 980:
		o.Kind, o.C, o.To = Capture, false, min(g.rng.Intn(4), 1)^1
	case r < 995:
		o.Kind, o.C = Install, false
	default:
		o.Kind, o.C = Uninstall, false
	}
	if o.Kind == Begin || o.Kind == End || o.Kind == Next || o.Kind == NextStep {
		if f := g.rng.Intn(100); f < 3 {
			o.Fault = RecordError
		} else if f < 4 {
			o.Fault = RecordSticky
		}
	}
	return o
}

// Slot is a model slot: the fields both writers write.
type Slot struct {
	Word            uint64
	Key, Step, From uint64
	Lent            uint32
	Kind            uint32
}

// Steps is the hub's step words: spanring.Hub's, read.
type Steps struct {
	Step, LeakClock, ArmedSteps uint64
	State                       uint32 // level | armed | tracer bits
	Mirror                      uint32 // the mirror word: State, and a pools bit while pools are open
}

// Rec is one recorder (one install): its status and its ring.
type Rec struct {
	Status  uint32 // spanring.Status*, and StatusRetired
	Next    uint64 // with NextSealed once the hub finished it
	LaneTok []uint64
	Slots   []Slot // nil until its pool opens
}

// Model is the hub's ring words as the protocol says they must be.
type Model struct {
	// Recs are the hub's recorders, oldest first: retired ones whose pools
	// have not closed yet, and the installed one (Cur) last. A recorder
	// the hub finishes stays, sealed, until Prune.
	Recs []*Rec
	Cur  *Rec // the installed recorder, or nil

	OpenLanes       int64
	LaneAlreadyOpen uint64
	Dropped         [3]uint64 // slot busy, capturing, retired: the Config.Drops reasons
	Errored         uint64
	Landed          uint64
	StickyDisables  uint64
	InstallFailures uint64
	Pools           int    // pools open
	Lends           uint64 // shared boundaries whose next span began at the last one's end event
	CStepGo         bool   // the last op, sent to C, went into Go for its step (a pool to open)
	Steps           Steps
	capturing       bool
	fault           Fault // the op's, until a record takes it
	c               Config
}

// Config is what the model takes from the hub: the ring's size and the
// values of gpuspans' encoding it needs.
type Config struct {
	Slots, Lanes int
	Kind         uint32 // the spans' kind: gpuspans.KindLane
	Every        uint64 // KernelSpanEvery
	ArmedBit     uint32 // the state's armed bit: gpuspans.MirrorArmed
	PoolsBit     uint32 // the mirror's pools bit: gpuspans.MirrorPools
	LevelMask    uint32 // the state's level bits
	Drops        [3]int // gpuspans.DropSlotBusy, DropCapturing and DropRetired: indices of Recorder.Dropped
}

// Model.Dropped's indices.
const (
	dropBusy = iota
	dropCapturing
	dropRetired
)

// New returns the model of a fresh hub at level Kernel whose one recorder
// has just opened its pool, its step words as steps say.
func New(c Config, steps Steps) *Model {
	m := &Model{Steps: steps, c: c, Pools: 1}
	r := &Rec{Status: spanring.StatusOpen, LaneTok: make([]uint64, c.Lanes), Slots: make([]Slot, c.Slots)}
	m.Recs, m.Cur = []*Rec{r}, r
	return m
}

func (r *Rec) slot(pos uint64) *Slot { return &r.Slots[pos%uint64(len(r.Slots))] }

func (m *Model) level() uint32 { return m.Steps.State & m.c.LevelMask }

// Apply does op.
func (m *Model) Apply(op Op) {
	m.fault, m.CStepGo = op.Fault, false
	defer func() { m.fault = NoFault }()
	switch op.Kind {
	case Step:
		m.step(op.C)
	case NextStep:
		if m.step(op.C) {
			m.nextLane(op.From, op.To)
		}
	case Begin:
		m.laneBegin(op.To)
	case End:
		m.laneEnd(op.To)
	case Next:
		m.nextLane(op.From, op.To)
	case Harvest:
		m.harvest()
	case SetLevel:
		s := &m.Steps
		armed := uint32(0)
		if op.Level == LevelKernel {
			armed = s.State & m.c.ArmedBit
		}
		s.State = s.State&^(m.c.LevelMask|m.c.ArmedBit) | op.Level | armed
	case Capture:
		m.capturing = op.To != 0
	case Install:
		r := &Rec{Status: spanring.StatusPending, LaneTok: make([]uint64, m.c.Lanes)}
		m.Recs = append(m.Recs, r)
		m.replace(r)
	case Uninstall:
		m.replace(nil)
	}
	m.Steps.Mirror = m.Steps.State
	if m.Pools != 0 {
		m.Steps.Mirror |= m.c.PoolsBit
	}
}

// refused is what a record on a stream being captured does: the pool
// refuses it before recording.
const refused Fault = 255

// record is one event record of the pool: the stream's capture is checked
// before the record, which the op's fault may fail.
func (m *Model) record() Fault {
	if m.capturing {
		return refused
	}
	f := m.fault
	m.fault = NoFault
	return f
}

// step is BeginStep; false when the state word says there is nothing to
// do, and the call is not made.
func (m *Model) step(c bool) bool {
	s := &m.Steps
	if s.State == 0 && m.Pools == 0 {
		return false
	}
	s.LeakClock++
	if m.level() == LevelOff {
		return true
	}
	s.Step++
	if m.level() != LevelKernel {
		return true
	}
	// A pool to open is Go's: a step sent to C goes there.
	for _, r := range m.Recs {
		if r.Status != spanring.StatusPending {
			continue
		}
		m.CStepGo = c
		if m.fault != NoFault { // the pool's first record, its clock anchor, fails: so does the open
			m.fault = NoFault
			r.Status = spanring.StatusFailed
			m.InstallFailures++
			continue
		}
		r.Slots = make([]Slot, m.c.Slots)
		r.Status = spanring.StatusOpen
		m.Pools++
	}
	s.State &^= m.c.ArmedBit
	if s.Step%m.c.Every == 0 {
		s.State |= m.c.ArmedBit
		s.ArmedSteps++
	}
	return true
}

func (m *Model) laneBegin(lane int) {
	if m.level() != LevelKernel {
		return
	}
	if r := m.Cur; r != nil && r.Status == spanring.StatusOpen {
		m.recLaneBegin(r, lane)
	}
}

func (m *Model) laneEnd(lane int) {
	if m.level() != LevelKernel && m.Pools == 0 || m.OpenLanes == 0 || m.Cur == nil {
		return
	}
	r := m.Cur
	t := r.LaneTok[lane]
	if t == 0 {
		return
	}
	r.LaneTok[lane] = 0
	m.OpenLanes--
	m.end(r, t-1)
}

// nextLane is NextLane: below Kernel it only ends from.
func (m *Model) nextLane(from, to int) {
	if m.level() != LevelKernel && m.Pools == 0 {
		return
	}
	begin := to >= 0 && m.level() == LevelKernel
	if m.OpenLanes == 0 {
		if begin {
			m.laneBegin(to)
		}
		return
	}
	if r := m.Cur; r != nil {
		m.recLaneNext(r, from, to, begin && r.Status == spanring.StatusOpen)
	}
}

func (m *Model) recLaneBegin(r *Rec, lane int) {
	if r.LaneTok[lane] != 0 {
		m.LaneAlreadyOpen++
		return
	}
	pos, ok := m.begin(r, uint64(lane))
	m.laneOpened(r, lane, pos, ok, false)
}

// laneOpened ends a lane begin: lane holds the span at pos, or, when none
// began, gives up the place in the open count it took (counted).
func (m *Model) laneOpened(r *Rec, lane int, pos uint64, ok, counted bool) {
	if !ok {
		r.LaneTok[lane] = 0
		if counted {
			m.OpenLanes--
		}
		return
	}
	r.LaneTok[lane] = pos + 1
	if !counted {
		m.OpenLanes++
	}
}

func (m *Model) recLaneNext(r *Rec, from, to int, begin bool) {
	t := r.LaneTok[from]
	if t == 0 {
		if begin {
			m.recLaneBegin(r, to)
		}
		return
	}
	r.LaneTok[from] = 0
	if !begin || r.LaneTok[to] != 0 {
		if begin {
			m.LaneAlreadyOpen++
		}
		m.OpenLanes--
		m.end(r, t-1)
		return
	}
	// from's place in the open count passes to to.
	pos, ok := m.follow(r, t-1, uint64(to))
	m.laneOpened(r, to, pos, ok, true)
}

// claim takes the next position's slot (opening); false when the span was
// dropped.
func (m *Model) claim(r *Rec, key uint64) (uint64, bool) {
	pos := r.Next
	r.Next++
	sl := r.slot(pos)
	if sl.Word&spanring.StateMask != spanring.SlotFree || sl.Word>>spanring.PosShift > pos {
		m.Dropped[dropBusy]++
		return 0, false
	}
	sl.Word = spanring.Pack(pos, spanring.SlotOpening)
	sl.Kind, sl.Key, sl.Step, sl.From = m.c.Kind, key, m.Steps.Step, 0
	if r.Status != spanring.StatusOpen {
		m.release(r, pos, dropRetired)
		return 0, false
	}
	return pos, true
}

func (m *Model) begin(r *Rec, key uint64) (uint64, bool) {
	pos, ok := m.claim(r, key)
	if !ok {
		return 0, false
	}
	if f := m.record(); f != NoFault {
		m.failed(r, pos, f)
		return 0, false
	}
	r.slot(pos).Word = spanring.Pack(pos, spanring.SlotOpen)
	return pos, true
}

// end records the end of the span at pos, if it is open.
func (m *Model) end(r *Rec, pos uint64) {
	sl := r.slot(pos)
	if sl.Word != spanring.Pack(pos, spanring.SlotOpen) {
		return
	}
	sl.Word = spanring.Pack(pos, spanring.SlotClosing)
	m.endClaimed(r, pos)
}

func (m *Model) endClaimed(r *Rec, pos uint64) {
	if r.Status&spanring.StatusStateMask == spanring.StatusDead {
		m.release(r, pos, -1)
		return
	}
	if f := m.record(); f != NoFault {
		m.failed(r, pos, f)
		return
	}
	r.slot(pos).Word = spanring.Pack(pos, spanring.SlotClosed)
}

// follow ends the open span at prev and begins one for key at its end event.
func (m *Model) follow(r *Rec, prev, key uint64) (uint64, bool) {
	ps := r.slot(prev)
	if ps.Word != spanring.Pack(prev, spanring.SlotOpen) {
		m.end(r, prev)
		return m.begin(r, key)
	}
	ps.Word = spanring.Pack(prev, spanring.SlotClosing)
	if r.Status != spanring.StatusOpen {
		m.endClaimed(r, prev)
		return m.begin(r, key)
	}
	pos, ok := m.claim(r, key)
	if !ok {
		m.endClaimed(r, prev)
		return 0, false
	}
	if f := m.record(); f != NoFault {
		// Nothing was recorded: both spans fail alike.
		m.failed(r, prev, f)
		m.failed(r, pos, f)
		return 0, false
	}
	r.slot(pos).From = prev + 1
	ps.Lent = spanring.LentWaiting
	m.Lends++
	r.slot(pos).Word = spanring.Pack(pos, spanring.SlotOpen)
	ps.Word = spanring.Pack(prev, spanring.SlotClosed)
	return pos, true
}

// failed ends the span at pos whose record failed as f says.
func (m *Model) failed(r *Rec, pos uint64, f Fault) {
	switch f {
	case refused:
		m.release(r, pos, dropCapturing)
		return
	case RecordSticky:
		if r.Status&spanring.StatusStateMask != spanring.StatusDead {
			r.Status = r.Status&spanring.StatusRetired | spanring.StatusDead
			m.StickyDisables++
		}
	}
	m.release(r, pos, -1)
}

// release frees the slot of a span that will not land, counted as dropped
// for reason (a Model.Dropped index), or errored (-1).
func (m *Model) release(r *Rec, pos uint64, reason int) {
	m.free(r, pos)
	if reason < 0 {
		m.Errored++
		return
	}
	m.Dropped[reason]++
}

// free frees the slot of the span at pos and gives back the end event it
// borrowed; a slot whose end event a later span still begins at waits lent.
func (m *Model) free(r *Rec, pos uint64) {
	sl := r.slot(pos)
	m.giveBack(r, sl.From)
	sl.From = 0
	if sl.Lent == spanring.LentWaiting {
		sl.Lent = spanring.LentLanded
		sl.Word = spanring.Pack(pos, spanring.SlotLent)
		return
	}
	sl.Word = spanring.Pack(pos, spanring.SlotFree)
}

func (m *Model) giveBack(r *Rec, from uint64) {
	if from == 0 {
		return
	}
	l := r.slot(from - 1)
	switch l.Lent {
	case spanring.LentWaiting:
		l.Lent = spanring.LentNone
	case spanring.LentLanded:
		l.Lent = spanring.LentNone
		l.Word = spanring.Pack(from-1, spanring.SlotFree)
	}
}

// replace installs r (nil: none) and retires the recorder it replaces: its
// open lane spans are abandoned, and its pool closes at once if idle.
func (m *Model) replace(r *Rec) {
	prev := m.Cur
	m.Cur = r
	if prev == nil {
		return
	}
	prev.Status |= spanring.StatusRetired
	for lane, t := range prev.LaneTok {
		if t == 0 {
			continue
		}
		prev.LaneTok[lane] = 0
		m.OpenLanes--
		pos := t - 1
		sl := prev.slot(pos)
		if sl.Word == spanring.Pack(pos, spanring.SlotOpen) {
			sl.Word = spanring.Pack(pos, spanring.SlotFree) // From stays: nobody reads it on a free slot
			m.giveBack(prev, sl.From)
			m.Dropped[dropRetired]++
		}
	}
	m.sweep()
}

// harvest lands every closed span of every recorder (errored on a dead
// one, which makes no pool call), visiting each ring's slots in the order
// of the last len(Slots) positions handed out, as the Go harvest does; then
// it closes the idle retired pools.
func (m *Model) harvest() {
	for _, r := range m.Recs {
		n := uint64(len(r.Slots))
		if n == 0 || r.Next&spanring.NextSealed != 0 {
			continue
		}
		dead := r.Status&spanring.StatusStateMask == spanring.StatusDead
		for p := r.Next - min(r.Next, n); p < r.Next; p++ {
			sl := r.slot(p)
			if sl.Word&spanring.StateMask != spanring.SlotClosed {
				continue
			}
			pos := sl.Word>>spanring.PosShift - 1
			if dead {
				m.release(r, pos, -1)
				continue
			}
			m.Landed++
			m.free(r, pos)
		}
	}
	m.sweep()
}

// sweep finishes the retired recorders with no slot in use: their pools
// close and their Next is sealed.
func (m *Model) sweep() {
	for _, r := range m.Recs {
		if r.Status&spanring.StatusRetired == 0 || r.Next&spanring.NextSealed != 0 {
			continue
		}
		busy := false
		for _, s := range r.Slots {
			if st := s.Word & spanring.StateMask; st != spanring.SlotFree && st != spanring.SlotLent {
				busy = true
			}
		}
		if busy {
			continue
		}
		if r.Slots != nil {
			m.Pools--
		}
		r.Next |= spanring.NextSealed
	}
}

// Prune forgets the finished recorders, once Diff has seen them sealed; it
// returns which of Recs it kept, for the caller to forget the same.
func (m *Model) Prune() []bool {
	keep := make([]bool, len(m.Recs))
	kept := m.Recs[:0]
	for i, r := range m.Recs {
		if keep[i] = r.Next&spanring.NextSealed == 0; keep[i] {
			kept = append(kept, r)
		}
	}
	m.Recs = kept
	return keep
}

// Ring is the hub's words as the writers left them: its recorders, as
// Model.Recs, and the device's and the hub's counts.
type Ring struct {
	Recs            []spanring.Recorder
	Dropped         []atomic.Uint64 // the device's, by gpuspans.DropReason
	Errored         *atomic.Uint64
	OpenLanes       int64
	LaneAlreadyOpen uint64
	Steps           Steps
}

// Diff lists where r differs from the model, "" when nowhere.
func (m *Model) Diff(r Ring) string {
	var b strings.Builder
	f := func(format string, args ...interface{}) { fmt.Fprintf(&b, format+"\n", args...) }
	if len(r.Recs) != len(m.Recs) {
		f("%d recorders, the model has %d", len(r.Recs), len(m.Recs))
		return b.String()
	}
	for i, mr := range m.Recs {
		rec := &r.Recs[i]
		if st := rec.Status.Load(); st != mr.Status {
			f("recorder %d: status %#x, want %#x", i, st, mr.Status)
		}
		if len(rec.Slots) != len(mr.Slots) || len(rec.LaneTok) != len(mr.LaneTok) {
			f("recorder %d: %d slots and %d lanes, the model has %d and %d", i, len(rec.Slots), len(rec.LaneTok), len(mr.Slots), len(mr.LaneTok))
			continue
		}
		if n := rec.Next.Load(); n != mr.Next {
			f("recorder %d: next %#x, want %#x", i, n, mr.Next)
		}
		for j := range mr.Slots {
			s, w := &rec.Slots[j], &mr.Slots[j]
			got := Slot{Word: s.Word.Load(), Key: s.Key, Step: s.Step, From: s.From, Lent: s.Lent.Load(), Kind: s.Kind}
			if got != *w {
				f("recorder %d slot %d: %s, want %s", i, j, show(got), show(*w))
			}
		}
		for l := range mr.LaneTok {
			if t := rec.LaneTok[l].Load(); t != mr.LaneTok[l] {
				f("recorder %d: lane %d token %d, want %d", i, l, t, mr.LaneTok[l])
			}
		}
	}
	if r.OpenLanes != m.OpenLanes {
		f("open lanes %d, want %d", r.OpenLanes, m.OpenLanes)
	}
	if r.LaneAlreadyOpen != m.LaneAlreadyOpen {
		f("lane already open %d, want %d", r.LaneAlreadyOpen, m.LaneAlreadyOpen)
	}
	for i, name := range [...]string{"slot busy", "capturing", "retired"} {
		if d := r.Dropped[m.c.Drops[i]].Load(); d != m.Dropped[i] {
			f("dropped (%s) %d, want %d", name, d, m.Dropped[i])
		}
	}
	if e := r.Errored.Load(); e != m.Errored {
		f("errored %d, want %d", e, m.Errored)
	}
	if r.Steps != m.Steps {
		f("step words %+v, want %+v", r.Steps, m.Steps)
	}
	return b.String()
}

var states = [...]string{"free", "opening", "open", "closing", "closed", "lent", "6", "7"}

func show(s Slot) string {
	return fmt.Sprintf("{pos %d %s key %d step %d from %d lent %d kind %d}", int64(s.Word>>spanring.PosShift)-1,
		states[s.Word&spanring.StateMask], s.Key, s.Step, s.From, s.Lent, s.Kind)
}

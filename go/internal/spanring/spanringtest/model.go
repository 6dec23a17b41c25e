// Package spanringtest is the reference model of go/internal/spanring's
// protocol, the whole of it in one place: go/capi's TestRingDifferential
// drives the ring's two writers, go/gpuspans' recorder and go/capi's
// spanpath.c, on one hub by the same operations (Ops) and compares every
// word with this model after each one (Diff); go/gpuspans' model test
// drives the Go writer alone on a fake pool whose harvests also leave
// spans in flight or fail them. It models one device driven from one
// thread: steps (BeginStep, and NextStep's step and shared boundary), lane
// begins, ends and shared boundaries (unknown lanes too), kernel spans
// (ended twice too), harvests, levels and arming periods (refused ones
// too), a stream being captured, record calls that fail (an error, or a
// sticky one that kills the recorder), failing pool opens, and installs
// and uninstalls that retire the recorder, whose pool closes once its
// spans are gone.
//
// To change the ring, change this model first, then both writers
// (CONTRIBUTING.md, changing the span ring).
package spanringtest

import "github.com/gpuspans/gpuspans/go/internal/spanring"

// Rec is one recorder (one install): its status and its ring.
type Rec struct {
	Status  uint32 // spanring.Status*, and StatusRetired
	Next    uint64 // with NextSealed once the hub finished it
	LaneTok []uint64
	Slots   []Slot // nil until its pool opens
	Logged  bool   // its first span error was logged
}

// Finished reports whether the hub finished r: retired, its pool closed.
func (r *Rec) Finished() bool { return r.Next&spanring.NextSealed != 0 }

// InFlight is the number of r's slots held by a span.
func (r *Rec) InFlight() uint64 {
	var n uint64
	for _, s := range r.Slots {
		if st := s.Word & spanring.StateMask; st != spanring.SlotFree && st != spanring.SlotLent {
			n++
		}
	}
	return n
}

// closed reports whether a span of r is closed: a harvest asks its pool.
func (r *Rec) closed() bool {
	for _, s := range r.Slots {
		if s.Word&spanring.StateMask == spanring.SlotClosed {
			return true
		}
	}
	return false
}

// Token is a kernel span the model began: its recorder and position.
type Token struct {
	Rec *Rec
	Pos uint64
}

// Outcome is what a harvest finds of a closed span.
type Outcome uint8

// The outcomes.
const (
	Done     Outcome = iota // landed
	InFlight                // left closed for a later harvest
	Failed                  // errored, and logged if the recorder's first
)

// Model is the hub's ring words, and the counts the ring's operations
// make, as the protocol says they must be.
type Model struct {
	// Recs are the hub's recorders, oldest first: retired ones whose pools
	// have not closed yet, and the installed one (Cur) last. A recorder
	// the hub finishes stays, sealed, until Prune.
	Recs []*Rec
	Cur  *Rec // the installed recorder, or nil
	// Tokens are the kernel spans begun and not yet ended for good.
	Tokens []Token

	Begun           uint64 // positions handed out, on every recorder
	OpenLanes       int64
	LaneAlreadyOpen uint64
	UnknownLane     uint64
	BadEnd          uint64
	Dropped         [3]uint64 // slot busy, capturing, retired: the Config.Drops reasons
	Errored         uint64
	Landed          uint64
	StickyDisables  uint64
	InstallFailures uint64
	Pools           int    // pools open
	Lends           uint64 // shared boundaries whose next span began at the last one's end event
	Round           int    // harvests made: Config.Outcome's round
	Steps           Steps

	// What the last op did besides the words.
	EntersGo bool // sent to C, it went into Go (a pool to open, an unknown lane to count)
	Refused  bool // it was refused as an error (a level or period out of range)
	Began    bool // a KernelBegin began a span (the last of Tokens)

	every         uint64
	capturing     bool
	stickyHarvest bool  // the harvest's pool calls fail with a sticky error
	fault         Fault // the op's, until a record takes it
	c             Config
}

// Config is what the model takes from the hub: the ring's size and the
// values of gpuspans' encoding it needs.
type Config struct {
	Slots, Lanes int
	LaneKind     uint32 // gpuspans.KindLane
	KernelKind   uint32 // gpuspans.KindKernel
	Every        uint64 // KernelSpanEvery at the start
	ArmedBit     uint32 // the state's armed bit: gpuspans.MirrorArmed
	PoolsBit     uint32 // the mirror's pools bit: gpuspans.MirrorPools
	LevelMask    uint32 // the state's level bits
	Drops        [3]int // gpuspans.DropSlotBusy, DropCapturing and DropRetired: indices of Recorder.Dropped
	// Outcome is what a harvest finds of the closed span in slot in round
	// (nil: every span is done, as on the fake driver).
	Outcome func(slot, round int) Outcome
	// HarvestAtStep: a step harvests (no RunHarvester runs), at Kernel or
	// while a pool is open; else only Harvest does.
	HarvestAtStep bool
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
	m := &Model{Steps: steps, c: c, Pools: 1, every: c.Every}
	r := &Rec{Status: spanring.StatusOpen, LaneTok: make([]uint64, c.Lanes), Slots: make([]Slot, c.Slots)}
	m.Recs, m.Cur = []*Rec{r}, r
	m.mirror()
	return m
}

// Every is the arming period: one step in Every is armed for kernel spans.
func (m *Model) Every() uint64 { return m.every }

func (r *Rec) slot(pos uint64) *Slot { return &r.Slots[pos%uint64(len(r.Slots))] }

func (m *Model) level() uint32 { return m.Steps.State & m.c.LevelMask }

func (m *Model) known(lane int) bool { return lane >= 0 && lane < m.c.Lanes }

// Apply does op.
func (m *Model) Apply(op Op) {
	m.fault, m.EntersGo, m.Refused, m.Began = op.Fault, false, false, false
	defer func() { m.fault = NoFault }()
	switch op.Kind {
	case Step:
		m.step(op.C)
	case NextStep:
		if m.step(op.C) {
			m.nextLane(op.From, op.To, op.C)
		}
	case Begin:
		if m.level() == LevelKernel {
			m.laneBegin(op.To, op.C)
		}
	case End:
		m.laneEnd(op.To)
	case Next:
		m.nextLane(op.From, op.To, op.C)
	case KernelBegin:
		if r := m.Cur; m.Steps.State&m.c.ArmedBit != 0 && r != nil && r.Status == spanring.StatusOpen {
			if pos, ok := m.begin(r, op.Kernel, m.c.KernelKind); ok {
				m.Tokens = append(m.Tokens, Token{r, pos})
				m.Began = true
			}
		}
	case KernelEnd:
		if len(m.Tokens) == 0 {
			break
		}
		i := op.To % len(m.Tokens)
		if t := m.Tokens[i]; !m.end(t.Rec, t.Pos) {
			m.BadEnd++
		}
		if op.From != 0 {
			m.Tokens = append(m.Tokens[:i], m.Tokens[i+1:]...)
		}
	case Harvest:
		m.stickyHarvest = op.Fault != NoFault
		m.harvest()
		m.stickyHarvest = false
	case SetLevel:
		if op.N < 0 || op.N > int(LevelKernel) {
			m.Refused = true
			break
		}
		s, l := &m.Steps, uint32(op.N)
		armed := uint32(0)
		if l == LevelKernel {
			armed = s.State & m.c.ArmedBit
		}
		s.State = s.State&^(m.c.LevelMask|m.c.ArmedBit) | l | armed
	case SetEvery:
		if op.N <= 0 {
			m.Refused = true
			break
		}
		m.every = uint64(op.N)
	case Capture:
		m.capturing = op.To != 0
	case Install:
		r := &Rec{Status: spanring.StatusPending, LaneTok: make([]uint64, m.c.Lanes)}
		m.Recs = append(m.Recs, r)
		m.replace(r)
	case Uninstall:
		m.replace(nil)
	}
	m.mirror()
}

func (m *Model) mirror() {
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
	if m.level() != LevelOff {
		s.Step++
	}
	if m.level() == LevelKernel {
		m.openPending(c)
		s.State &^= m.c.ArmedBit
		if s.Step%m.every == 0 {
			s.State |= m.c.ArmedBit
			s.ArmedSteps++
		}
	}
	if m.c.HarvestAtStep && (m.level() == LevelKernel || m.Pools != 0) {
		m.harvest()
	}
	return true
}

// laneBegin is LaneBegin at Kernel.
func (m *Model) laneBegin(lane int, c bool) {
	if !m.known(lane) {
		m.UnknownLane++ // in Go: C sends it there
		m.EntersGo = m.EntersGo || c
		return
	}
	if r := m.Cur; r != nil && r.Status == spanring.StatusOpen {
		m.recLaneBegin(r, lane)
	}
}

func (m *Model) laneEnd(lane int) {
	if m.level() != LevelKernel && m.Pools == 0 || m.OpenLanes == 0 || m.Cur == nil || !m.known(lane) {
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

// nextLane is NextLane: below Kernel it only ends from; a negative to
// names no lane.
func (m *Model) nextLane(from, to int, c bool) {
	if m.level() != LevelKernel && m.Pools == 0 {
		return
	}
	begin := to >= 0 && m.level() == LevelKernel
	if begin && to >= m.c.Lanes {
		m.UnknownLane++ // in Go: C sends it there
		m.EntersGo = m.EntersGo || c
		begin = false
	}
	if !m.known(from) || m.OpenLanes == 0 {
		if begin {
			m.laneBegin(to, c)
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
	pos, ok := m.begin(r, uint64(lane), m.c.LaneKind)
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
func (m *Model) claim(r *Rec, key uint64, kind uint32) (uint64, bool) {
	pos := r.Next
	r.Next++
	m.Begun++
	sl := r.slot(pos)
	if sl.Word&spanring.StateMask != spanring.SlotFree || sl.Word>>spanring.PosShift > pos {
		m.Dropped[dropBusy]++
		return 0, false
	}
	sl.Word = spanring.Pack(pos, spanring.SlotOpening)
	sl.Kind, sl.Key, sl.Step, sl.From = kind, key, m.Steps.Step, 0
	if r.Status != spanring.StatusOpen {
		m.release(r, pos, dropRetired)
		return 0, false
	}
	return pos, true
}

func (m *Model) begin(r *Rec, key uint64, kind uint32) (uint64, bool) {
	pos, ok := m.claim(r, key, kind)
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

// end records the end of the span at pos; false when it is not open.
func (m *Model) end(r *Rec, pos uint64) bool {
	sl := r.slot(pos)
	if sl.Word != spanring.Pack(pos, spanring.SlotOpen) {
		return false
	}
	sl.Word = spanring.Pack(pos, spanring.SlotClosing)
	m.endClaimed(r, pos)
	return true
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
		return m.begin(r, key, m.c.LaneKind)
	}
	ps.Word = spanring.Pack(prev, spanring.SlotClosing)
	if r.Status != spanring.StatusOpen {
		m.endClaimed(r, prev)
		return m.begin(r, key, m.c.LaneKind)
	}
	pos, ok := m.claim(r, key, m.c.LaneKind)
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
		m.kill(r)
	default:
		r.Logged = true
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

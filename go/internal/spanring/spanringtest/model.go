// Package spanringtest is the reference model of go/internal/spanring's
// protocol, for tests that drive its two writers, go/gpuspans' recorder
// and go/capi's spanpath.c, on one ring and compare every word after each
// operation (go/capi's TestRingDifferential). It models one recorder
// whose pool records without failing and whose events complete at once,
// at level Kernel, driven from one thread: step begins, lane begins, ends
// and shared boundaries, and harvests.
package spanringtest

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/gpuspans/gpuspans/go/internal/spanring"
)

// Op is one operation on the ring.
type Op struct {
	Kind     OpKind
	From, To int  // lanes: Begin and End take To; Next ends From and begins To
	C        bool // through the C path (else Go's)
}

// OpKind is what an Op does.
type OpKind uint8

// The operations.
const (
	Begin   OpKind = iota // LaneBegin(To)
	End                   // LaneEnd(To)
	Next                  // NextLane(From, To)
	Harvest               // a harvest, which lands every closed span (Go)
	Step                  // BeginStep: counts the step and arms one in Every
)

func (o Op) String() string {
	path := "go"
	if o.C {
		path = "c"
	}
	switch o.Kind {
	case Step:
		return path + " step"
	case Begin:
		return fmt.Sprintf("%s begin %d", path, o.To)
	case End:
		return fmt.Sprintf("%s end %d", path, o.To)
	case Next:
		return fmt.Sprintf("%s next %d->%d", path, o.From, o.To)
	}
	return "harvest"
}

// Ops generates random operations over lanes lanes, each lane operation
// sent to C or Go at random.
type Ops struct {
	rng   *rand.Rand
	lanes int
}

// NewOps returns a generator seeded with seed.
func NewOps(seed int64, lanes int) *Ops {
	return &Ops{rng: rand.New(rand.NewSource(seed)), lanes: lanes}
}

// Op returns the next operation: begins 27%, ends 22%, shared boundaries
// 27%, harvests 12%, steps 12%.
func (g *Ops) Op() Op {
	o := Op{From: g.rng.Intn(g.lanes), To: g.rng.Intn(g.lanes), C: g.rng.Intn(2) == 0}
	switch r := g.rng.Intn(100); {
	case r < 27:
		o.Kind = Begin
	case r < 49:
		o.Kind = End
	case r < 76:
		o.Kind = Next
	case r < 88:
		o.Kind, o.C = Harvest, false
	default:
		o.Kind = Step
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

// Model is the ring as the protocol says it must be.
type Model struct {
	Slots           []Slot
	Next            uint64
	LaneTok         []uint64
	OpenLanes       int64
	LaneAlreadyOpen uint64
	DroppedBusy     uint64
	Landed          uint64
	Lends           uint64 // shared boundaries whose next span began at the last one's end event
	Steps           Steps
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
}

// New returns the model of a fresh ring, its hub's step words as steps
// (with a pool open) say.
func New(c Config, steps Steps) *Model {
	return &Model{Slots: make([]Slot, c.Slots), LaneTok: make([]uint64, c.Lanes), Steps: steps, c: c}
}

func (m *Model) slot(pos uint64) *Slot { return &m.Slots[pos%uint64(len(m.Slots))] }

// Apply does op.
func (m *Model) Apply(op Op) {
	switch op.Kind {
	case Step:
		m.step()
	case Begin:
		m.laneBegin(op.To)
	case End:
		m.laneEnd(op.To)
	case Next:
		m.laneNext(op.From, op.To)
	case Harvest:
		m.harvest()
	}
}

func (m *Model) claim(key uint64) (uint64, bool) {
	pos := m.Next
	m.Next++
	sl := m.slot(pos)
	if sl.Word&spanring.StateMask != spanring.SlotFree || sl.Word>>spanring.PosShift > pos {
		m.DroppedBusy++
		return 0, false
	}
	sl.Word = spanring.Pack(pos, spanring.SlotOpen) // the pool's record never fails here
	sl.Kind, sl.Key, sl.Step, sl.From = m.c.Kind, key, m.Steps.Step, 0
	return pos, true
}

// step counts and arms the step at level Kernel.
func (m *Model) step() {
	s := &m.Steps
	s.LeakClock++
	s.Step++
	s.State &^= m.c.ArmedBit
	if s.Step%m.c.Every == 0 {
		s.State |= m.c.ArmedBit
		s.ArmedSteps++
	}
	s.Mirror = s.State | m.c.PoolsBit
}

func (m *Model) end(pos uint64) {
	if sl := m.slot(pos); sl.Word == spanring.Pack(pos, spanring.SlotOpen) {
		sl.Word = spanring.Pack(pos, spanring.SlotClosed)
	}
}

func (m *Model) laneBegin(lane int) {
	if m.LaneTok[lane] != 0 {
		m.LaneAlreadyOpen++
		return
	}
	if pos, ok := m.claim(uint64(lane)); ok {
		m.LaneTok[lane] = pos + 1
		m.OpenLanes++
	}
}

func (m *Model) laneEnd(lane int) {
	t := m.LaneTok[lane]
	if t == 0 {
		return
	}
	m.LaneTok[lane] = 0
	m.OpenLanes--
	m.end(t - 1)
}

func (m *Model) laneNext(from, to int) {
	t := m.LaneTok[from]
	if t == 0 {
		m.laneBegin(to)
		return
	}
	m.LaneTok[from] = 0
	if m.LaneTok[to] != 0 {
		m.LaneAlreadyOpen++
		m.OpenLanes--
		m.end(t - 1)
		return
	}
	// follow: from's place in the open count passes to to.
	prev := t - 1
	ps := m.slot(prev)
	if ps.Word != spanring.Pack(prev, spanring.SlotOpen) {
		m.end(prev)
		pos, ok := m.claim(uint64(to))
		m.openTo(to, pos, ok)
		return
	}
	ps.Word = spanring.Pack(prev, spanring.SlotClosing)
	pos, ok := m.claim(uint64(to))
	if !ok {
		ps.Word = spanring.Pack(prev, spanring.SlotClosed)
		m.openTo(to, 0, false)
		return
	}
	m.slot(pos).From = prev + 1
	ps.Lent = spanring.LentWaiting
	m.Lends++
	ps.Word = spanring.Pack(prev, spanring.SlotClosed)
	m.openTo(to, pos, true)
}

// openTo ends a shared boundary: to holds the span at pos, or, when none
// began, gives up the place in the open count it took from from.
func (m *Model) openTo(to int, pos uint64, ok bool) {
	if !ok {
		m.OpenLanes--
		return
	}
	m.LaneTok[to] = pos + 1
}

func (m *Model) giveBack(from uint64) {
	if from == 0 {
		return
	}
	l := m.slot(from - 1)
	switch l.Lent {
	case spanring.LentWaiting:
		l.Lent = spanring.LentNone
	case spanring.LentLanded:
		l.Lent = spanring.LentNone
		l.Word = spanring.Pack(from-1, spanring.SlotFree)
	}
}

// harvest lands every closed span, visiting the slots in the order of the
// last len(Slots) positions handed out, as the Go harvest does.
func (m *Model) harvest() {
	n := uint64(len(m.Slots))
	for p := m.Next - min(m.Next, n); p < m.Next; p++ {
		sl := m.slot(p)
		if sl.Word&spanring.StateMask != spanring.SlotClosed {
			continue
		}
		pos := sl.Word>>spanring.PosShift - 1
		m.Landed++
		m.giveBack(sl.From)
		sl.From = 0
		if sl.Lent == spanring.LentWaiting {
			sl.Lent = spanring.LentLanded
			sl.Word = spanring.Pack(pos, spanring.SlotLent)
			continue
		}
		sl.Word = spanring.Pack(pos, spanring.SlotFree)
	}
}

// Ring is a recorder's words as a writer left them, and its hub's.
type Ring struct {
	Rec             spanring.Recorder
	OpenLanes       int64
	LaneAlreadyOpen uint64
	Steps           Steps
}

// Diff lists where r differs from the model, "" when nowhere.
func (m *Model) Diff(r Ring) string {
	var b strings.Builder
	f := func(format string, args ...interface{}) { fmt.Fprintf(&b, format+"\n", args...) }
	rec := r.Rec
	if len(rec.Slots) != len(m.Slots) || len(rec.LaneTok) != len(m.LaneTok) {
		f("%d slots and %d lanes, the model has %d and %d", len(rec.Slots), len(rec.LaneTok), len(m.Slots), len(m.LaneTok))
		return b.String()
	}
	if n := rec.Next.Load(); n != m.Next {
		f("next %d, want %d", n, m.Next)
	}
	for i := range m.Slots {
		s, w := &rec.Slots[i], &m.Slots[i]
		got := Slot{Word: s.Word.Load(), Key: s.Key, Step: s.Step, From: s.From, Lent: s.Lent.Load(), Kind: s.Kind}
		if got != *w {
			f("slot %d: %s, want %s", i, show(got), show(*w))
		}
	}
	for l := range m.LaneTok {
		if t := rec.LaneTok[l].Load(); t != m.LaneTok[l] {
			f("lane %d token %d, want %d", l, t, m.LaneTok[l])
		}
	}
	if r.OpenLanes != m.OpenLanes {
		f("open lanes %d, want %d", r.OpenLanes, m.OpenLanes)
	}
	if r.LaneAlreadyOpen != m.LaneAlreadyOpen {
		f("lane already open %d, want %d", r.LaneAlreadyOpen, m.LaneAlreadyOpen)
	}
	if d := rec.Dropped[0].Load(); d != m.DroppedBusy { // gpuspans.DropSlotBusy
		f("dropped slot busy %d, want %d", d, m.DroppedBusy)
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

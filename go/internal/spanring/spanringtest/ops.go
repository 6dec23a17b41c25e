package spanringtest

import (
	"fmt"
	"math/rand"
)

// Op is one operation on the hub.
type Op struct {
	Kind     OpKind
	From, To int    // lanes: Begin and End take To; Next and NextStep end From and begin To; see OpKind for the others
	N        int    // SetLevel's level (0 off, 1 step, 2 kernel, more refused); SetEvery's period (<= 0 refused)
	Fault    Fault  // what the op's first event record does (span operations)
	C        bool   // through the C path (else Go's)
	Kernel   uint64 // KernelBegin's kernel handle
}

// OpKind is what an Op does.
type OpKind uint8

// The operations. Lanes may be unknown (-1, or the number of lanes): a
// negative To names no lane in Next and NextStep. Only the step and lane
// operations have a C path; the others are Go's.
const (
	Begin       OpKind = iota // LaneBegin(To)
	End                       // LaneEnd(To)
	Next                      // NextLane(From, To)
	Harvest                   // a harvest: lands, fails or leaves each closed span, closes idle retired pools; with RecordSticky, each pool it asks fails sticky
	Step                      // BeginStep: counts the step, arms one in every, opens a pending pool
	NextStep                  // NextStep(From, To): BeginStep, then NextLane(From, To)
	KernelBegin               // KernelBegin(Kernel) on the lane stream, on the installed recorder
	KernelEnd                 // KernelEnd of the To-th oldest kernel span held (modulo); From 0 keeps it to end again
	SetLevel                  // SetLevel(N)
	SetEvery                  // SetKernelSpanEvery(N)
	Capture                   // the lane stream starts (To 1) or stops (To 0) being captured into a graph
	Install                   // Install on the device again: the recorder retires, a new one waits for a step at Kernel
	Uninstall                 // the recorder retires and none replaces it
)

// Fault is what the first event record of an op does, should it make one:
// records after it in the op succeed. A pool that opens in the op makes
// the first record (its clock anchor), and fails to open.
type Fault uint8

// The faults. A harvest has only RecordSticky: every pool it asks about a
// closed span fails with a sticky error.
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
	if o.Kind == Harvest && o.Fault != NoFault {
		return "harvest, sticky"
	}
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
	case KernelBegin:
		return fmt.Sprintf("kernel begin %d%s", o.Kernel, fault)
	case KernelEnd:
		return fmt.Sprintf("kernel end #%d, kept %v%s", o.To, o.From == 0, fault)
	case SetLevel:
		return fmt.Sprintf("level %d", o.N)
	case SetEvery:
		return fmt.Sprintf("kernel span every %d", o.N)
	case Capture:
		return fmt.Sprintf("capturing %v", o.To != 0)
	case Install:
		return "install"
	case Uninstall:
		return "uninstall"
	}
	return "harvest"
}

// Ops generates operations over lanes lanes from a source of choices.
type Ops struct {
	choose func(n int) (int, bool)
	lanes  int
}

// NewOps returns a generator of random operations seeded with seed.
func NewOps(seed int64, lanes int) *Ops {
	rng := rand.New(rand.NewSource(seed))
	return NewOpsFrom(func(n int) (int, bool) { return rng.Intn(n), true }, lanes)
}

// NewOpsFrom returns a generator whose every choice is choose(n), in
// [0, n): a fuzzer's bytes, say. Once choose says false, Op does too.
func NewOpsFrom(choose func(n int) (int, bool), lanes int) *Ops {
	return &Ops{choose: choose, lanes: lanes}
}

// Op returns the next operation, false when the choices ran out. Out of
// 1000: begins 220, ends 170, shared boundaries 210, next steps 75,
// kernel begins 40, kernel ends 35, harvests 100, steps 110, levels 15
// (half of them Kernel, some refused), periods 5 (some refused), captures
// 10 (a quarter of them on), installs 8, uninstalls 2. One lane in 20 is
// unknown; one span operation in 25 has a fault, one in 4 of those sticky.
func (g *Ops) Op() (Op, bool) {
	ok := true
	pick := func(n int) int {
		k, more := g.choose(n)
		ok = ok && more
		return k
	}
	lane := func() int {
		if pick(20) == 0 {
			return []int{-1, g.lanes}[pick(2)]
		}
		return pick(g.lanes)
	}
	o := Op{From: lane(), To: lane(), C: pick(2) == 0}
	switch r := pick(1000); {
	case r < 220:
		o.Kind = Begin
	case r < 390:
		o.Kind = End
	case r < 600:
		o.Kind = Next
	case r < 675:
		o.Kind = NextStep
	case r < 715:
		o.Kind, o.C, o.Kernel = KernelBegin, false, uint64(pick(4))+1
	case r < 750:
		o.Kind, o.C, o.To, o.From = KernelEnd, false, pick(3), pick(4) // among the oldest: none stays open long enough to be reclaimed as leaked
	case r < 850:
		o.Kind, o.C = Harvest, false
	case r < 960:
		o.Kind = Step
	case r < 975:
		o.Kind, o.C, o.N = SetLevel, false, []int{0, 1, 2, 2, 2, 2, 3}[pick(7)]
	case r < 980:
		o.Kind, o.C, o.N = SetEvery, false, pick(5)-1
	case r < 990:
		o.Kind, o.C, o.To = Capture, false, min(pick(4), 1)^1
	case r < 998:
		o.Kind, o.C = Install, false
	default:
		o.Kind, o.C = Uninstall, false
	}
	switch o.Kind {
	case Begin, End, Next, NextStep, KernelBegin, KernelEnd:
		if f := pick(100); f < 3 {
			o.Fault = RecordError
		} else if f < 4 {
			o.Fault = RecordSticky
		}
	case Harvest:
		if pick(25) == 0 {
			o.Fault = RecordSticky
		}
	}
	return o, ok
}

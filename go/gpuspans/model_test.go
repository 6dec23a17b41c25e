package gpuspans

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/fake"
)

// ringModel is a reference model of one recorder's ring: what the hub should
// count for any sequence of calls from one goroutine.
type ringModel struct {
	slots     []modelSlot
	next      uint64
	lanes     [2]int64 // open lane span position, or -1
	level     Level
	armed     bool
	capturing bool // kernelStream is being captured
	beginErr  bool
	endErr    bool
	round     int // harvests so far, to vary outcomes

	landed, errored, badEnd, laneAlreadyOpen uint64
	dropped                                  [NumDropReasons]uint64
}

type modelSlot struct {
	pos   int64 // -1: never used
	state uint64
}

// outcome is the harvest outcome of slot in round: the fake plays it, the
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

// begin mirrors recorder.begin; it returns the position or -1.
func (m *ringModel) begin(capturing bool) int64 {
	pos := m.next
	m.next++
	s := &m.slots[pos%uint64(len(m.slots))]
	switch {
	case s.state != slotFree:
		m.dropped[DropSlotBusy]++
	case capturing:
		m.dropped[DropCapturing]++
	case m.beginErr:
		m.errored++
	default:
		*s = modelSlot{pos: int64(pos), state: slotOpen}
		return int64(pos)
	}
	return -1
}

// end mirrors recorder.end. The backend refuses a record on a capturing
// stream before it could fail otherwise.
func (m *ringModel) end(pos int64, capturing bool) bool {
	s := &m.slots[uint64(pos)%uint64(len(m.slots))]
	if s.pos != pos || s.state != slotOpen {
		return false
	}
	if capturing {
		s.state = slotFree
		m.dropped[DropCapturing]++
	} else if m.endErr {
		s.state = slotFree
		m.errored++
	} else {
		s.state = slotClosed
	}
	return true
}

// harvest mirrors recorder.harvest; it returns the number of items.
func (m *ringModel) harvest() int {
	items := 0
	for i := range m.slots {
		s := &m.slots[i]
		if s.state != slotClosed {
			continue
		}
		items++
		switch outcome(i, m.round) {
		case backend.Done:
			m.landed++
			s.state = slotFree
		case backend.Failed:
			m.errored++
			s.state = slotFree
		}
	}
	m.round++
	return items
}

func (m *ringModel) inFlight() uint64 {
	var n uint64
	for _, s := range m.slots {
		if s.state != slotFree {
			n++
		}
	}
	return n
}

func TestRandomSequencesMatchModel(t *testing.T) {
	const slots = 8
	for seed := int64(1); seed <= 300; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			runModel(t, seed, slots, 400)
		})
	}
}

func runModel(t *testing.T, seed int64, slots, ops int) {
	rng := rand.New(rand.NewSource(seed))
	m := &ringModel{slots: make([]modelSlot, slots), lanes: [2]int64{-1, -1}, level: LevelKernel, armed: true}
	for i := range m.slots {
		m.slots[i].pos = -1
	}
	h, f := kernelHub(t, Options{Slots: slots}, fake.Options{Slots: slots})
	f.SetOutcome(func(slot int) (backend.SpanState, int64) { return outcome(slot, m.round), 1000 })
	f.SetRecordError(func(op fake.Op, slot int, s backend.Stream) error {
		if op == fake.OpRecordBegin && m.beginErr || op == fake.OpRecordEnd && m.endErr {
			return fmt.Errorf("scripted %v error", op)
		}
		return nil
	})
	var tokens []KernelSpan
	var tokenPos []int64
	var trace []string
	harvest := func(call func()) {
		before := f.Calls().Items
		call() // the fake plays round m.round
		want := m.harvest()
		if got := f.Calls().Items - before; got != int64(want) {
			t.Fatalf("harvest submitted %d items; model has %d closed\n%v", got, want, trace)
		}
	}
	for op := 0; op < ops; op++ {
		var name string
		switch k := rng.Intn(100); {
		case k < 30:
			name = "KernelBegin"
			sp := h.KernelBegin(1, kernelStream)
			pos := int64(-1)
			if m.armed {
				pos = m.begin(m.capturing)
			}
			if (sp != KernelSpan{}) != (pos >= 0) || pos >= 0 && sp.gen != uint64(pos)+1 {
				t.Fatalf("KernelBegin gave %+v; model position %d\n%v", sp, pos, trace)
			}
			if pos >= 0 {
				tokens, tokenPos = append(tokens, sp), append(tokenPos, pos)
			}
		case k < 55 && len(tokens) > 0:
			i := rng.Intn(len(tokens))
			name = fmt.Sprint("KernelEnd pos ", tokenPos[i])
			h.KernelEnd(tokens[i])
			if !m.end(tokenPos[i], m.capturing) {
				m.badEnd++
			}
		case k < 65:
			lane := rng.Intn(2)
			name = fmt.Sprint("LaneBegin ", lane)
			h.LaneBegin(lane)
			switch {
			case m.level != LevelKernel:
			case m.lanes[lane] >= 0:
				m.laneAlreadyOpen++
			default:
				m.lanes[lane] = m.begin(false)
			}
		case k < 75:
			lane := rng.Intn(2)
			name = fmt.Sprint("LaneEnd ", lane)
			h.LaneEnd(lane)
			if m.lanes[lane] >= 0 {
				m.end(m.lanes[lane], false)
				m.lanes[lane] = -1
			}
		case k < 82:
			name = "Harvest"
			harvest(h.Harvest)
		case k < 88:
			name = "BeginStep"
			if m.level == LevelKernel {
				m.armed = true
			}
			harvest(h.BeginStep)
		case k < 91:
			m.capturing = !m.capturing
			name = fmt.Sprint("capturing ", m.capturing)
			f.SetCapturing(kernelStream, m.capturing)
		case k < 94:
			m.beginErr = rng.Intn(3) == 0
			m.endErr = rng.Intn(3) == 0
			name = fmt.Sprint("errors ", m.beginErr, m.endErr)
		case k < 97:
			m.level = LevelStep + Level(rng.Intn(2))
			if m.level != LevelKernel {
				m.armed = false
			}
			name = fmt.Sprint("SetLevel ", m.level)
			if err := h.SetLevel(m.level); err != nil {
				t.Fatal(err)
			}
		default:
			name = "KernelEnd zero"
			h.KernelEnd(KernelSpan{})
		}
		trace = append(trace, name)
		s := h.Snapshot()
		checkBalance(t, &s)
		c := s.Counters
		if c.Begun != m.next || c.Landed != m.landed || c.Errored != m.errored || c.InFlight != m.inFlight() ||
			c.Dropped != m.dropped || c.BadEnd != m.badEnd || c.LaneAlreadyOpen != m.laneAlreadyOpen {
			t.Fatalf("after %d ops the hub has %+v\nthe model has begun %d landed %d errored %d in flight %d dropped %v bad end %d lane open %d\n%v",
				op+1, c, m.next, m.landed, m.errored, m.inFlight(), m.dropped, m.badEnd, m.laneAlreadyOpen, trace)
		}
	}
}

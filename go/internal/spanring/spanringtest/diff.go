package spanringtest

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/gpuspans/gpuspans/go/internal/spanring"
)

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

// Prune forgets the finished recorders, once Diff has seen them sealed; it
// returns which of Recs it kept, for the caller to forget the same.
func (m *Model) Prune() []bool {
	keep := make([]bool, len(m.Recs))
	kept := m.Recs[:0]
	for i, r := range m.Recs {
		if keep[i] = !r.Finished(); keep[i] {
			kept = append(kept, r)
		}
	}
	m.Recs = kept
	return keep
}

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

// Views are a hub's recorders as the model lists them (Model.Recs), for
// Ring: each one seen published, refreshed while published (its ring
// appears when its pool opens), until Prune.
type Views struct{ recs []spanring.Recorder }

// See takes the recorders the hub publishes now.
func (v *Views) See(published []spanring.Recorder) {
	for _, cur := range published {
		i := 0
		for i < len(v.recs) && v.recs[i].Status != cur.Status {
			i++
		}
		if i == len(v.recs) {
			v.recs = append(v.recs, cur)
		}
		v.recs[i] = cur
	}
}

// Recs are the recorders seen, oldest first.
func (v *Views) Recs() []spanring.Recorder { return v.recs }

// Prune makes m forget its finished recorders, once Diff has seen them
// sealed, and v forget the same.
func (v *Views) Prune(m *Model) {
	kept, views := m.Recs[:0], v.recs[:0]
	for i, r := range m.Recs {
		if !r.Finished() {
			kept = append(kept, r)
			if i < len(v.recs) {
				views = append(views, v.recs[i])
			}
		}
	}
	m.Recs, v.recs = kept, views
}

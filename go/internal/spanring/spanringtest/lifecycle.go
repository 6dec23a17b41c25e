package spanringtest

import "github.com/gpuspans/gpuspans/go/internal/spanring"

// The recorders' lives: pools that open at a step, recorders that die,
// retire and finish, and the harvests that land their spans.

// openPending opens the pools installed since the last step at Kernel: Go's
// work, so a step sent to C goes there.
func (m *Model) openPending(c bool) {
	for _, r := range m.Recs {
		if r.Status != spanring.StatusPending {
			continue
		}
		m.EntersGo = m.EntersGo || c
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
}

// kill turns r dead after a sticky error, counted once.
func (m *Model) kill(r *Rec) {
	if r.Status&spanring.StatusStateMask != spanring.StatusDead {
		r.Status = r.Status&spanring.StatusRetired | spanring.StatusDead
		m.StickyDisables++
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

// harvest finds each closed span of every recorder as Config.Outcome says
// (errored on a dead recorder, which makes no pool call), visiting each
// ring's slots in the order of the last len(Slots) positions handed out,
// as the Go harvest does; then it closes the idle retired pools.
func (m *Model) harvest() {
	for _, r := range m.Recs {
		n := uint64(len(r.Slots))
		if n == 0 || r.Finished() {
			continue
		}
		dead := r.Status&spanring.StatusStateMask == spanring.StatusDead
		if m.stickyHarvest && !dead && r.closed() {
			m.kill(r) // its pool is asked, and fails: the spans are lost with it
			dead = true
		}
		for p := r.Next - min(r.Next, n); p < r.Next; p++ {
			sl := r.slot(p)
			if sl.Word&spanring.StateMask != spanring.SlotClosed {
				continue
			}
			pos := sl.Word>>spanring.PosShift - 1
			out := Done
			if m.c.Outcome != nil {
				out = m.c.Outcome(int(pos%n), m.Round)
			}
			switch {
			case dead || out == Failed:
				r.Logged = r.Logged || !dead
				m.release(r, pos, -1)
			case out == Done:
				m.Landed++
				m.free(r, pos)
			}
		}
	}
	m.Round++
	m.sweep()
}

// sweep finishes the retired recorders with no slot in use: their pools
// close and their Next is sealed.
func (m *Model) sweep() {
	for _, r := range m.Recs {
		if r.Status&spanring.StatusRetired == 0 || r.Finished() || r.InFlight() != 0 {
			continue
		}
		if r.Slots != nil {
			m.Pools--
		}
		r.Next |= spanring.NextSealed
	}
}

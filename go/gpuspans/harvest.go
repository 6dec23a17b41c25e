package gpuspans

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// The harvest: landing what completed, on the stepping thread or a
// background harvester, and closing retired pools.

// Harvest lands every span whose events have completed, in one backend
// Harvest call per device, and closes idle retired pools. It never waits for
// the GPU and never blocks: when another harvest or a reader holds the
// harvest lock it returns at once (counted in HarvestsSkipped), and the spans
// stay in flight for the next one. BeginStep calls it; call it directly only
// to land spans between steps.
func (h *Hub) Harvest() {
	if !h.mu.TryLock() {
		h.harvestsSkipped.Add(1)
		return
	}
	defer h.mu.Unlock()
	h.harvestLocked()
}

// RunHarvester harvests every interval on the calling goroutine until ctx
// is done, so that BeginStep only counts and arms the step (docs/design.md,
// harvest, says why). Run it on a goroutine of its own
// (go hub.RunHarvester(ctx, time.Millisecond)). While it runs it
// also opens the pools of devices installed at level Kernel (at its next
// tick rather than at the next step), and spans land up to one interval
// later than at step begin. Like every harvest it never waits for the GPU,
// and a tick that finds the harvest lock held is skipped and counted.
// Harvests at step begin resume when it returns. It returns an error at
// once for an interval <= 0 or while another RunHarvester runs, and nil
// when ctx is done.
func (h *Hub) RunHarvester(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("gpuspans: RunHarvester: interval must be positive, got %v", interval)
	}
	if !h.background.CompareAndSwap(false, true) {
		return errors.New("gpuspans: RunHarvester: a harvester is already running on this hub")
	}
	h.syncCStep()
	defer h.syncCStep()
	defer h.background.Store(false)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			h.harvestInBackground()
		}
	}
}

// harvestInBackground is one RunHarvester tick: what BeginStep would do at
// its level, pools opened included.
func (h *Hub) harvestInBackground() {
	if !h.mu.TryLock() {
		h.harvestsSkipped.Add(1)
		return
	}
	defer h.mu.Unlock()
	if Level(atomic.LoadUint32(&h.state)&levelMask) == LevelKernel {
		h.openPending()
	}
	h.harvestLocked()
}

// openPending opens the pool of every recorder installed since the last
// step at Kernel. Caller holds h.mu.
func (h *Hub) openPending() {
	if !h.pending.Load() {
		return
	}
	for _, r := range h.recs {
		if r.status.Load() != recPending {
			continue
		}
		if err := r.openPool(h.slots); err != nil {
			r.err.Store(&errBox{err})
			r.status.Store(recFailed)
			h.installFailures++
			h.logf("gpuspans: GPU spans off on device %d: %v", r.device, err)
			continue
		}
		atomic.AddInt32(&h.pools, 1)
		h.syncMirror()
		h.publish()
	}
	h.syncPending()
}

// harvestLocked harvests every recorder and closes the idle retired ones.
// Caller holds h.mu.
func (h *Hub) harvestLocked() {
	start := h.now()
	h.roll(start)
	h.want = 0
	if h.wantStarts(start) {
		h.want = 1
	}
	if h.kw.opener != nil {
		h.tl.copySteps(h.kw)
	}
	for _, r := range h.recs {
		r.harvest()
	}
	h.harvestTracer()
	h.attribute()
	h.analyseWindows()
	h.sweep()
	h.harvests++
	h.harvestTime += h.now().Sub(start)
}

// sweep closes and forgets the retired recorders with no slot open or in
// flight. A pool whose Close reports ErrBusy is kept for a later sweep, up
// to MaxBusyRetired of them: past that the oldest are given up on. Any other
// Close error is logged and the pool forgotten, since retrying cannot help.
// Caller holds h.mu.
func (h *Hub) sweep() {
	kept := h.recs[:0]
	busy := 0
	for _, r := range h.recs {
		if r.status.Load()&recRetired == 0 || r.inFlight() != 0 {
			kept = append(kept, r)
			continue
		}
		if r.pool != nil {
			err := closePool(r.pool)
			if errors.Is(err, backend.ErrBusy) {
				r.closeBusy = true
				busy++
				kept = append(kept, r)
				continue
			}
			if err != nil {
				h.logf("gpuspans: closing the retired pool of device %d: %v", r.device, err)
			}
			atomic.AddInt32(&h.pools, -1)
			h.syncMirror()
		}
		h.finish(r)
	}
	if busy > MaxBusyRetired {
		// Oldest first: kept is in h.recs' order.
		k := kept[:0]
		for _, r := range kept {
			if busy > MaxBusyRetired && r.closeBusy {
				busy--
				h.abandonedPools++
				h.logf("gpuspans: giving up on closing a retired pool of device %d: still busy, and %d more are waiting; its events are left unreleased", r.device, MaxBusyRetired)
				atomic.AddInt32(&h.pools, -1)
				h.syncMirror()
				h.finish(r)
				continue
			}
			k = append(k, r)
		}
		kept = k
	}
	for i := len(kept); i < len(h.recs); i++ {
		h.recs[i] = nil
	}
	h.recs = kept
}

// harvest submits the closed slots between the oldest position that may
// still need one and the newest hand-out to the pool in one call, and lands,
// leaves or fails each. Caller holds the harvest lock.
func (r *recorder) harvest() {
	n := uint64(len(r.slots))
	if n == 0 {
		return
	}
	h := r.hub
	head := r.next.Load()
	start := r.tail
	if head-start > n {
		start = head - n // every slot is in the window once
	}
	tail := head
	items := r.items[:0]
	step := h.leakClock.Load()
	i := start % n
	for p := start; p < head; p, i = p+1, i+1 {
		if i == n {
			i = 0
		}
		w := r.slots[i].Word.Load()
		held := w >> slotPosShift // position+1 of the span that holds or last held the slot
		if w&slotStateMask == slotOpen && r.leaked(i, held-1, step) {
			continue
		}
		if w&slotStateMask == slotFree {
			// held <= p: position p has not claimed its slot. Either its claim
			// was dropped or it is still being made; keep looking from p.
			if held <= p && p < tail {
				tail = p
			}
			continue
		}
		if held-1 <= p && held-1 < tail {
			tail = held - 1
		}
		if w&slotStateMask == slotClosed {
			want := h.want
			// A lane span of a kernel window's step is placed on the host
			// clock, always: GPU time joins it with the window's kernels.
			if sl := &r.slots[i]; want == 0 && SpanKind(sl.Kind) == KindLane && h.tl.windowOfStep(sl.Step) != 0 {
				want = 1
			}
			items = append(items, backend.HarvestItem{Slot: uint32(i), WantStart: want})
		}
	}
	r.tail = tail
	if len(items) == 0 {
		return
	}
	// A dead recorder makes no backend call: its spans are lost with the
	// context and counted as errored. A harvest that failed as a whole
	// without a sticky error answered nothing about its items: they stay
	// closed for the next harvest.
	dead := r.status.Load()&recStateMask == recDead
	if !dead {
		if err := r.harvestPool(items); err != nil {
			if !fatal(err) {
				h.harvestFailures++
				r.logFirst(err)
				return
			}
			r.kill(err)
			dead = true
		}
	}
	for k := range items {
		it := &items[k]
		sl := &r.slots[it.Slot]
		pos := sl.Word.Load()>>slotPosShift - 1
		switch {
		case dead || it.State == backend.Failed:
			if !dead && !r.logged.Load() {
				r.logFirst(fmt.Errorf("harvest: slot %d failed with driver code %d", it.Slot, it.Code))
			}
			r.release(sl, pos, errored)
		case it.State == backend.Done:
			if SpanKind(sl.Kind) == KindKernel && r.offset > 0 && !h.raw {
				it.DurationNs = max(it.DurationNs-r.offset, 0)
			}
			h.land(r.device, sl, it)
			r.free(sl, pos)
		}
		// InFlight: left closed for the next harvest.
	}
}

// leaked reports whether the open span at pos in slot i was reclaimed as
// leaked: begun, never ended, and seen open by harvests for LeakSteps steps.
// An engine that loses a KernelSpan (an exception path) or never ends a lane
// would otherwise hold the slot for good, and once every slot is held, drop
// every later span as slot_busy.
//
// Only the Go side of the slot is freed, and only from open, by the same
// compare-and-swap that an end makes: a late end then fails and is counted
// as a bad end, and no call on the slot can be running (the owner makes none
// while the span is open). The pool needs nothing: the begin event may
// still be in flight, but the next span on the slot records it afresh
// (re-recording an event is legal, see backend.Pool), a harvest is never
// asked about the slot before its next end, and Close still waits for the
// abandoned record to complete. Caller holds the harvest lock.
func (r *recorder) leaked(i uint64, pos, step uint64) bool {
	s := &r.seen[i]
	if s.gen != pos+1 {
		s.gen, s.step = pos+1, step
		return false
	}
	if step-s.step < r.hub.leakSteps {
		return false
	}
	// A lane span: free its lane too, or the lane would count every later
	// LaneBegin as already open.
	for lane := range r.laneTok {
		if r.laneTok[lane].CompareAndSwap(pos+1, 0) {
			r.hub.openLanes.Add(-1)
			break
		}
	}
	sl := &r.slots[i]
	from := sl.From // read while the span is open: nobody writes it then
	if !sl.Word.CompareAndSwap(pack(pos, slotOpen), pack(pos, slotFree)) {
		return false // ended meanwhile
	}
	r.giveBack(from)
	r.drop(DropLeaked)
	if !r.leakLogged {
		r.leakLogged = true
		r.hub.logf("gpuspans: reclaimed a span on device %d left open for %d steps (later ones are counted, not logged): a KernelSpan or lane not ended", r.device, r.hub.leakSteps)
	}
	return true
}

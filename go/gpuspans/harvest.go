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
	}
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
	for _, r := range h.recs {
		r.harvest()
	}
	h.harvestTracer()
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

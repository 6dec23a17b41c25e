package gpuspans

import "github.com/gpuspans/gpuspans/go/internal/spanring"

// A span path outside Go (go/capi's C one, which records lane spans
// without crossing into Go) shares the recorders' ring words; the hub tells
// it where they are through go/internal/spanring, never through its API.

func init() {
	spanring.Attach = func(hub any, p spanring.Publisher) {
		h := hub.(*Hub)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.spanPath = p
		h.publish()
	}
}

// publish tells the span path, if one is attached, the hub's words and the
// installed recorders. Every change of the set or of a recorder's pool
// calls it. Caller holds h.mu.
func (h *Hub) publish() {
	if h.spanPath == nil {
		return
	}
	cur := h.set.Load().current
	recs := make([]spanring.Recorder, len(cur))
	for i, r := range cur {
		d := &h.devc[r.device]
		recs[i] = spanring.Recorder{
			Stream:  uint64(r.stream),
			Status:  &r.status,
			Next:    &r.next,
			LaneTok: r.laneTok,
			Slots:   r.slots,
			Dropped: d.dropped[:],
			Errored: &d.errored,
			Fail: func(pos uint64, err error) {
				r.spanFailed(&r.slots[pos%uint64(len(r.slots))], pos, err)
			},
		}
		if r.slots != nil { // openPool set both before the status turned open
			recs[i].Pool = r.pool
		}
	}
	h.spanPath.Publish(spanring.Hub{
		Lanes:           len(h.lanes),
		Step:            &h.step,
		OpenLanes:       &h.openLanes,
		LaneAlreadyOpen: &h.laneAlreadyOpen,
		CStep:           &h.cStep,
		State:           &h.state,
		Pools:           &h.pools,
		LeakClock:       &h.leakClock,
		ArmedSteps:      &h.armedSteps,
		Every:           &h.every,
	}, recs)
}

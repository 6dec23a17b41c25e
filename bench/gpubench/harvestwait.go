package main

import (
	"fmt"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// --- harvestwait ------------------------------------------------------------
//
// BeginStep while a 50 ms kernel runs with spans queued behind it: its
// harvest must not wait for them to land.

type harvestWaitResult struct {
	Kernel        string    `json:"kernel"`
	SpansQueued   int       `json:"spans_queued"` // behind the long kernel, plus its own
	Calls         int       `json:"begin_step_calls"`
	P50Ns         float64   `json:"begin_step_p50_ns"`
	P99Ns         float64   `json:"begin_step_p99_ns"`
	MaxNs         float64   `json:"begin_step_max_ns"`
	Top3Ns        []float64 `json:"begin_step_top3_ns"` // a wait would be ~ms every call, a host hiccup once
	InFlightDur   uint64    `json:"in_flight_during"`
	LandedDur     uint64    `json:"landed_during"`
	LandedAfter   uint64    `json:"landed_after_sync"`
	LoopS         float64   `json:"loop_s"`
	KernelStillOn bool      `json:"kernel_still_running_at_loop_end"`
}

func runHarvestWait(e *env) (interface{}, string, error) {
	g, r, h, release, err := e.openHub(gpuspans.DefaultSlots)
	if err != nil {
		return nil, "", err
	}
	defer release()
	k := r.streams[0]
	h.BeginStep() // opens the pool
	settle(h, r)
	const long = 50 * time.Millisecond
	const queued = 256
	res := &harvestWaitResult{Kernel: "one 50 ms spin kernel in a kernel span, 256 empty kernels in spans queued behind it", SpansQueued: queued + 1}
	before := h.Snapshot().Counters
	h.BeginStep()
	sp := h.KernelBegin(kSpin, k)
	if err := g.Spin(k, long, nil); err != nil {
		return nil, "", err
	}
	h.KernelEnd(sp)
	for i := 0; i < queued; i++ {
		sp := h.KernelBegin(kEmpty, k)
		if err := g.Empty(k); err != nil {
			return nil, "", err
		}
		h.KernelEnd(sp)
	}
	t0 := time.Now()
	var took []float64
	for time.Since(t0) < long*7/10 {
		t := time.Now()
		h.BeginStep()
		took = append(took, ns(time.Since(t)))
	}
	res.LoopS = time.Since(t0).Seconds()
	mid := h.Snapshot().Counters
	res.InFlightDur = mid.InFlight
	res.LandedDur = mid.Landed - before.Landed
	res.KernelStillOn = mid.Landed == before.Landed
	s := settle(h, r)
	res.LandedAfter = s.Counters.Landed - before.Landed
	res.Calls = len(took)
	res.P50Ns, res.P99Ns, res.MaxNs = quantile(took, 0.5), quantile(took, 0.99), maxOf(took)
	for i, s := 0, sorted(took); i < 3 && i < len(s); i++ {
		res.Top3Ns = append(res.Top3Ns, s[len(s)-1-i])
	}
	if res.LandedAfter != queued+1 {
		return res, "", fmt.Errorf("%d of %d spans landed after the sync: %+v", res.LandedAfter, queued+1, s.Counters)
	}
	return res, "", nil
}

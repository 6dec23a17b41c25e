package main

import (
	"fmt"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// --- ceiling ----------------------------------------------------------------
//
// The rate of landed spans with the default pool, spans per step doubling
// until slot_busy drops start.

type ceilingLevel struct {
	SpansPerStep    int     `json:"spans_per_step"` // kernel spans, over all goroutines
	Steps           int     `json:"steps"`
	ElapsedS        float64 `json:"elapsed_s"`
	Begun           uint64  `json:"begun"`
	Landed          uint64  `json:"landed"` // harvested by the timed steps' BeginStep
	DroppedSlotBusy uint64  `json:"dropped_slot_busy"`
	Errored         uint64  `json:"errored"`
	LandedPerS      float64 `json:"landed_per_s"`
	BegunPerS       float64 `json:"begun_per_s"`
	MaxInFlight     uint64  `json:"in_flight_at_end"`
}

type ceilingRun struct {
	Goroutines     int            `json:"goroutines"`
	Levels         []ceilingLevel `json:"levels"`
	CeilingPerS    float64        `json:"ceiling_landed_per_s"`      // best rate of a level without drops
	CeilingAtSpans int            `json:"ceiling_spans_per_step"`    // that level; 0: drops from the first level
	FirstDropSpans int            `json:"first_drop_spans_per_step"` // 0: no drops up to the last level
}

type ceilingResult struct {
	Pool         string       `json:"pool"`
	Method       string       `json:"method"`
	Runs         []ceilingRun `json:"runs"`
	DropCounters string       `json:"drop_counters"`
	Truncated    bool         `json:"truncated,omitempty"`
}

func runCeiling(e *env) (interface{}, string, error) {
	g, err := e.newGPU(0)
	if err != nil {
		return nil, "", err
	}
	defer g.Close()
	res := &ceilingResult{
		Pool: fmt.Sprintf("default: %d slots (gpuspans.DefaultSlots)", gpuspans.DefaultSlots),
		Method: "per step: BeginStep (harvest), then each goroutine launches its share of empty kernels, each in a kernel span, " +
			"on its own stream; no sync inside a level; spans per step double from 64 until Dropped[DropSlotBusy] > 0",
		DropCounters: "Counters.Dropped[gpuspans.DropSlotBusy] (Prometheus: gpuspans_spans_dropped_total{reason=\"slot_busy\"}); " +
			"also Counters.InFlight, Counters.Begun == Landed + DroppedTotal() + InFlight + Errored",
	}
	for _, goroutines := range []int{1, 4} {
		run, err := ceilingRunFor(e, g, goroutines)
		if run != nil {
			res.Runs = append(res.Runs, *run)
		}
		if err != nil {
			return res, "", fmt.Errorf("%d goroutines: %w", goroutines, err)
		}
		if e.late() {
			res.Truncated = true
			break
		}
	}
	return res, "", nil
}

func ceilingRunFor(e *env, g gpu, goroutines int) (*ceilingRun, error) {
	r, err := newRig(g, goroutines)
	if err != nil {
		return nil, err
	}
	defer r.close()
	h, err := newHub(0, r.lane, gpuspans.DefaultSlots)
	if err != nil {
		return nil, err
	}
	defer closeHub(h, r)
	run := &ceilingRun{Goroutines: goroutines}
	levelTime := time.Duration(e.scale(250, 20)) * time.Millisecond
	// Warm up: open the pool.
	h.BeginStep()
	settle(h, r)
	for n := 64; n <= 16384; n *= 2 {
		if e.late() {
			break
		}
		per := n / goroutines
		r.body = func(w int) {
			s := r.streams[w]
			for i := 0; i < per; i++ {
				sp := h.KernelBegin(kEmpty, s)
				r.fail("launch", g.Empty(s))
				h.KernelEnd(sp)
			}
		}
		before := h.Snapshot().Counters
		lv := ceilingLevel{SpansPerStep: n}
		t0 := time.Now()
		for lv.Steps < 3 || (time.Since(t0) < levelTime && lv.Steps < 2000) {
			h.BeginStep()
			r.fanOut()
			lv.Steps++
		}
		h.BeginStep() // the last step's harvest, inside the window
		el := time.Since(t0)
		after := h.Snapshot().Counters
		if err := r.firstErr(); err != nil {
			return run, err
		}
		lv.ElapsedS = el.Seconds()
		lv.Begun = after.Begun - before.Begun
		lv.Landed = after.Landed - before.Landed
		lv.DroppedSlotBusy = after.Dropped[gpuspans.DropSlotBusy] - before.Dropped[gpuspans.DropSlotBusy]
		lv.Errored = after.Errored - before.Errored
		lv.MaxInFlight = after.InFlight
		lv.LandedPerS = div(float64(lv.Landed), el.Seconds())
		lv.BegunPerS = div(float64(lv.Begun), el.Seconds())
		run.Levels = append(run.Levels, lv)
		settle(h, r)
		if lv.DroppedSlotBusy > 0 {
			run.FirstDropSpans = n
			break
		}
		if lv.LandedPerS > run.CeilingPerS {
			run.CeilingPerS, run.CeilingAtSpans = lv.LandedPerS, n
		}
	}
	return run, nil
}

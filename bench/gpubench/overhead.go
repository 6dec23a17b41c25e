package main

import (
	"fmt"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// --- overhead ---------------------------------------------------------------
//
// Host ns per span: launches alone, cuda.Pool directly and the full hub
// path, timed alike and interleaved, on one and on four launching
// goroutines.

type overheadRow struct {
	KernelSpansPerStep int     `json:"kernel_spans_per_step"`
	LaneSpansPerStep   int     `json:"lane_spans_per_step"`
	Goroutines         int     `json:"goroutines"`
	Steps              int     `json:"steps"`
	Repeats            int     `json:"repeats"`
	None               variant `json:"none"` // launches only, no telemetry call
	Pool               variant `json:"pool"` // cuda.Pool directly: records around launches, one Harvest per step
	Hub                variant `json:"hub"`  // BeginStep, LaneBegin/End, KernelBegin/End

	// Per span: the difference of host time over all goroutines (best
	// repeats) divided by the step's spans, so that goroutines running in
	// parallel do not hide cost; with one goroutine it is wall time.
	LaunchNsPerKernel  float64 `json:"launch_ns_per_kernel"`   // none / kernels
	HubNsPerSpan       float64 `json:"hub_ns_per_span"`        // (hub - none) / spans
	HubNsPerSpanMedian float64 `json:"hub_ns_per_span_median"` // the same from median repeats
	PoolNsPerSpan      float64 `json:"pool_ns_per_span"`       // (pool - none) / spans
	// The same from wall time: what the step's latency grew by, per span.
	HubWallNsPerSpan float64 `json:"hub_wall_ns_per_span"`

	BeginStepNsMean float64 `json:"begin_step_ns_mean"`  // BeginStep (arm + harvest) per step, timed hub runs
	BeginStepNsMax  float64 `json:"begin_step_ns_max"`   //
	HarvestNsStep   float64 `json:"harvest_ns_per_step"` // Counters.HarvestTime / Harvests, timed hub runs
	SpansPerHarvest float64 `json:"spans_per_harvest"`   // landed / harvests
	Begun           uint64  `json:"begun"`               // hub counters over the timed runs
	Landed          uint64  `json:"landed"`              //
	DroppedSlotBusy uint64  `json:"dropped_slot_busy"`   //
	DroppedCaptur   uint64  `json:"dropped_capturing"`   //
	Errored         uint64  `json:"errored"`             //
	PoolDone        uint64  `json:"pool_done"`           // pool variant: items harvested done
	PoolNotDone     uint64  `json:"pool_not_done"`       // pool variant: items harvested in flight or failed
}

type overheadResult struct {
	Kernel    string        `json:"kernel"`
	Method    string        `json:"method"`
	Rows      []overheadRow `json:"rows"`
	Truncated bool          `json:"truncated,omitempty"`
}

func runOverhead(e *env) (interface{}, string, error) {
	g, err := e.newGPU(0)
	if err != nil {
		return nil, "", err
	}
	defer g.Close()
	res := &overheadResult{
		Kernel: "empty kernel, one thread (gs_kit_empty), each goroutine on its own non-blocking stream",
		Method: "each step timed on the host from its first call to its last (wall), and as host time summed over the " +
			"goroutines (the step's own thread outside the fan-out plus each goroutine's share); every stream synced after " +
			"each step, untimed; variants interleaved, best and median of the repeats; a span is a kernel span or the " +
			"step's lane span",
	}
	budget := e.scale(24576, 256)
	repeats := e.scale(3, 2)
	for _, goroutines := range []int{1, 4} {
		for _, n := range []int{8, 64, 512} {
			if e.late() {
				res.Truncated = true
				return res, "", nil
			}
			steps := budget / n
			if steps < 16 {
				steps = 16
			}
			if steps > 3000 {
				steps = 3000
			}
			row, err := overheadConfig(g, n, goroutines, steps, repeats)
			if err != nil {
				return res, "", fmt.Errorf("%d spans per step, %d goroutines: %w", n, goroutines, err)
			}
			res.Rows = append(res.Rows, row)
		}
	}
	return res, "", nil
}

// overheadRun is one row of the overhead section on a rig of goroutines:
// a hub and a bare pool on device 0, and the step of each variant, timed
// alike.
type overheadRun struct {
	g     gpu
	r     *rig
	h     *gpuspans.Hub
	pool  *cuda.Pool
	items []backend.HarvestItem
	n     int // kernel spans per step
	per   int // of those, per goroutine

	// The goroutines' bodies, bound once: a method value made in a timed
	// step would cost an allocation there.
	noneBody, poolBody, hubBody func(w int)

	poolDone, poolNotDone uint64        // pool variant: items harvested done, and not
	beginSum, beginMax    time.Duration // hub variant: BeginStep
}

// overheadCase is one variant of the overhead section: what its step does.
type overheadCase struct {
	name string
	step func()
	reps []stepTime
}

func overheadConfig(g gpu, n, goroutines, steps, repeats int) (overheadRow, error) {
	row := overheadRow{KernelSpansPerStep: n, LaneSpansPerStep: 1, Goroutines: goroutines, Steps: steps, Repeats: repeats}
	o, err := newOverheadRun(g, n, goroutines)
	if err != nil {
		return row, err
	}
	defer o.close()
	cases := []*overheadCase{{name: "none", step: o.noneStep}, {name: "pool", step: o.poolStep}, {name: "hub", step: o.hubStep}}

	// Warm up every path (the hub's pool opens at its first step), then
	// time the variants interleaved.
	warm := steps / 10
	if warm < 3 {
		warm = 3
	}
	for _, c := range cases {
		if _, err := o.r.timeSteps(warm, c.step); err != nil {
			return row, err
		}
	}
	o.h.Harvest()
	before := o.h.Snapshot().Counters
	o.poolDone, o.poolNotDone, o.beginSum, o.beginMax = 0, 0, 0, 0
	for rep := 0; rep < repeats; rep++ {
		for _, c := range cases {
			t, err := o.r.timeSteps(steps, c.step)
			if err != nil {
				return row, err
			}
			c.reps = append(c.reps, t)
		}
	}
	o.h.Harvest() // the last step's spans
	after := o.h.Snapshot().Counters
	row.None, row.Pool, row.Hub = newVariant(cases[0].reps), newVariant(cases[1].reps), newVariant(cases[2].reps)
	o.sum(&row, before, after)
	return row, nil
}

// newOverheadRun opens the rig, the hub and a pool of n+1 slots on g.
func newOverheadRun(g gpu, n, goroutines int) (*overheadRun, error) {
	r, err := newRig(g, goroutines)
	if err != nil {
		return nil, err
	}
	h, err := newHub(0, r.lane, gpuspans.DefaultSlots)
	if err != nil {
		r.close()
		return nil, err
	}
	pool, err := cuda.Open(0, n+1)
	if err != nil {
		closeHub(h, r)
		r.close()
		return nil, err
	}
	o := &overheadRun{g: g, r: r, h: h, pool: pool, items: make([]backend.HarvestItem, n+1), n: n, per: n / goroutines}
	for i := range o.items {
		o.items[i].Slot = uint32(i)
	}
	o.noneBody, o.poolBody, o.hubBody = o.launches, o.poolRecords, o.hubSpans
	return o, nil
}

// close closes the pool, lands the hub's spans and closes the rig.
func (o *overheadRun) close() {
	_ = o.r.syncAll()
	_ = o.pool.Close()
	closeHub(o.h, o.r)
	o.r.close()
}

// launches is goroutine w's share of a step without telemetry.
func (o *overheadRun) launches(w int) { o.r.launches(o.r.streams[w], o.per) }

// poolRecords is goroutine w's share with cuda.Pool records around each
// launch, on slots of its own.
func (o *overheadRun) poolRecords(w int) {
	s := o.r.streams[w]
	for i := 0; i < o.per; i++ {
		slot := w*o.per + i
		o.r.fail("pool record", o.pool.RecordBegin(slot, s))
		o.r.fail("launch", o.g.Empty(s))
		o.r.fail("pool record", o.pool.RecordEnd(slot, s))
	}
}

// hubSpans is goroutine w's share with a kernel span around each launch.
func (o *overheadRun) hubSpans(w int) { o.r.kernelSpans(o.h, o.r.streams[w], o.per) }

// noneStep: launches only, no telemetry call.
func (o *overheadRun) noneStep() {
	o.r.body = o.noneBody
	o.r.fanOut()
}

// poolStep: cuda.Pool directly, one Harvest of every slot, a record pair
// on the lane stream around the goroutines' records.
func (o *overheadRun) poolStep() {
	r, pool := o.r, o.pool
	r.fail("pool harvest", pool.Harvest(o.items))
	for i := range o.items {
		if o.items[i].State == backend.Done {
			o.poolDone++
		} else {
			o.poolNotDone++
		}
	}
	r.fail("pool record", pool.RecordBegin(o.n, r.lane))
	r.body = o.poolBody
	r.fanOut()
	r.fail("pool record", pool.RecordEnd(o.n, r.lane))
}

// hubStep: BeginStep (timed on its own), the lane span around the
// goroutines' kernel spans.
func (o *overheadRun) hubStep() {
	h := o.h
	t0 := time.Now()
	h.BeginStep()
	d := time.Since(t0)
	o.beginSum += d
	if d > o.beginMax {
		o.beginMax = d
	}
	h.LaneBegin(0)
	o.r.body = o.hubBody
	o.r.fanOut()
	h.LaneEnd(0)
}

// sum fills in row's figures from its variants and the hub's counters
// over the timed runs.
func (o *overheadRun) sum(row *overheadRow, before, after gpuspans.Counters) {
	n, steps, repeats := o.n, row.Steps, row.Repeats
	spans := float64(n + 1)
	row.LaunchNsPerKernel = row.None.CPUNsMin / float64(n)
	row.HubNsPerSpan = (row.Hub.CPUNsMin - row.None.CPUNsMin) / spans
	row.HubNsPerSpanMedian = (row.Hub.CPUNsMedian - row.None.CPUNsMedian) / spans
	row.PoolNsPerSpan = (row.Pool.CPUNsMin - row.None.CPUNsMin) / spans
	row.HubWallNsPerSpan = (row.Hub.StepNsMin - row.None.StepNsMin) / spans
	hubSteps := float64(steps * repeats)
	row.BeginStepNsMean = ns(o.beginSum) / hubSteps
	row.BeginStepNsMax = ns(o.beginMax)
	harvests := float64(after.Harvests - before.Harvests)
	row.HarvestNsStep = div(ns(after.HarvestTime-before.HarvestTime), harvests)
	row.Begun = after.Begun - before.Begun
	row.Landed = after.Landed - before.Landed
	row.SpansPerHarvest = div(float64(row.Landed), harvests)
	row.DroppedSlotBusy = after.Dropped[gpuspans.DropSlotBusy] - before.Dropped[gpuspans.DropSlotBusy]
	row.DroppedCaptur = after.Dropped[gpuspans.DropCapturing] - before.Dropped[gpuspans.DropCapturing]
	row.Errored = after.Errored - before.Errored
	row.PoolDone, row.PoolNotDone = o.poolDone, o.poolNotDone
}

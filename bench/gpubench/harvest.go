package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// --- harvest ----------------------------------------------------------------
//
// What a harvest costs the serving thread: landing in Go against the C
// core's batched harvest of the same spans, BeginStep with and without the
// background harvester, and a free-running loop (no sync, the CPU ahead of
// the GPU) whose raw reference driver_bench measures in the same run.

type landingRow struct {
	Starts      string  `json:"starts"` // "off" or "on": spans placed on the host clock
	Spans       int     `json:"spans"`  // done spans per harvest
	Repeats     int     `json:"repeats"`
	CNsPerSpan  float64 `json:"c_ns_per_span"`        // cuda.Pool.Harvest, no start times: the C core's batched harvest, median
	CNsStarts   float64 `json:"c_ns_per_span_starts"` // the same with start times, for the "on" row
	GoNsPerSpan float64 `json:"go_ns_per_span"`       // Hub.Harvest landing as many spans, median
	Ratio       float64 `json:"ratio"`                // go / c (the C harvest without start times, as the target is set)
	Target      float64 `json:"target"`
}

type beginStepRow struct {
	Harvester string  `json:"harvester"` // "inline" (BeginStep harvests) or "background" (RunHarvester, 1 ms)
	Steps     int     `json:"steps"`
	Spans     int     `json:"kernel_spans_per_step"`
	P50Ns     float64 `json:"begin_step_p50_ns"`
	P99Ns     float64 `json:"begin_step_p99_ns"`
	MaxNs     float64 `json:"begin_step_max_ns"`
	Landed    uint64  `json:"landed"`
	Begun     uint64  `json:"begun"`
	Dropped   uint64  `json:"dropped"`
	Balanced  bool    `json:"balanced"` // begun == landed + dropped + errored + in flight, after settling
}

type freeRunRow struct {
	Variant        string    `json:"variant"` // none, off, kernel, kernel_background
	StepNsMedian   float64   `json:"step_ns_median"`
	StepNsReps     []float64 `json:"step_ns_reps"`
	AddedNs        float64   `json:"added_ns"`              // over none
	HarvestNsStep  float64   `json:"harvest_ns_per_step"`   // Counters.HarvestTime per step (on the harvester's thread for background)
	LandedPerStep  float64   `json:"landed_per_step"`       //
	InFlightAtEnd  uint64    `json:"in_flight_at_loop_end"` // how far the GPU was behind
	DroppedPerStep float64   `json:"dropped_per_step"`      //
	Harvests       uint64    `json:"harvests"`              //
	Skipped        uint64    `json:"harvests_skipped"`      //
	StartTimes     bool      `json:"start_times,omitempty"` // any landed span was placed
}

type harvestResult struct {
	Landing        []landingRow   `json:"landing"`
	LandingMethod  string         `json:"landing_method"`
	BeginStep      []beginStepRow `json:"begin_step"`
	BeginMethod    string         `json:"begin_step_method"`
	FreeRun        []freeRunRow   `json:"free_run"`
	FreeRunMethod  string         `json:"free_run_method"`
	FreeRunSteps   int            `json:"free_run_steps"`
	FreeRunKernels int            `json:"free_run_kernel_spans_per_step"`
	Truncated      bool           `json:"truncated,omitempty"`
}

func runHarvest(e *env) (interface{}, string, error) {
	g, r, release, err := e.openRig(1)
	if err != nil {
		return nil, "", err
	}
	defer release()
	res := &harvestResult{
		LandingMethod: "per repeat: N empty kernels in spans on one stream, synced, then one timed harvest of the N done spans: " +
			"cuda.Pool.Harvest without start times (the C core's batched gs_pool_harvest, one cgo call, on a pool of the hub's " +
			"size whose slots are taken in turn as the hub's ring takes them: the reference of both " +
			"rows) against Hub.Harvest (scan, the same C harvest, landing in aggregates and the recent ring); C and Go " +
			"repeats interleaved, medians",
		BeginMethod: "per step: BeginStep (timed), lane span around 512 kernel spans of empty kernels, no sync; every step " +
			"armed; inline: BeginStep lands the previous step's spans; background: Hub.RunHarvester every 1 ms on its own goroutine",
		FreeRunMethod: "per step: BeginStep, lane span on the lane stream around 16 kernel spans of empty kernels on the " +
			"kernel stream, no sync (the CPU runs ahead of the GPU as in a busy engine); host time per step, median of " +
			"interleaved repeats; none: the launches alone; start times on demand (no reader)",
	}
	for _, on := range []bool{false, true} {
		row, err := measureLanding(e, g, r, on)
		if err != nil {
			return res, "", fmt.Errorf("landing, start times %v: %w", on, err)
		}
		res.Landing = append(res.Landing, row)
	}
	for _, bg := range []bool{false, true} {
		if e.late() {
			res.Truncated = true
			return res, "", nil
		}
		row, err := measureBeginStep(e, r, bg)
		if err != nil {
			return res, "", fmt.Errorf("begin step, background %v: %w", bg, err)
		}
		res.BeginStep = append(res.BeginStep, row)
	}
	if e.late() {
		res.Truncated = true
		return res, "", nil
	}
	res.FreeRunSteps, res.FreeRunKernels = e.scale(3000, 50), 16
	rows, err := measureFreeRun(e, r, res.FreeRunSteps, res.FreeRunKernels)
	res.FreeRun = rows
	if err != nil {
		return res, "", fmt.Errorf("free run: %w", err)
	}
	return res, "", nil
}

// harvestHub is newHub with the start-time option given (always or never
// for the landing rows, on demand, the default, elsewhere) and the level:
// a hub created below Kernel opens no pool, so BeginStep stays one check.
func harvestHub(r *rig, starts string, level gpuspans.Level) (*gpuspans.Hub, error) {
	o := gpuspans.Options{Level: level}
	switch starts {
	case "on":
		o.StartTimes = gpuspans.StartTimesAlways
	case "off":
		o.StartTimes = gpuspans.StartTimesNever
	}
	h, err := hubWith(o, 0, r.lane, gpuspans.DefaultSlots)
	if err != nil {
		return nil, err
	}
	h.BeginStep() // opens the pool at Kernel; below, none opens
	settle(h, r)
	return h, nil
}

// cSide is the C core's half of the landing rows: a pool of the hub's size
// whose slots each harvest takes n at a time, in turn, as the hub's ring
// does, so both sides touch as much memory (theirs and the driver's) per
// span.
type cSide struct {
	g     gpu
	r     *rig
	pool  *cuda.Pool
	items []backend.HarvestItem
	next  int
}

func newCSide(g gpu, r *rig, n int) (*cSide, error) {
	pool, err := cuda.Open(0, gpuspans.DefaultSlots)
	if err != nil {
		return nil, err
	}
	return &cSide{g: g, r: r, pool: pool, items: make([]backend.HarvestItem, n)}, nil
}

// harvest records n spans around empty kernels, syncs, and times one
// harvest of them; it returns ns per span.
func (c *cSide) harvest(want uint32) (float64, error) {
	n, k := len(c.items), c.r.streams[0]
	first := c.next
	c.next = (c.next + n) % c.pool.Slots()
	for i := 0; i < n; i++ {
		c.r.fail("pool record", c.pool.RecordBegin(first+i, k))
		c.r.fail("launch", c.g.Empty(k))
		c.r.fail("pool record", c.pool.RecordEnd(first+i, k))
	}
	if err := c.r.syncAll(); err != nil {
		return 0, err
	}
	for i := range c.items {
		c.items[i] = backend.HarvestItem{Slot: uint32(first + i), WantStart: want}
	}
	t0 := time.Now()
	err := c.pool.Harvest(c.items)
	d := time.Since(t0)
	if err != nil {
		return 0, err
	}
	for i := range c.items {
		if c.items[i].State != backend.Done {
			return 0, fmt.Errorf("the C core's harvest: slot %d %v after a sync", c.items[i].Slot, c.items[i].State)
		}
	}
	return ns(d) / float64(n), nil
}

// close lands what is left and closes the pool.
func (c *cSide) close() {
	_ = c.r.syncAll()
	all := make([]backend.HarvestItem, c.pool.Slots())
	for i := range all {
		all[i].Slot = uint32(i)
	}
	_ = c.pool.Harvest(all)
	_ = c.pool.Close()
}

// goHarvest lands n spans around empty kernels through h, synced first,
// and returns ns per span of the one timed Hub.Harvest.
func goHarvest(g gpu, r *rig, h *gpuspans.Hub, n int) (float64, error) {
	k := r.streams[0]
	before := h.Snapshot().Counters.Landed
	for i := 0; i < n; i++ {
		sp := h.KernelBegin(kEmpty, k)
		r.fail("launch", g.Empty(k))
		h.KernelEnd(sp)
	}
	if err := r.syncAll(); err != nil {
		return 0, err
	}
	t0 := time.Now()
	h.Harvest()
	d := time.Since(t0)
	if got := h.Snapshot().Counters.Landed - before; got != uint64(n) {
		return 0, fmt.Errorf("the Go harvest landed %d of %d done spans", got, n)
	}
	return ns(d) / float64(n), r.firstErr()
}

func measureLanding(e *env, g gpu, r *rig, startsOn bool) (landingRow, error) {
	const n = 512
	starts, target := "off", 1.3
	if startsOn {
		starts, target = "on", 2.0
	}
	row := landingRow{Starts: starts, Spans: n, Repeats: e.scale(21, 3), Target: target}
	h, err := harvestHub(r, starts, gpuspans.LevelKernel)
	if err != nil {
		return row, err
	}
	defer closeHub(h, r)
	c, err := newCSide(g, r, n)
	if err != nil {
		return row, err
	}
	defer c.close()
	var cNs, cStarts, goNs []float64
	for rep := 0; rep < row.Repeats+1; rep++ { // the first is a warm-up
		dc, err := c.harvest(0)
		if err != nil {
			return row, err
		}
		ds := 0.0
		if startsOn {
			if ds, err = c.harvest(1); err != nil {
				return row, err
			}
		}
		dg, err := goHarvest(g, r, h, n)
		if err != nil {
			return row, err
		}
		if rep > 0 {
			cNs, goNs = append(cNs, dc), append(goNs, dg)
			if startsOn {
				cStarts = append(cStarts, ds)
			}
		}
	}
	row.CNsPerSpan, row.CNsStarts, row.GoNsPerSpan = median(cNs), median(cStarts), median(goNs)
	row.Ratio = div(row.GoNsPerSpan, row.CNsPerSpan)
	return row, nil
}

// startHarvester runs h.RunHarvester every millisecond on a goroutine of
// its own until the returned stop is called.
func startHarvester(h *gpuspans.Hub) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = h.RunHarvester(ctx, time.Millisecond)
	}()
	return func() { cancel(); wg.Wait() }
}

func measureBeginStep(e *env, r *rig, background bool) (beginStepRow, error) {
	const spans = 512
	row := beginStepRow{Harvester: "inline", Steps: e.scale(400, 6), Spans: spans}
	h, err := harvestHub(r, "", gpuspans.LevelKernel)
	if err != nil {
		return row, err
	}
	stop := func() {}
	if background {
		row.Harvester = "background"
		stop = startHarvester(h)
	}
	k := r.streams[0]
	took := make([]float64, 0, row.Steps)
	for i := 0; i < row.Steps; i++ {
		t0 := time.Now()
		h.BeginStep()
		took = append(took, ns(time.Since(t0)))
		h.LaneBegin(0)
		r.kernelSpans(h, k, spans)
		h.LaneEnd(0)
	}
	stop()
	s := settle(h, r)
	closeHub(h, r)
	if err := r.firstErr(); err != nil {
		return row, err
	}
	took = took[1:] // the first step's BeginStep has nothing to land
	row.P50Ns, row.P99Ns, row.MaxNs = quantile(took, 0.5), quantile(took, 0.99), maxOf(took)
	c := s.Counters
	row.Begun, row.Landed, row.Dropped = c.Begun, c.Landed, c.DroppedTotal()
	row.Balanced = c.Begun == c.Landed+c.DroppedTotal()+c.Errored+c.InFlight
	if !row.Balanced {
		return row, fmt.Errorf("accounting: %+v", c)
	}
	return row, nil
}

// freeVariant is one variant of the free-running loop and its hub.
type freeVariant struct {
	name     string
	h        *gpuspans.Hub // nil: launches only
	level    gpuspans.Level
	bg       bool
	reps     []float64
	c0       gpuspans.Counters
	steps    int
	inFlight uint64 // the most in flight at the end of a repeat
}

// run times n steps of the loop, with kernels kernel spans each, and
// returns host ns per step.
func (v *freeVariant) run(r *rig, n, kernels int) float64 {
	if v.bg {
		defer startHarvester(v.h)()
	}
	h, k := v.h, r.streams[0]
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if h == nil {
			r.launches(k, kernels)
			continue
		}
		r.servedStep(h, k, kernels)
	}
	return ns(time.Since(t0)) / float64(n)
}

// row sums the variant up against the launches alone (none ns per step).
func (v *freeVariant) row(none float64) freeRunRow {
	row := freeRunRow{Variant: v.name, StepNsMedian: median(v.reps), StepNsReps: v.reps}
	row.AddedNs = row.StepNsMedian - none
	if v.h == nil {
		return row
	}
	c := v.h.Snapshot().Counters
	n := float64(v.steps)
	row.HarvestNsStep = ns(c.HarvestTime-v.c0.HarvestTime) / n
	row.LandedPerStep = float64(c.Landed-v.c0.Landed) / n
	row.DroppedPerStep = float64(c.DroppedTotal()-v.c0.DroppedTotal()) / n
	row.Harvests, row.Skipped = c.Harvests-v.c0.Harvests, c.HarvestsSkipped-v.c0.HarvestsSkipped
	row.InFlightAtEnd = v.inFlight
	for _, sp := range v.h.RecentSpans(0, nil) {
		if sp.StartNs != 0 {
			row.StartTimes = true
			break
		}
	}
	return row
}

func measureFreeRun(e *env, r *rig, steps, kernels int) ([]freeRunRow, error) {
	variants := []*freeVariant{{name: "none"}, {name: "off", level: gpuspans.LevelOff},
		{name: "kernel", level: gpuspans.LevelKernel}, {name: "kernel_background", level: gpuspans.LevelKernel, bg: true}}
	for _, v := range variants[1:] {
		h, err := harvestHub(r, "", v.level)
		if err != nil {
			return nil, err
		}
		defer closeHub(h, r)
		v.h = h
	}
	for _, v := range variants { // warm up
		v.run(r, steps/10+1, kernels)
		_ = r.syncAll()
		if v.h != nil {
			v.c0 = settle(v.h, r).Counters
		}
	}
	for rep := 0; rep < e.scale(5, 2) && (rep == 0 || !e.late()); rep++ {
		for _, v := range variants { // interleaved, as the machine's noise drifts
			v.reps = append(v.reps, v.run(r, steps, kernels))
			v.steps += steps
			if v.h != nil {
				v.inFlight = max(v.inFlight, v.h.Snapshot().Counters.InFlight)
			}
			if err := r.syncAll(); err != nil {
				return nil, err
			}
			if v.h != nil {
				settle(v.h, r)
			}
		}
	}
	if err := r.firstErr(); err != nil {
		return nil, err
	}
	var rows []freeRunRow
	for _, v := range variants {
		rows = append(rows, v.row(median(variants[0].reps)))
	}
	return rows, nil
}

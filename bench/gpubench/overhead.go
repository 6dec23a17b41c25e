package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Kernel handles the hub aggregates by name.
const (
	kEmpty    = 1
	kSpin     = 2
	kCaptured = 3
)

// rig is one device's streams for a serving-loop step: a lane stream and
// one kernel stream per launching goroutine, with the goroutines parked
// between steps.
type rig struct {
	g       gpu
	lane    backend.Stream
	streams []backend.Stream

	body  func(w int) // what each goroutine does in a step; set while they are parked
	start []chan struct{}
	wg    sync.WaitGroup

	// Host time spent in bodies, per goroutine (each writes its own; the
	// step's goroutine reads them after the WaitGroup), and in fanOut.
	bodyTime []time.Duration
	fanTime  time.Duration

	mu  sync.Mutex
	err errs
}

// openRig opens device 0 and a rig of the given goroutines' streams on it;
// release closes both.
func (e *env) openRig(goroutines int) (g gpu, r *rig, release func(), err error) {
	if g, err = e.newGPU(0); err != nil {
		return nil, nil, nil, err
	}
	if r, err = newRig(g, goroutines); err != nil {
		g.Close()
		return nil, nil, nil, err
	}
	return g, r, func() { r.close(); g.Close() }, nil
}

// openHub is openRig with one launching goroutine and a hub from newHub on
// its lane stream; release lands the hub's spans, then closes the rig and
// the device.
func (e *env) openHub(slots int, lanes ...string) (g gpu, r *rig, h *gpuspans.Hub, release func(), err error) {
	g, r, closeRig, err := e.openRig(1)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if h, err = newHub(0, r.lane, slots, lanes...); err != nil {
		closeRig()
		return nil, nil, nil, nil, err
	}
	return g, r, h, func() { closeHub(h, r); closeRig() }, nil
}

func newRig(g gpu, goroutines int) (*rig, error) {
	r := &rig{g: g, bodyTime: make([]time.Duration, goroutines)}
	var err error
	if r.lane, err = g.NewStream(); err != nil {
		return nil, err
	}
	for i := 0; i < goroutines; i++ {
		s, err := g.NewStream()
		if err != nil {
			r.close()
			return nil, err
		}
		r.streams = append(r.streams, s)
	}
	if goroutines > 1 {
		r.start = make([]chan struct{}, goroutines)
		for w := range r.start {
			r.start[w] = make(chan struct{}, 1)
			go func(w int) {
				for range r.start[w] {
					r.runBody(w)
					r.wg.Done()
				}
			}(w)
		}
	}
	return r, nil
}

func (r *rig) runBody(w int) {
	t := time.Now()
	r.body(w)
	r.bodyTime[w] += time.Since(t)
}

// fanOut runs body on every goroutine (inline for one) and waits.
func (r *rig) fanOut() {
	t := time.Now()
	if r.start == nil {
		r.runBody(0)
	} else {
		r.wg.Add(len(r.start))
		for _, c := range r.start {
			c <- struct{}{}
		}
		r.wg.Wait()
	}
	r.fanTime += time.Since(t)
}

// fail keeps the first error a goroutine met.
func (r *rig) fail(what string, err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	r.err.add(what, err)
	r.mu.Unlock()
}

func (r *rig) firstErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err.err
}

func (r *rig) syncAll() error {
	if err := r.g.Sync(r.lane); err != nil {
		return err
	}
	for _, s := range r.streams {
		if err := r.g.Sync(s); err != nil {
			return err
		}
	}
	return nil
}

// launches launches n empty kernels on k: a step's work with no
// telemetry call.
func (r *rig) launches(k backend.Stream, n int) {
	for i := 0; i < n; i++ {
		r.fail("launch", r.g.Empty(k))
	}
}

// kernelSpans launches n empty kernels on k, each inside a kernel span.
func (r *rig) kernelSpans(h *gpuspans.Hub, k backend.Stream, n int) {
	for i := 0; i < n; i++ {
		sp := h.KernelBegin(kEmpty, k)
		r.fail("launch", r.g.Empty(k))
		h.KernelEnd(sp)
	}
}

// servedStep is one step of the serving loop: BeginStep, then lane 0's
// span around n kernel spans on k.
func (r *rig) servedStep(h *gpuspans.Hub, k backend.Stream, n int) {
	h.BeginStep()
	h.LaneBegin(0)
	r.kernelSpans(h, k, n)
	h.LaneEnd(0)
}

// stepTime is what timeSteps measured, per step.
type stepTime struct {
	wall float64 // ns from the step's first call to its last
	// ns of host time over all goroutines: the step's own thread outside
	// fanOut plus every goroutine's body; with one goroutine about wall.
	cpu float64
}

// timeSteps runs step steps times, timing each on the host and syncing
// every stream after it, untimed, so each step starts on an idle GPU with
// an empty queue and never blocks on a full one.
func (r *rig) timeSteps(steps int, step func()) (stepTime, error) {
	var total time.Duration
	r.fanTime = 0
	for w := range r.bodyTime {
		r.bodyTime[w] = 0
	}
	for i := 0; i < steps; i++ {
		t0 := time.Now()
		step()
		total += time.Since(t0)
		if err := r.syncAll(); err != nil {
			return stepTime{}, err
		}
	}
	if err := r.firstErr(); err != nil {
		return stepTime{}, err
	}
	cpu := total - r.fanTime
	for _, b := range r.bodyTime {
		cpu += b
	}
	return stepTime{wall: ns(total) / float64(steps), cpu: ns(cpu) / float64(steps)}, nil
}

func (r *rig) close() {
	for _, c := range r.start {
		close(c)
	}
	_ = r.syncAll()
	_ = r.g.DestroyStream(r.lane)
	for _, s := range r.streams {
		_ = r.g.DestroyStream(s)
	}
}

// newHub makes a hub at LevelKernel, every step armed, with the kernels
// named, installed on device with lane stream lane.
// noStartTimes is the -no-start-times flag, for every hub newHub makes.
var noStartTimes bool

// startTimes is the start-time mode the -no-start-times flag asks for.
func startTimes() gpuspans.StartTimes {
	if noStartTimes {
		return gpuspans.StartTimesNever
	}
	return gpuspans.StartTimesAuto
}

func newHub(device int, lane backend.Stream, slots int, lanes ...string) (*gpuspans.Hub, error) {
	return hubWith(gpuspans.Options{Lanes: lanes, Level: gpuspans.LevelKernel, StartTimes: startTimes()}, device, lane, slots)
}

// hubWith makes a hub with o (lanes "decode" unless given, every step
// armed, the section's log), the kernels named, installed on device with
// lane stream lane.
func hubWith(o gpuspans.Options, device int, lane backend.Stream, slots int) (*gpuspans.Hub, error) {
	if len(o.Lanes) == 0 {
		o.Lanes = []string{"decode"}
	}
	o.KernelSpanEvery, o.Logf, o.Slots = 1, logf, min(slots, gpuspans.DefaultSlots)
	h, err := gpuspans.New(o)
	if err != nil {
		return nil, err
	}
	for k, name := range map[uint64]string{kEmpty: "empty", kSpin: "spin", kCaptured: "captured"} {
		if err := h.RegisterKernel(k, name); err != nil {
			return nil, err
		}
	}
	if err := h.Install(device, lane, cuda.Opener(device)); err != nil {
		return nil, err
	}
	return h, nil
}

// logf keeps the hub's rare log lines on stderr, in the section's log.
func logf(format string, args ...interface{}) {
	fmt.Fprintf(stderrLog, "gpuspans: "+format+"\n", args...)
}

// settle lands everything in flight: sync every rig, then harvest until
// nothing is in flight or a second has passed.
func settle(h *gpuspans.Hub, rigs ...*rig) gpuspans.Snapshot {
	for _, r := range rigs {
		_ = r.syncAll()
	}
	deadline := time.Now().Add(time.Second)
	for {
		h.Harvest()
		s := h.Snapshot()
		if s.Counters.InFlight == 0 || time.Now().After(deadline) {
			return s
		}
		time.Sleep(time.Millisecond)
	}
}

// closeHub retires the hub's recorders and lands their spans, so their
// pools close.
func closeHub(h *gpuspans.Hub, r *rig, devices ...int) {
	if len(devices) == 0 {
		devices = []int{0}
	}
	for _, d := range devices {
		h.Uninstall(d)
	}
	settle(h, r)
}

// --- overhead ---------------------------------------------------------------

type variant struct {
	StepNsMin    float64   `json:"step_ns_min"` // wall time per step
	StepNsMedian float64   `json:"step_ns_median"`
	StepNsReps   []float64 `json:"step_ns_reps"`
	CPUNsMin     float64   `json:"cpu_ns_min"` // host time per step over all goroutines
	CPUNsMedian  float64   `json:"cpu_ns_median"`
	CPUNsReps    []float64 `json:"cpu_ns_reps"`
}

func newVariant(reps []stepTime) variant {
	var wall, cpu []float64
	for _, t := range reps {
		wall = append(wall, t.wall)
		cpu = append(cpu, t.cpu)
	}
	return variant{StepNsMin: minOf(wall), StepNsMedian: median(wall), StepNsReps: wall,
		CPUNsMin: minOf(cpu), CPUNsMedian: median(cpu), CPUNsReps: cpu}
}

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

// --- disabled ---------------------------------------------------------------

type disabledResult struct {
	Loop         string             `json:"loop"`
	Steps        int                `json:"steps"`
	Repeats      int                `json:"repeats"`
	KernelsStep  int                `json:"kernels_per_step"`
	Variants     map[string]variant `json:"variants"` // none, off, step
	OffMinusNone float64            `json:"off_minus_none_ns_per_step"`
	StepMinus    float64            `json:"step_minus_none_ns_per_step"`
	NoiseNs      float64            `json:"noise_ns_per_step"` // max - min of the no-telemetry repeats
	OffInNoise   bool               `json:"off_within_noise"`
	StepInNoise  bool               `json:"step_within_noise"`
	PoolsOpened  bool               `json:"pools_opened"` // must stay false below Kernel
	Begun        uint64             `json:"begun"`        // must stay 0
	// Per call, in a tight loop without launches (best of 3).
	MicroNs map[string]float64 `json:"micro_ns"`
}

func runDisabled(e *env) (interface{}, string, error) {
	_, r, release, err := e.openRig(1)
	if err != nil {
		return nil, "", err
	}
	defer release()
	h, err := gpuspans.New(gpuspans.Options{Lanes: []string{"decode"}, Level: gpuspans.LevelOff, KernelSpanEvery: 1, Logf: logf})
	if err != nil {
		return nil, "", err
	}
	if err := h.Install(0, r.lane, cuda.Opener(0)); err != nil {
		return nil, "", err
	}
	const kernels = 8
	steps, repeats := e.scale(2000, 20), e.scale(5, 3)
	k := r.streams[0]
	none := func() { r.launches(k, kernels) }
	served := func() { r.servedStep(h, k, kernels) }
	res := &disabledResult{
		Loop:  "per step: BeginStep, LaneBegin, 8 x (KernelBegin, empty kernel, KernelEnd), LaneEnd; stream synced after each step, untimed",
		Steps: steps, Repeats: repeats, KernelsStep: kernels, Variants: map[string]variant{},
	}
	runs := []struct {
		name  string
		level gpuspans.Level
		f     func()
	}{{"none", gpuspans.LevelOff, none}, {"off", gpuspans.LevelOff, served}, {"step", gpuspans.LevelStep, served}}
	reps := map[string][]stepTime{}
	for _, v := range runs { // warm up
		_ = h.SetLevel(v.level)
		if _, err := r.timeSteps(steps/10+1, v.f); err != nil {
			return nil, "", err
		}
	}
	for rep := 0; rep < repeats; rep++ {
		for _, v := range runs {
			_ = h.SetLevel(v.level)
			t, err := r.timeSteps(steps, v.f)
			if err != nil {
				return nil, "", err
			}
			reps[v.name] = append(reps[v.name], t)
		}
	}
	for name, x := range reps {
		res.Variants[name] = newVariant(x)
	}
	none0 := res.Variants["none"]
	res.NoiseNs = maxOf(none0.StepNsReps) - minOf(none0.StepNsReps)
	res.OffMinusNone = res.Variants["off"].StepNsMedian - none0.StepNsMedian
	res.StepMinus = res.Variants["step"].StepNsMedian - none0.StepNsMedian
	res.OffInNoise = absF(res.OffMinusNone) <= res.NoiseNs
	res.StepInNoise = absF(res.StepMinus) <= res.NoiseNs

	// The calls alone: what the loop above pays per call below Kernel.
	iters := e.scale(5000000, 10000)
	best := func(f func(n int)) float64 {
		b := 0.0
		for i := 0; i < 3; i++ {
			t0 := time.Now()
			f(iters)
			if t := ns(time.Since(t0)) / float64(iters); i == 0 || t < b {
				b = t
			}
		}
		return b
	}
	var sink uint64
	res.MicroNs = map[string]float64{}
	res.MicroNs["empty_loop"] = best(func(n int) {
		for i := 0; i < n; i++ {
			sink += uint64(i)
		}
	})
	for _, lv := range []gpuspans.Level{gpuspans.LevelOff, gpuspans.LevelStep} {
		_ = h.SetLevel(lv)
		res.MicroNs["span_calls_"+lv.String()] = best(func(n int) {
			for i := 0; i < n; i++ {
				h.LaneBegin(0)
				sp := h.KernelBegin(kEmpty, k)
				h.KernelEnd(sp)
				h.LaneEnd(0)
			}
		})
		res.MicroNs["begin_step_"+lv.String()] = best(func(n int) {
			for i := 0; i < n; i++ {
				h.BeginStep()
			}
		})
	}
	_ = sink
	s := h.Snapshot()
	res.Begun = s.Counters.Begun
	for _, d := range s.Devices {
		if d.State != gpuspans.DevicePending {
			res.PoolsOpened = true
		}
	}
	return res, "", nil
}

// --- ceiling ----------------------------------------------------------------

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

// --- harvestwait ------------------------------------------------------------

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

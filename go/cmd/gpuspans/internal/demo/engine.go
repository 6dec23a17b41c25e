package demo

import (
	"fmt"
	"math"
	"math/rand"
	"sync/atomic"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Lane names of the demo engine, in step order.
const (
	LanePrefill = "prefill"
	LaneDecode  = "decode"
)

// EngineConfig is the shape of the demo engine's steps: a plain value,
// read once by NewEngine.
type EngineConfig struct {
	Prefill Kernels // launched in the prefill lane, in order, every step
	Decode  Kernels // launched in the decode lane, in order, every step
	// Graph is captured once into a CUDA graph at start and replayed at the
	// end of the decode lane every step, as serving engines replay captured
	// decode steps. Empty: no graph.
	Graph Kernels
	// Jitter varies each launch's duration uniformly by up to this fraction
	// either way (0.25: 75% to 125%), so histograms have a shape. 0..0.9.
	Jitter float64
	// Seed seeds the jitter, so runs are repeatable.
	Seed int64
	// BatchKernels gives each lane one more kernel whose time its batch's
	// requests set (Engine.batch): the demo's tenants.
	BatchKernels bool
	// HostGap is host work in the decode lane between its eager kernels
	// and the graph's replay (0..MaxHostGap), as an engine's sampling or
	// scheduling between launches: the GPU idles through it once its
	// queue runs dry, which kernel windows' GPU time shows.
	HostGap time.Duration
}

// MaxHostGap bounds EngineConfig.HostGap.
const MaxHostGap = 100 * time.Millisecond

// launch is one kernel of a lane, with the handle it is registered under.
type launch struct {
	handle uint64
	k      Kernel
}

// Engine is the demo serving loop's step: a prefill lane and a decode lane,
// each a few kernels, with lane spans every step and kernel spans on armed
// steps, exactly as a serving engine drives a hub. It is driven by one
// goroutine; the hub it drives may be read and controlled from any other.
type Engine struct {
	hub      *gpuspans.Hub
	gpu      GPU
	prefill  []launch
	decode   []launch
	graph    []launch
	lanes    [2]int // hub lane indices of prefill and decode
	jitter   float64
	hostGap  time.Duration
	rng      *rand.Rand
	captured bool
	steps    atomic.Uint64    // engine steps run, whatever the level (the hub counts only at step and above)
	scale    [2]atomic.Uint64 // float64 bits: each lane's kernel durations are multiplied by it (SetScale)

	// onStep, when set, is called with the hub's step number after each
	// BeginStep: where an engine tells its exporters the step's requests.
	onStep func(step uint64)
	// batch is each lane's batch work this step, set by onStep, launched
	// as the lane's batch kernel (EngineConfig.BatchKernels).
	batch       [2]time.Duration
	batchLaunch [2]launch
}

// NewEngine registers the kernels of cfg with hub and returns the engine.
// The hub must have the lanes LanePrefill and LaneDecode, and a recorder
// for gpu installed. Kernel handles are small integers standing in for the
// CUfunction pointers a real engine would pass: the spin kernel behind them
// is the same function whatever its name. Call it from the goroutine that
// will drive the engine; registering takes the hub's harvest lock briefly.
func NewEngine(hub *gpuspans.Hub, gpu GPU, cfg EngineConfig) (*Engine, error) {
	if !(cfg.Jitter >= 0 && cfg.Jitter <= 0.9) { // NaN fails both
		return nil, fmt.Errorf("demo: jitter %v outside 0..0.9", cfg.Jitter)
	}
	if cfg.HostGap < 0 || cfg.HostGap > MaxHostGap {
		return nil, fmt.Errorf("demo: host gap %v outside 0..%v", cfg.HostGap, MaxHostGap)
	}
	e := &Engine{hub: hub, gpu: gpu, jitter: cfg.Jitter, hostGap: cfg.HostGap, rng: rand.New(rand.NewSource(cfg.Seed))}
	for i := range e.scale {
		e.scale[i].Store(math.Float64bits(1))
	}
	for i, name := range []string{LanePrefill, LaneDecode} {
		idx, ok := hub.LaneIndex(name)
		if !ok {
			return nil, fmt.Errorf("demo: the hub has no lane %q", name)
		}
		e.lanes[i] = idx
	}
	handles := map[string]uint64{}
	register := func(ks Kernels) ([]launch, error) {
		out := make([]launch, 0, len(ks))
		for _, k := range ks {
			h, ok := handles[k.Name]
			if !ok {
				h = uint64(len(handles) + 1)
				if err := hub.RegisterKernel(h, k.Name); err != nil {
					return nil, fmt.Errorf("demo: kernel %q: %w", k.Name, err)
				}
				handles[k.Name] = h
			}
			out = append(out, launch{handle: h, k: k})
		}
		return out, nil
	}
	var err error
	if e.prefill, err = register(cfg.Prefill); err != nil {
		return nil, err
	}
	if e.decode, err = register(cfg.Decode); err != nil {
		return nil, err
	}
	if e.graph, err = register(cfg.Graph); err != nil {
		return nil, err
	}
	if cfg.BatchKernels {
		for i, name := range []string{"prefill_batch", "decode_batch"} {
			l, err := register(Kernels{{Name: name}})
			if err != nil {
				return nil, err
			}
			e.batchLaunch[i] = l[0]
		}
	}
	return e, nil
}

// CaptureResult says how a capture went; a plain value.
type CaptureResult struct {
	Kernels int // launches captured into the graph
	// Refused is how many kernel spans the hub declined to record on the
	// capturing stream (counted as dropped, reason capturing): an event
	// recorded into a capture would have broken the graph.
	Refused uint64
}

// Capture captures the graph kernels into a graph on the engine's stream,
// with kernel spans around each launch exactly as on an eager step. It
// runs as a step of its own, armed on purpose (kernel_span_every is 1 for
// that step), so that the hub faces a capturing stream: with the level at
// Kernel every one of those spans must be refused, and the capture must
// end intact. A capture is made once; without graph kernels it does
// nothing. Call it from the engine's goroutine, before the first Step.
func (e *Engine) Capture() (CaptureResult, error) {
	var res CaptureResult
	if len(e.graph) == 0 || e.captured {
		return res, nil
	}
	every := e.hub.KernelSpanEvery()
	if err := e.hub.SetKernelSpanEvery(1); err != nil {
		return res, err
	}
	e.hub.BeginStep()
	// Restore the period before anything can fail, so the next step uses it.
	_ = e.hub.SetKernelSpanEvery(every)
	before := e.hub.Snapshot().Counters.Dropped[gpuspans.DropCapturing]
	if err := e.gpu.BeginCapture(); err != nil {
		return res, fmt.Errorf("demo: capture: %w", err)
	}
	var launchErr error
	stream := e.gpu.Stream()
	for _, l := range e.graph {
		sp := e.hub.KernelBegin(l.handle, stream)
		launchErr = e.gpu.Launch(l.k.Name, l.k.Duration)
		e.hub.KernelEnd(sp)
		if launchErr != nil {
			break
		}
		res.Kernels++
	}
	endErr := e.gpu.EndCapture()
	if launchErr != nil {
		return res, fmt.Errorf("demo: launch during capture: %w", launchErr)
	}
	if endErr != nil {
		return res, fmt.Errorf("demo: capture: %w", endErr)
	}
	e.captured = true
	res.Refused = e.hub.Snapshot().Counters.Dropped[gpuspans.DropCapturing] - before
	return res, nil
}

// Step runs one engine step: BeginStep, the prefill lane's kernels, the
// decode lane's kernels and graph replay, then a wait for the GPU (the
// engine reading back its tokens). Each lane is bracketed by a lane span
// and each eager launch by a kernel span, which opens only on armed steps.
// Call it from the engine's goroutine only.
func (e *Engine) Step() error {
	e.hub.BeginStep()
	if e.onStep != nil {
		e.onStep(e.hub.Step())
	}
	if err := e.lane(0, e.prefill, false); err != nil {
		return err
	}
	if err := e.lane(1, e.decode, e.captured); err != nil {
		return err
	}
	if err := e.gpu.Wait(); err != nil {
		return fmt.Errorf("demo: waiting for the step: %w", err)
	}
	e.steps.Add(1)
	return nil
}

// Steps returns the number of steps run. Safe from any goroutine.
func (e *Engine) Steps() uint64 { return e.steps.Load() }

// MinScale and MaxScale bound SetScale's factor.
const (
	MinScale = 0.1
	MaxScale = 10
)

// SetScale multiplies the durations of the given lane's eager kernels
// (LanePrefill or LaneDecode) by factor from the next step on, so that a
// test can make a lane slower mid-run and watch the telemetry follow. The
// graph replayed in decode is unchanged. Safe from any goroutine.
func (e *Engine) SetScale(lane string, factor float64) error {
	i := laneNumber(lane)
	if i < 0 {
		return fmt.Errorf("demo: no lane %q: want %s or %s", lane, LanePrefill, LaneDecode)
	}
	if !(factor >= MinScale && factor <= MaxScale) { // also refuses NaN
		return fmt.Errorf("demo: scale %v for lane %s outside %v..%v", factor, lane, MinScale, MaxScale)
	}
	e.scale[i].Store(math.Float64bits(factor))
	return nil
}

// Scale returns the lane's duration factor (1 unless SetScale changed it;
// 0 for an unknown lane). Safe from any goroutine.
func (e *Engine) Scale(lane string) float64 {
	i := laneNumber(lane)
	if i < 0 {
		return 0
	}
	return math.Float64frombits(e.scale[i].Load())
}

func laneNumber(lane string) int {
	switch lane {
	case LanePrefill:
		return 0
	case LaneDecode:
		return 1
	}
	return -1
}

// lane runs lane n (0 prefill, 1 decode).
func (e *Engine) lane(n int, kernels []launch, replay bool) error {
	stream := e.gpu.Stream()
	idx := e.lanes[n]
	scale := math.Float64frombits(e.scale[n].Load())
	e.hub.LaneBegin(idx)
	// LaneEnd runs whatever happens: an open lane span would be counted as
	// in flight until the recorder is replaced.
	defer e.hub.LaneEnd(idx)
	for _, l := range kernels {
		d := time.Duration(float64(l.k.Duration) * scale)
		if e.jitter > 0 {
			d = time.Duration(float64(d) * (1 + e.jitter*(2*e.rng.Float64()-1)))
		}
		sp := e.hub.KernelBegin(l.handle, stream)
		err := e.gpu.Launch(l.k.Name, d)
		e.hub.KernelEnd(sp)
		if err != nil {
			return fmt.Errorf("demo: launching %s: %w", l.k.Name, err)
		}
	}
	if b := e.batchLaunch[n]; e.batch[n] > 0 && b.handle != 0 {
		sp := e.hub.KernelBegin(b.handle, stream)
		err := e.gpu.Launch(b.k.Name, time.Duration(float64(e.batch[n])*scale))
		e.hub.KernelEnd(sp)
		if err != nil {
			return fmt.Errorf("demo: launching %s: %w", b.k.Name, err)
		}
	}
	if replay {
		if e.hostGap > 0 {
			spin(e.hostGap)
		}
		if err := e.gpu.Replay(); err != nil {
			return fmt.Errorf("demo: replaying the graph: %w", err)
		}
	}
	return nil
}

// spin keeps the host busy for d, as work between launches does (a sleep
// would overshoot short gaps by the scheduler's tens of microseconds).
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

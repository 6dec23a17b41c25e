package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// --- the rig ----------------------------------------------------------------
//
// What every section measures with: one device's streams and the
// goroutines that launch on them (rig), the hubs installed on them, the
// timing of a step, and settling what is in flight.

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

// noStartTimes is the -no-start-times flag, for every hub newHub makes.
var noStartTimes bool

// startTimes is the start-time mode the -no-start-times flag asks for.
func startTimes() gpuspans.StartTimes {
	if noStartTimes {
		return gpuspans.StartTimesNever
	}
	return gpuspans.StartTimesAuto
}

// newHub makes a hub at LevelKernel, every step armed, with the kernels
// named, installed on device with lane stream lane.
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

// variant sums up a variant's repeats of timeSteps: best, median and all.
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

package main

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// --- safety -----------------------------------------------------------------

type safetyPhase struct {
	Name  string `json:"name"`
	What  string `json:"what"`
	Steps int    `json:"steps"`

	Captures           int    `json:"captures"`
	CapturesOK         int    `json:"captures_ok"`
	Invalidated901     int    `json:"invalidated_901"` // CaptureEnd failed with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: must be 0
	OtherCaptureErrors int    `json:"other_capture_errors"`
	LaunchErrorsInCapt int    `json:"launch_errors_in_capture"`
	FirstError         string `json:"first_error,omitempty"`
	GraphLaunches      int    `json:"graph_launches"`

	KernelBeginsInCapture int    `json:"kernel_begins_in_capture"` // KernelBegin calls on the capturing stream
	SpansOpenedInCapture  int    `json:"spans_opened_in_capture"`  // of those, spans opened: must be 0
	DroppedCapturing      uint64 `json:"dropped_capturing"`        // Dropped[DropCapturing]: must equal the calls

	EagerSpansLanded uint64 `json:"eager_kernel_spans_landed"` // kernel spans outside the captures: want Steps
	LaneSpansLanded  uint64 `json:"lane_spans_landed"`         // want Steps
	Errored          uint64 `json:"errored"`
	DroppedSlotBusy  uint64 `json:"dropped_slot_busy"`
	InFlightAtEnd    uint64 `json:"in_flight_at_end"`
	Harvests         uint64 `json:"harvests"`
	HarvestsSkipped  uint64 `json:"harvests_skipped"`
	HarvesterCalls   int64  `json:"harvester_calls"`            // by the second goroutine, harvested or skipped
	HarvesterInCapt  int64  `json:"harvester_calls_in_capture"` // of those, made while a capture was open
	OK               bool   `json:"ok"`
}

type safetyResult struct {
	Mode           string        `json:"mode"`
	Harvester      string        `json:"harvester"`
	HarvesterCalls int64         `json:"harvester_calls"`
	Phases         []safetyPhase `json:"phases"`
	// Over the phases that follow the documented rules (the first two).
	OK        bool `json:"ok"`
	Truncated bool `json:"truncated,omitempty"`
}

// safetyRun is what the safety section's phases share: one hub on device
// 0, its kernel stream k, and the counts of the goroutine that harvests
// throughout.
type safetyRun struct {
	g gpu
	r *rig
	h *gpuspans.Hub
	k backend.Stream

	// The harvester counts its calls, and those made entirely while a
	// capture was open (inCapture is set around each capture).
	harvesterCalls, callsInCapture int64
	inCapture                      int32

	// capture_once_replay's graph, destroyed after its phase.
	once     cudakit.Graph
	onceExec cudakit.GraphExec
}

// safetyCase is one phase of the safety section: step runs each of its
// steps; judged says whether the phase counts towards the section's ok.
type safetyCase struct {
	name, what string
	steps      int
	judged     bool
	step       func(s *safetyRun, p *safetyPhase, step int) error
}

func safetyCases(e *env) []safetyCase {
	return []safetyCase{
		{"capture_per_step", "every step: eager kernel span, then a capture of 8 kernels (KernelBegin tried on each, the " +
			"capture held open >= 30 us), instantiate, launch; the decode lane span on the lane stream is open across the capture",
			e.scale(1000, 20), true, (*safetyRun).capturePerStep},
		{"capture_once_replay", "one capture of 8 kernels before the loop (KernelBegin tried on each); every step: eager kernel span, " +
			"graph launch, lane span", e.scale(1000, 20), true, (*safetyRun).captureOnceReplay},
		{"lane_end_inside_capture", "as capture_per_step, but the capturing thread ends the lane span (an event record " +
			"on the uncaptured lane stream) and launches on the lane stream inside its own GLOBAL capture: informational",
			e.scale(200, 10), false, (*safetyRun).laneEndInsideCapture},
	}
}

func runSafety(e *env) (interface{}, string, error) {
	g, r, h, release, err := e.openHub(gpuspans.DefaultSlots, "prefill", "decode")
	if err != nil {
		return nil, "", err
	}
	defer release()
	s := &safetyRun{g: g, r: r, h: h, k: r.streams[0]}
	h.BeginStep() // opens the pool
	settle(h, r)

	// A GLOBAL capture must end on the thread that began it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	res := &safetyResult{
		Mode:      "CU_STREAM_CAPTURE_MODE_GLOBAL on the kernel stream, from the loop's (locked) thread",
		Harvester: "a second goroutine calls Hub.Harvest in a tight loop during every phase",
	}
	stopHarvester := s.harvestThroughout()
	defer stopHarvester()
	res.OK = true
	for _, c := range safetyCases(e) {
		if e.late() {
			res.Truncated = true
			res.OK = false
			break
		}
		p, err := s.phase(c)
		res.Phases = append(res.Phases, p)
		if err != nil {
			return res, "", err
		}
		if c.judged {
			res.OK = res.OK && p.OK
		}
	}
	stopHarvester()
	res.HarvesterCalls = atomic.LoadInt64(&s.harvesterCalls)
	return res, "", nil
}

// harvestThroughout starts the second goroutine, which calls Hub.Harvest
// in a tight loop until stop, which may be called more than once.
func (s *safetyRun) harvestThroughout() (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			was := atomic.LoadInt32(&s.inCapture)
			s.h.Harvest()
			atomic.AddInt64(&s.harvesterCalls, 1)
			if was == 1 && atomic.LoadInt32(&s.inCapture) == 1 {
				atomic.AddInt64(&s.callsInCapture, 1)
			}
		}
	}()
	return func() {
		if quit != nil {
			close(quit)
			<-done
			quit = nil
		}
	}
}

// phase runs c's steps, then sums up what the hub and the harvester
// counted meanwhile.
func (s *safetyRun) phase(c safetyCase) (safetyPhase, error) {
	p := safetyPhase{Name: c.name, What: c.what, Steps: c.steps}
	before := settle(s.h, s.r)
	calls0, inCapt0 := atomic.LoadInt64(&s.harvesterCalls), atomic.LoadInt64(&s.callsInCapture)
	for i := 0; i < c.steps; i++ {
		if err := c.step(s, &p, i); err != nil {
			return p, fmt.Errorf("%s step %d: %w", c.name, i, err)
		}
	}
	after := settle(s.h, s.r)
	p.HarvesterCalls = atomic.LoadInt64(&s.harvesterCalls) - calls0
	p.HarvesterInCapt = atomic.LoadInt64(&s.callsInCapture) - inCapt0
	if s.onceExec != 0 {
		_ = s.g.DestroyGraphExec(s.onceExec)
		_ = s.g.DestroyGraph(s.once)
		s.once, s.onceExec = 0, 0
	}
	c0, c1 := before.Counters, after.Counters
	p.DroppedCapturing = c1.Dropped[gpuspans.DropCapturing] - c0.Dropped[gpuspans.DropCapturing]
	p.DroppedSlotBusy = c1.Dropped[gpuspans.DropSlotBusy] - c0.Dropped[gpuspans.DropSlotBusy]
	p.Errored = c1.Errored - c0.Errored
	p.InFlightAtEnd = c1.InFlight
	p.Harvests = c1.Harvests - c0.Harvests
	p.HarvestsSkipped = c1.HarvestsSkipped - c0.HarvestsSkipped
	p.EagerSpansLanded = aggCount(after.Kernels, "empty") - aggCount(before.Kernels, "empty")
	p.LaneSpansLanded = aggCount(after.Lanes, "decode") - aggCount(before.Lanes, "decode")
	p.OK = p.Invalidated901 == 0 && p.OtherCaptureErrors == 0 && p.SpansOpenedInCapture == 0 &&
		p.DroppedCapturing == uint64(p.KernelBeginsInCapture) && p.Errored == 0 &&
		p.EagerSpansLanded == uint64(p.Steps) && p.LaneSpansLanded == uint64(p.Steps)
	return p, nil
}

// capturePerStep: an eager step, then a capture launched and destroyed,
// with the lane span open across it.
func (s *safetyRun) capturePerStep(p *safetyPhase, step int) error {
	if err := s.eager(p); err != nil {
		return err
	}
	if graph := s.capture(p, nil); graph != 0 {
		if err := s.launch(p, graph, true); err != nil {
			return err
		}
	}
	s.h.LaneEnd(1)
	return nil
}

// captureOnceReplay: one capture at the first step; every step an eager
// step and a replay of that graph.
func (s *safetyRun) captureOnceReplay(p *safetyPhase, step int) error {
	if step == 0 {
		graph := s.capture(p, nil)
		if graph == 0 {
			return fmt.Errorf("the one capture failed: %s", p.FirstError)
		}
		x, err := s.g.Instantiate(graph)
		if err != nil {
			return err
		}
		s.once, s.onceExec = graph, x
	}
	if err := s.eager(p); err != nil {
		return err
	}
	if err := s.g.Launch(s.onceExec, s.k); err != nil {
		return err
	}
	p.GraphLaunches++
	s.h.LaneEnd(1)
	return nil
}

// laneEndInsideCapture: as capturePerStep, but the lane span ends, and the
// lane stream gets a launch, inside the capture.
func (s *safetyRun) laneEndInsideCapture(p *safetyPhase, step int) error {
	if err := s.eager(p); err != nil {
		return err
	}
	graph := s.capture(p, func() {
		s.h.LaneEnd(1)
		if err := s.g.Empty(s.r.lane); err != nil {
			p.LaunchErrorsInCapt++
		}
	})
	if graph != 0 {
		return s.launch(p, graph, true)
	}
	return nil
}

const (
	capturedKernels = 8                     // per capture
	captureOpen     = 30 * time.Microsecond // the least a capture stays open
)

// capture captures capturedKernels empty kernels on k, trying a kernel
// span around each, then runs inside, and returns the graph (0 when the
// capture failed, counted).
func (s *safetyRun) capture(p *safetyPhase, inside func()) cudakit.Graph {
	g, h, k := s.g, s.h, s.k
	p.Captures++
	if err := g.CaptureBegin(k, cudakit.CaptureGlobal); err != nil {
		p.OtherCaptureErrors++
		if p.FirstError == "" {
			p.FirstError = "CaptureBegin: " + err.Error()
		}
		return 0
	}
	atomic.StoreInt32(&s.inCapture, 1)
	defer atomic.StoreInt32(&s.inCapture, 0)
	t0 := time.Now()
	for i := 0; i < capturedKernels; i++ {
		p.KernelBeginsInCapture++
		sp := h.KernelBegin(kCaptured, k)
		if sp != (gpuspans.KernelSpan{}) {
			p.SpansOpenedInCapture++
		}
		if err := g.Empty(k); err != nil {
			p.LaunchErrorsInCapt++
		}
		h.KernelEnd(sp)
	}
	if inside != nil {
		inside()
	}
	// Hold the capture open a while, as capturing a model's step
	// would, so the harvester's calls land inside it.
	for time.Since(t0) < captureOpen {
	}
	graph, err := g.CaptureEnd(k)
	if err != nil {
		if cudaCode(err) == 901 {
			p.Invalidated901++
		} else {
			p.OtherCaptureErrors++
		}
		if p.FirstError == "" {
			p.FirstError = "CaptureEnd: " + err.Error()
		}
		return 0
	}
	p.CapturesOK++
	return graph
}

// launch instantiates graph and launches it on k; with destroy, both are
// freed (by the driver once the launch completes).
func (s *safetyRun) launch(p *safetyPhase, graph cudakit.Graph, destroy bool) error {
	x, err := s.g.Instantiate(graph)
	if err != nil {
		return err
	}
	if err := s.g.Launch(x, s.k); err != nil {
		return err
	}
	p.GraphLaunches++
	if destroy {
		if err := s.g.DestroyGraphExec(x); err != nil {
			return err
		}
		return s.g.DestroyGraph(graph)
	}
	return nil
}

// eager begins a step and the decode lane span (left open), launches on
// the lane stream, and puts a kernel span around an empty kernel on k.
func (s *safetyRun) eager(p *safetyPhase) error {
	h := s.h
	h.BeginStep()
	h.LaneBegin(1)
	if err := s.g.Empty(s.r.lane); err != nil {
		return err
	}
	sp := h.KernelBegin(kEmpty, s.k)
	if err := s.g.Empty(s.k); err != nil {
		return err
	}
	h.KernelEnd(sp)
	return nil
}

// aggCount sums the counts of the aggregates called name, over devices.
func aggCount(aggs []gpuspans.Aggregate, name string) uint64 {
	var n uint64
	for _, a := range aggs {
		if a.Name == name {
			n += a.Count
		}
	}
	return n
}

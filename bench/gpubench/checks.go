package main

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// --- accuracy ---------------------------------------------------------------

type accCase struct {
	SpinNs  int64  `json:"spin_ns"`
	CTAs    int    `json:"ctas"`  // CTAs of the spin kernel (one thread each)
	Queue   string `json:"queue"` // busy: a 200 us spin is queued ahead of the span; idle: nothing is
	N       int    `json:"n"`
	Missing int    `json:"missing"` // samples whose span did not land

	KernelNsP50 float64 `json:"kernel_ns_p50"` // the kernel's own %globaltimer interval (earliest first to latest last reading)
	SpanNsP50   float64 `json:"span_ns_p50"`   // the hub's kernel span: corrected by the pool's event offset
	ErrNsP50    float64 `json:"err_ns_p50"`    // span - kernel, signed
	ErrNsMin    float64 `json:"err_ns_min"`
	ErrNsMax    float64 `json:"err_ns_max"`
	AbsNsMax    float64 `json:"abs_ns_max"`     // max |span - kernel|
	RawAbsNsMax float64 `json:"raw_abs_ns_max"` // max |span + offset - kernel|: what an uncorrected span would read

	Within500ns bool `json:"within_500ns"` // max |span - kernel| <= 0.5 us

	KernelNs []int64 `json:"kernel_ns"`
	SpanNs   []int64 `json:"span_ns"`
}

type accuracyResult struct {
	Method string `json:"method"`
	// The event offset the pool measured when it opened (gs_pool_event_offset_ns),
	// subtracted from every kernel span by the hub.
	PoolOffsetNs int64     `json:"pool_offset_ns"`
	Cases        []accCase `json:"cases"`
	// Over the busy-queue cases from 10 us to 10 ms, wide kernels included.
	Meets500ns bool `json:"meets_500ns_10us_to_10ms"`
	Truncated  bool `json:"truncated,omitempty"`
}

// wideCTAs is the CTA count of the wide spin kernel: twice an H200's 132 SMs.
const wideCTAs = 264

func runAccuracy(e *env) (interface{}, string, error) {
	g, r, h, release, err := e.openHub(256)
	if err != nil {
		return nil, "", err
	}
	defer release()
	timers := map[int]timer{}
	for _, ctas := range []int{1, wideCTAs} {
		t, err := g.NewGridTimer(ctas)
		if err != nil {
			return nil, "", err
		}
		defer t.Free()
		timers[ctas] = t
	}
	k := r.streams[0]
	res := &accuracyResult{Method: "per sample: BeginStep; [busy: spin 200 us, no span]; KernelBegin; spin d on 1 or " +
		fmt.Sprint(wideCTAs) + " CTAs, each writing its first and last %globaltimer; KernelEnd; sync; harvest; error = " +
		"span - kernel, where span is the hub's kernel span (the pool's measured event offset subtracted, the default) " +
		"and kernel the earliest first to the latest last reading"}
	var lastSeq uint64
	var spans []gpuspans.Span
	sample := func(d time.Duration, ctas int, busy bool) (kernel, span int64, ok bool, err error) {
		h.BeginStep()
		if busy {
			if err := g.Spin(k, 200*time.Microsecond, nil); err != nil {
				return 0, 0, false, err
			}
		}
		sp := h.KernelBegin(kSpin, k)
		if sp == (gpuspans.KernelSpan{}) {
			return 0, 0, false, fmt.Errorf("no kernel span opened: %+v", h.Snapshot().Counters)
		}
		t := timers[ctas]
		if ctas == 1 {
			err = g.Spin(k, d, t)
		} else {
			err = g.SpinGrid(k, d, t)
		}
		h.KernelEnd(sp)
		if err != nil {
			return 0, 0, false, err
		}
		if err := g.Sync(k); err != nil {
			return 0, 0, false, err
		}
		start, end, err := t.Read()
		if err != nil {
			return 0, 0, false, err
		}
		h.Harvest()
		spans = h.RecentSpans(lastSeq, spans[:0])
		for _, s := range spans {
			lastSeq = s.Seq
			if s.Kind == gpuspans.KindKernel && s.Name == "spin" {
				span, ok = s.DurationNs, true
			}
		}
		return int64(end - start), span, ok, nil
	}
	// Warm up: the pool opens and its calibration lands, the kernels compile.
	for i := 0; i < 3; i++ {
		if _, _, _, err := sample(10*time.Microsecond, 1, true); err != nil {
			return nil, "", err
		}
	}
	st := h.Snapshot()
	if len(st.Devices) == 0 || st.Devices[0].EventOffset < 0 {
		return res, "", fmt.Errorf("the pool measured no event offset: %+v", st.Devices)
	}
	res.PoolOffsetNs = int64(st.Devices[0].EventOffset)
	many, few := e.scale(50, 3), e.scale(10, 2)
	plan := []struct {
		d    time.Duration
		ctas int
		busy bool
		n    int
	}{
		{0, 1, true, many}, {10 * time.Microsecond, 1, true, many}, {100 * time.Microsecond, 1, true, many},
		{time.Millisecond, 1, true, many}, {10 * time.Millisecond, 1, true, few},
		{10 * time.Microsecond, wideCTAs, true, many}, {time.Millisecond, wideCTAs, true, many},
		{0, 1, false, e.scale(20, 2)}, {100 * time.Microsecond, 1, false, e.scale(20, 2)},
	}
	res.Meets500ns = true
	judged := 0
	for _, p := range plan {
		if e.late() {
			res.Truncated = true
			break
		}
		c := accCase{SpinNs: int64(p.d), CTAs: p.ctas, Queue: "idle", N: p.n}
		if p.busy {
			c.Queue = "busy"
		}
		var kernels, spansNs, errs, abs, raw []float64
		for i := 0; i < p.n; i++ {
			kernel, span, ok, err := sample(p.d, p.ctas, p.busy)
			if err != nil {
				return res, "", fmt.Errorf("spin %v on %d CTAs: %w", p.d, p.ctas, err)
			}
			if !ok {
				c.Missing++
				continue
			}
			c.KernelNs = append(c.KernelNs, kernel)
			c.SpanNs = append(c.SpanNs, span)
			kernels = append(kernels, float64(kernel))
			spansNs = append(spansNs, float64(span))
			x := float64(span - kernel)
			errs = append(errs, x)
			abs = append(abs, absF(x))
			raw = append(raw, absF(x+float64(res.PoolOffsetNs)))
		}
		if len(errs) == 0 {
			return res, "", fmt.Errorf("spin %v on %d CTAs: no span landed", p.d, p.ctas)
		}
		c.KernelNsP50, c.SpanNsP50 = median(kernels), median(spansNs)
		c.ErrNsP50, c.ErrNsMin, c.ErrNsMax = median(errs), minOf(errs), maxOf(errs)
		c.AbsNsMax, c.RawAbsNsMax = maxOf(abs), maxOf(raw)
		c.Within500ns = c.AbsNsMax <= 500
		if p.busy && p.d >= 10*time.Microsecond {
			judged++
			res.Meets500ns = res.Meets500ns && c.Within500ns
		}
		res.Cases = append(res.Cases, c)
	}
	if judged == 0 {
		res.Meets500ns = false
	}
	return res, "", nil
}

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
	once     cudatest.Graph
	onceExec cudatest.GraphExec
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
func (s *safetyRun) capture(p *safetyPhase, inside func()) cudatest.Graph {
	g, h, k := s.g, s.h, s.k
	p.Captures++
	if err := g.CaptureBegin(k, cudatest.CaptureGlobal); err != nil {
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
func (s *safetyRun) launch(p *safetyPhase, graph cudatest.Graph, destroy bool) error {
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

// --- multigpu ---------------------------------------------------------------

type multiDevice struct {
	Device        int     `json:"device"`
	WantNs        float64 `json:"want_ns"` // the device's spin length
	KernelSpans   uint64  `json:"kernel_spans"`
	MinNs         float64 `json:"min_ns"`
	P50Ns         float64 `json:"p50_ns"`
	MaxNs         float64 `json:"max_ns"`
	LaneSpans     uint64  `json:"lane_spans"`
	Misattributed int     `json:"misattributed"` // recent kernel spans closer to another device's length
	OK            bool    `json:"ok"`
}

type multiResult struct {
	Devices   int           `json:"devices"`
	Steps     int           `json:"steps"`
	Method    string        `json:"method"`
	PerDevice []multiDevice `json:"per_device"`
	OK        bool          `json:"ok"`
}

func runMultiGPU(e *env) (interface{}, string, error) {
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, "", err
	}
	if n < 2 {
		return nil, fmt.Sprintf("%d GPU", n), nil
	}
	if n > 8 {
		n = 8
	}
	steps := e.scale(50, 5)
	res := &multiResult{Devices: n, Steps: steps, Method: "one hub, a pool and a lane stream per device; per step: BeginStep, " +
		"LaneBegin, on each device a 20 us lane spin and a kernel span around a spin of (device+1) x 100 us, LaneEnd"}
	h, err := gpuspans.New(gpuspans.Options{Lanes: []string{"decode"}, Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Slots: 256, Logf: logf})
	if err != nil {
		return nil, "", err
	}
	if err := h.RegisterKernel(kSpin, "spin"); err != nil {
		return nil, "", err
	}
	var gpus []gpu
	var rigs []*rig
	defer func() {
		for d := range rigs {
			h.Uninstall(d)
		}
		settle(h, rigs...)
		for _, r := range rigs {
			r.close()
		}
		for _, g := range gpus {
			_ = g.Close()
		}
	}()
	want := func(d int) time.Duration { return time.Duration(d+1) * 100 * time.Microsecond }
	for d := 0; d < n; d++ {
		g, err := e.newGPU(d)
		if err != nil {
			return nil, "", fmt.Errorf("device %d: %w", d, err)
		}
		gpus = append(gpus, g)
		r, err := newRig(g, 1)
		if err != nil {
			return nil, "", fmt.Errorf("device %d: %w", d, err)
		}
		rigs = append(rigs, r)
		if err := h.Install(d, r.lane, cuda.Opener(d)); err != nil {
			return nil, "", err
		}
	}
	for step := 0; step < steps; step++ {
		h.BeginStep()
		h.LaneBegin(0)
		for d, r := range rigs {
			if err := r.g.Spin(r.lane, 20*time.Microsecond, nil); err != nil {
				return nil, "", fmt.Errorf("device %d: %w", d, err)
			}
			sp := h.Device(d).KernelBegin(kSpin, r.streams[0])
			if err := r.g.Spin(r.streams[0], want(d), nil); err != nil {
				return nil, "", fmt.Errorf("device %d: %w", d, err)
			}
			h.KernelEnd(sp)
		}
		h.LaneEnd(0)
	}
	s := settle(h, rigs...)
	recent := h.RecentSpans(0, nil)
	res.OK = true
	for d := 0; d < n; d++ {
		md := multiDevice{Device: d, WantNs: ns(want(d))}
		for _, a := range s.Kernels {
			if a.Device == d && a.Name == "spin" {
				md.KernelSpans, md.MinNs, md.P50Ns, md.MaxNs = a.Count, ns(a.Min), ns(a.Quantile(0.5)), ns(a.Max)
			}
		}
		for _, a := range s.Lanes {
			if a.Device == d {
				md.LaneSpans += a.Count
			}
		}
		for _, sp := range recent {
			if sp.Kind != gpuspans.KindKernel || sp.Device != d {
				continue
			}
			nearest, dist := 0, -1.0
			for o := 0; o < n; o++ {
				if x := absF(float64(sp.DurationNs) - ns(want(o))); dist < 0 || x < dist {
					nearest, dist = o, x
				}
			}
			if nearest != d {
				md.Misattributed++
			}
		}
		md.OK = md.KernelSpans == uint64(steps) && md.LaneSpans == uint64(steps) && md.MinNs >= md.WantNs &&
			md.P50Ns <= md.WantNs+50000 && md.Misattributed == 0
		res.OK = res.OK && md.OK
		res.PerDevice = append(res.PerDevice, md)
	}
	return res, "", nil
}

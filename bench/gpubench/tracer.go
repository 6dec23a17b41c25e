package main

import (
	"fmt"
	"sort"
	"syscall"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// --- tracer -------------------------------------------------------------------
//
// Kernel spans from CUPTI against event pairs, in one process:
//   - host time per kernel on armed steps (every step armed) in a free-running
//     loop of empty launches: launches alone, event pairs (record and
//     harvest), the tracer; the serving thread's time and the process's CPU
//     time (CUPTI parses records on its own threads);
//   - unarmed steps (1 in 16 armed) against level Off;
//   - launches alone before CUPTI is first touched, after collection was on
//     and off, and after the tracer closed (issue: "launches stayed ~0.5 us
//     slower after collection was switched off");
//   - CUPTI's duration against the kernel's own %globaltimer, 1 and 264 CTAs,
//     idle and busy stream.

type tracerRow struct {
	Variant     string    `json:"variant"`
	NsPerKernel float64   `json:"ns_per_kernel_median"` // serving thread, wall
	CPUPerKern  float64   `json:"cpu_ns_per_kernel_median"`
	AddedNs     float64   `json:"added_ns_per_kernel"` // over launches alone, same run
	AddedCPU    float64   `json:"added_cpu_ns_per_kernel"`
	Reps        []float64 `json:"ns_per_kernel_reps"`
	Landed      uint64    `json:"kernel_spans_landed"`
}

type tracerAccuracyRow struct {
	CTAs   int     `json:"ctas"`
	SpinNs int64   `json:"spin_ns"`
	Stream string  `json:"stream"` // idle or busy
	N      int     `json:"n"`
	P1     float64 `json:"extra_ns_p1"` // CUPTI duration - %globaltimer interval
	P50    float64 `json:"extra_ns_p50"`
	P99    float64 `json:"extra_ns_p99"`
	Spread float64 `json:"spread_ns_p99_p1"`
}

type tracerResult struct {
	Tracing       bool                `json:"tracing"`
	Error         string              `json:"error,omitempty"`
	Kernels       int                 `json:"kernels_per_step"`
	Armed         []tracerRow         `json:"armed_every_step"`
	RatioWall     float64             `json:"cupti_over_events_added_wall"`
	RatioCPU      float64             `json:"cupti_over_events_added_cpu"`
	UnarmedStepNs map[string]float64  `json:"unarmed_step_ns_median"` // none, off, kernel_unarmed (every 16)
	LaunchNs      map[string]float64  `json:"launch_ns_median"`       // before CUPTI, after on/off, after close, after level off
	Accuracy      []tracerAccuracyRow `json:"accuracy"`
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// tracerRun is what the tracer section's cases share: the rig's kernel
// stream, and two hubs at Kernel on device 0, one timing kernels with
// event pairs and one with CUPTI.
type tracerRun struct {
	e              *env
	g              gpu
	r              *rig
	k              backend.Stream
	steps          int // per repeat
	kernels        int // per step
	events, traced *gpuspans.Hub
}

// tracerCase is one part of the tracer section; it fills in its part of
// the result.
type tracerCase struct {
	name string
	run  func(t *tracerRun, res *tracerResult) error
}

var tracerCases = []tracerCase{
	{"armed", (*tracerRun).armed},
	{"unarmed", (*tracerRun).unarmed},
	{"accuracy", (*tracerRun).accuracy},
	{"after_close", (*tracerRun).afterClose},
}

func runTracer(e *env) (interface{}, string, error) {
	if err := e.setup(); err != nil {
		return nil, "", err
	}
	if e.fake {
		cudatest.UseFakeCUPTI() // paths only: the fake GPU's launches make no records
	}
	g, r, release, err := e.openRig(1)
	if err != nil {
		return nil, "", err
	}
	defer release()
	res := &tracerResult{Kernels: 64, UnarmedStepNs: map[string]float64{}, LaunchNs: map[string]float64{}}
	t := &tracerRun{e: e, g: g, r: r, k: r.streams[0], steps: e.scale(200, 5), kernels: res.Kernels}
	t.launches(256) // warm
	res.LaunchNs["before_cupti"] = t.launchReps()

	if t.events, err = hubWith(gpuspans.Options{Level: gpuspans.LevelKernel}, 0, r.lane, 4096); err != nil {
		return nil, "", err
	}
	defer closeHub(t.events, r)
	if t.traced, err = hubWith(gpuspans.Options{Level: gpuspans.LevelKernel,
		KernelTiming: gpuspans.KernelTimingCUPTI, KernelTracer: cuda.TracerOpener("")}, 0, r.lane, 4096); err != nil {
		return nil, "", err
	}
	defer closeHub(t.traced, r)
	t.traced.BeginStep() // opens the pool and the tracer
	if kt := t.traced.Snapshot().KernelTiming; !kt.Tracing {
		res.Error = fmt.Sprint(kt.Err)
		return res, "", nil
	}
	res.Tracing = true
	for _, c := range tracerCases {
		if err := c.run(t, res); err != nil {
			return res, "", err
		}
	}
	return res, "", r.firstErr()
}

// launches times n launches alone, in ns per launch, synced after.
func (t *tracerRun) launches(n int) float64 {
	t0 := time.Now()
	t.r.launches(t.k, n)
	d := ns(time.Since(t0)) / float64(n)
	_ = t.r.syncAll()
	return d
}

// launchReps is the median of repeated launches.
func (t *tracerRun) launchReps() float64 {
	var xs []float64
	for i := 0; i < t.e.scale(9, 2); i++ {
		xs = append(xs, t.launches(t.e.scale(4096, 16)))
	}
	return median(xs)
}

// step runs one engine step of t.kernels launches on h (nil: none).
func (t *tracerRun) step(h *gpuspans.Hub) {
	if h != nil {
		h.BeginStep()
		h.LaneBegin(0)
	}
	for j := 0; j < t.kernels; j++ {
		var sp gpuspans.KernelSpan
		if h != nil {
			sp = h.KernelBegin(kEmpty, t.k)
		}
		t.r.fail("launch", t.g.Empty(t.k))
		if h != nil {
			h.KernelEnd(sp)
		}
	}
	if h != nil {
		h.LaneEnd(0)
	}
}

// disarm turns collection off while another variant runs: a step that is
// not armed. (Leaving Kernel would close the tracer and detach CUPTI.)
func disarm(h *gpuspans.Hub) {
	if err := h.SetKernelSpanEvery(gpuspans.MaxKernelSpanEvery); err != nil {
		panic(err) // the bound itself: cannot fail
	}
	h.BeginStep()
}

// armed times every step armed: launches alone, event pairs and CUPTI,
// interleaved; then launches alone once collection was on and off.
func (t *tracerRun) armed(res *tracerResult) error {
	type armedVariant struct {
		name      string
		h         *gpuspans.Hub
		wall, cpu []float64
	}
	variants := []*armedVariant{{name: "none"}, {name: "events", h: t.events}, {name: "cupti", h: t.traced}}
	for _, v := range variants {
		if v.h != nil {
			disarm(v.h)
		}
	}
	for rep := 0; rep < t.e.scale(7, 2) && (rep == 0 || !t.e.late()); rep++ {
		for _, v := range variants {
			if v.h != nil {
				_ = v.h.SetKernelSpanEvery(1)
			}
			c0, t0 := cpuNow(), time.Now()
			for i := 0; i < t.steps; i++ {
				t.step(v.h)
			}
			wall, cpu := ns(time.Since(t0)), ns(cpuNow()-c0)
			if v.h != nil {
				disarm(v.h)
			}
			n := float64(t.steps * t.kernels)
			v.wall, v.cpu = append(v.wall, wall/n), append(v.cpu, cpu/n)
			_ = t.r.syncAll()
			time.Sleep(3 * cuda.TracerFlushPeriodMs * time.Millisecond) // records land in the next rep's harvests
		}
	}
	for _, v := range variants {
		row := tracerRow{Variant: v.name, NsPerKernel: median(v.wall), CPUPerKern: median(v.cpu), Reps: v.wall}
		row.AddedNs = row.NsPerKernel - median(variants[0].wall)
		row.AddedCPU = row.CPUPerKern - median(variants[0].cpu)
		if v.h != nil {
			v.h.Harvest()
			for _, a := range v.h.Snapshot().Kernels {
				row.Landed += a.Count
			}
		}
		res.Armed = append(res.Armed, row)
	}
	res.RatioWall = div(res.Armed[2].AddedNs, res.Armed[1].AddedNs)
	res.RatioCPU = div(res.Armed[2].AddedCPU, res.Armed[1].AddedCPU)
	res.LaunchNs["after_cupti_on_off"] = t.launchReps()
	return nil
}

// unarmed times steps one by one with 1 in 16 armed, keeping the unarmed
// ones: launches alone, level Off, level Kernel. Off closes the tracer
// (CUPTI stays attached); Kernel reopens it at its first step. It leaves
// the traced hub at Off.
func (t *tracerRun) unarmed(res *tracerResult) error {
	unarmed := map[string][]float64{}
	for rep := 0; rep < t.e.scale(5, 1); rep++ {
		for _, name := range []string{"none", "off", "kernel_unarmed"} {
			var h *gpuspans.Hub
			if name != "none" {
				h = t.traced
				lvl := gpuspans.LevelOff
				if name == "kernel_unarmed" {
					lvl = gpuspans.LevelKernel
				}
				_ = h.SetLevel(lvl)
				_ = h.SetKernelSpanEvery(16)
			}
			for i := 0; i < t.steps; i++ {
				t0 := time.Now()
				t.step(h)
				d := ns(time.Since(t0))
				if h == nil || h.Level() != gpuspans.LevelKernel || h.Step()%16 != 0 {
					unarmed[name] = append(unarmed[name], d)
				}
			}
			_ = t.r.syncAll()
		}
	}
	_ = t.traced.SetLevel(gpuspans.LevelOff)
	for name, xs := range unarmed {
		res.UnarmedStepNs[name] = median(xs)
	}
	return nil
}

// accuracy is tracerAccuracy, on a GPU: the fake GPU's kernels make no
// records.
func (t *tracerRun) accuracy(res *tracerResult) error {
	if t.e.fake {
		return nil
	}
	var err error
	res.Accuracy, err = tracerAccuracy(t.e, t.g, t.r, t.traced)
	return err
}

// afterClose times launches alone once the tracer closed, by the kernel
// timing and by the level; CUPTI stays attached both times.
func (t *tracerRun) afterClose(res *tracerResult) error {
	traced := t.traced
	_ = traced.SetKernelTiming(gpuspans.KernelTimingEvents) // closes the tracer: CUPTI stays attached
	res.LaunchNs["after_close"] = t.launchReps()
	_ = traced.SetKernelTiming(gpuspans.KernelTimingCUPTI)
	_ = traced.SetLevel(gpuspans.LevelKernel)
	_ = traced.SetKernelSpanEvery(1)
	traced.BeginStep() // reopens, collection on
	t.r.fail("launch", t.g.Empty(t.k))
	_ = traced.SetLevel(gpuspans.LevelOff) // closes the tracer; CUPTI stays attached
	res.LaunchNs["after_level_off"] = t.launchReps()
	return nil
}

// tracerAccuracy compares CUPTI's duration with the kernel's own
// %globaltimer readings.
func tracerAccuracy(e *env, g gpu, r *rig, h *gpuspans.Hub) ([]tracerAccuracyRow, error) {
	k := r.streams[0]
	// Everything earlier lands first, so only the probes' spans follow seq.
	_ = r.syncAll()
	time.Sleep(3 * cuda.TracerFlushPeriodMs * time.Millisecond)
	h.Harvest()
	_ = h.SetLevel(gpuspans.LevelKernel)
	_ = h.SetKernelSpanEvery(1)
	seq := uint64(0)
	for _, sp := range h.RecentSpans(0, nil) {
		seq = max(seq, sp.Seq)
	}
	type probe struct {
		row   int
		truth int64
	}
	var rows []tracerAccuracyRow
	var probes []probe
	reps := e.scale(40, 2)
	for _, ctas := range []int{1, 264} {
		for _, busy := range []bool{false, true} {
			for _, d := range []time.Duration{0, 100 * time.Microsecond, time.Millisecond} {
				tm, err := g.NewGridTimer(ctas)
				if err != nil {
					return nil, err
				}
				stream := "idle"
				if busy {
					stream = "busy"
				}
				rows = append(rows, tracerAccuracyRow{CTAs: ctas, SpinNs: int64(d), Stream: stream})
				for i := 0; i < reps; i++ {
					h.BeginStep()
					if busy {
						r.fail("spin", g.Spin(k, 200*time.Microsecond, nil))
					}
					if ctas == 1 {
						err = g.Spin(k, d, tm)
					} else {
						err = g.SpinGrid(k, d, tm)
					}
					if err != nil {
						return nil, err
					}
					if err := g.Sync(k); err != nil {
						return nil, err
					}
					a, b, err := tm.Read()
					if err != nil {
						return nil, err
					}
					probes = append(probes, probe{len(rows) - 1, int64(b - a)})
				}
				_ = tm.Free()
			}
		}
	}
	_ = h.SetLevel(gpuspans.LevelOff)
	time.Sleep(3 * cuda.TracerFlushPeriodMs * time.Millisecond)
	h.Harvest()
	var spans []gpuspans.Span
	for _, sp := range h.RecentSpans(seq, nil) {
		if sp.Kind == gpuspans.KindKernel {
			spans = append(spans, sp)
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].StartNs < spans[j].StartNs })
	// Busy rows have two kernels per probe: the 200 us filler, then the probe.
	var timed []gpuspans.Span
	want := 0
	for _, p := range probes {
		if rows[p.row].Stream == "busy" {
			want += 2
		} else {
			want++
		}
	}
	if len(spans) != want {
		return rows, fmt.Errorf("accuracy: %d kernel spans for %d kernels", len(spans), want)
	}
	i := 0
	for _, p := range probes {
		if rows[p.row].Stream == "busy" {
			i++ // the filler
		}
		timed = append(timed, spans[i])
		i++
	}
	extra := make([][]float64, len(rows))
	for j, p := range probes {
		extra[p.row] = append(extra[p.row], float64(timed[j].DurationNs-p.truth))
	}
	for j := range rows {
		xs := extra[j]
		rows[j].N = len(xs)
		rows[j].P1, rows[j].P50, rows[j].P99 = quantile(xs, 0.01), quantile(xs, 0.5), quantile(xs, 0.99)
		rows[j].Spread = rows[j].P99 - rows[j].P1
	}
	return rows, nil
}

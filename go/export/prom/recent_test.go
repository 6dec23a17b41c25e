package prom

import (
	"math"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// recentHub is a hub on one simulated GPU whose clock the test drives.
type recentHub struct {
	h     *gpuspans.Hub
	gpu   *sim.GPU
	clock *sim.Clock
}

func newRecentHub(t *testing.T) *recentHub {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, Now: clock.Now, Logf: func(string, ...interface{}) {}})
	if err != nil {
		t.Fatal(err)
	}
	gpu := sim.New(sim.Options{Now: clock.Now})
	if err := h.Install(0, stream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	return &recentHub{h, gpu, clock}
}

// steps runs n steps 10 ms apart, each a decode span of d(i), harvested.
func (r *recentHub) steps(n int, d func(i int) time.Duration) {
	for i := 0; i < n; i++ {
		r.h.BeginStep()
		r.h.LaneBegin(1)
		r.gpu.Launch(stream, d(i))
		r.h.LaneEnd(1)
		r.clock.Advance(10 * time.Millisecond)
		r.h.Harvest()
	}
}

// recent gathers the decode lane's recent quantiles on device 0: quantile
// label ("0.99") -> seconds.
func recent(t *testing.T, h *gpuspans.Hub) map[string]float64 {
	t.Helper()
	return recentAll(t, h)["0/decode"]
}

func qlabel(q float64) string { return strconv.FormatFloat(q, 'g', -1, 64) }

// exactQuantile is the q-quantile of ds by rank, as the windows define it.
func exactQuantile(ds []time.Duration, q float64) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(math.Ceil(q*float64(len(s))))-1].Seconds()
}

// The last minute's quantiles of a lane, within 1.1% of the spans' own,
// and only the last minute's: a regression shows in full within it.
func TestRecentQuantiles(t *testing.T) {
	r := newRecentHub(t)
	if got := recent(t, r.h); len(got) != 0 {
		t.Fatalf("recent quantiles before any span: %v", got)
	}
	// Two minutes of 200-1,200 us decode spans, a wide spread.
	base := func(i int) time.Duration { return time.Duration(200+(i*7919)%1000) * time.Microsecond }
	r.steps(12000, base)
	var last []time.Duration
	for i := 12000 - 6000; i < 12000; i++ {
		last = append(last, base(i))
	}
	got := recent(t, r.h)
	for _, q := range recentQuantiles {
		want := exactQuantile(last, q)
		if v, ok := got[qlabel(q)]; !ok || math.Abs(v/want-1) > 0.011 {
			t.Errorf("quantile %v: %v s, want %v within 1.1%% (%v)", q, v, want, got)
		}
	}

	// A +20% regression: after a minute the p99 reads it in full, and
	// after 30 s it already reads most of it (at least +15%).
	slow := func(i int) time.Duration { return base(i) * 12 / 10 }
	before := got["0.99"]
	r.steps(3000, slow)
	if v := recent(t, r.h)["0.99"]; v/before-1 < 0.15 {
		t.Errorf("30 s into a +20%% regression the p99 reads %+.1f%%", (v/before-1)*100)
	}
	r.steps(3000, slow)
	if v := recent(t, r.h)["0.99"]; math.Abs(v/before-1.2) > 0.025 {
		t.Errorf("a minute into a +20%% regression the p99 reads %+.1f%%, want +20%%", (v/before-1)*100)
	}

	// A lane idle for over a minute has no recent quantiles.
	for i := 0; i < 8; i++ {
		r.clock.Advance(10 * time.Second)
		r.h.BeginStep()
		r.h.Harvest()
	}
	if got := recent(t, r.h); len(got) != 0 {
		t.Errorf("recent quantiles after 80 s idle: %v", got)
	}
}

// recentAll gathers every lane's recent quantiles: "device/lane" ->
// quantile label -> seconds.
func recentAll(t *testing.T, h *gpuspans.Hub) map[string]map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(h, Options{}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "gpuspans_lane_recent_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			qs := map[string]float64{}
			for _, q := range m.GetSummary().GetQuantile() {
				qs[qlabel(q.GetQuantile())] = q.GetValue()
			}
			out[l["device"]+"/"+l["lane"]] = qs
		}
	}
	return out
}

// scaleHub is a hub of lanes on devices simulated GPUs, kernels registered,
// every step armed.
func scaleHub(t *testing.T, lanes, devices, kernels int) (*gpuspans.Hub, []*sim.GPU, *sim.Clock) {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	names := make([]string, lanes)
	for i := range names {
		names[i] = "lane" + strconv.Itoa(i)
	}
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Lanes: names, Now: clock.Now,
		Logf: func(string, ...interface{}) {}})
	if err != nil {
		t.Fatal(err)
	}
	gpus := make([]*sim.GPU, devices)
	for d := range gpus {
		gpus[d] = sim.New(sim.Options{Device: d, Now: clock.Now})
		if err := h.Install(d, stream, gpus[d].Opener()); err != nil {
			t.Fatal(err)
		}
	}
	for k := 1; k <= kernels; k++ {
		if err := h.RegisterKernel(uint64(k), "kernel"+strconv.Itoa(k)); err != nil {
			t.Fatal(err)
		}
	}
	return h, gpus, clock
}

// At fleet scale, each lane of each GPU keeps its own recent quantiles:
// 8 GPUs x (3 lanes + 32 kernel spans) a step, the p99 of every lane and
// device within 2% of its spans' own (one shared window once merged down to
// schema 0 there and lost spans: 9.8% off).
func TestRecentQuantilesAtScale(t *testing.T) {
	const lanes, devices, kernels, steps = 3, 8, 32, 2000 // 20 s: every span within the last minute
	h, gpus, clock := scaleHub(t, lanes, devices, kernels)
	spans := map[string][]time.Duration{}
	for i := 0; i < steps; i++ {
		h.BeginStep()
		for l := 0; l < lanes; l++ {
			h.LaneBegin(l)
			for d, g := range gpus {
				// 100-400 us by lane, +-30% by a pseudo-random spread.
				dur := time.Duration(float64((l+1)*100+d*10)*(0.7+0.6*float64((i*7919+l*104729+d*1299709)%1000)/1000)) * time.Microsecond
				g.Launch(stream, dur)
				key := strconv.Itoa(d) + "/lane" + strconv.Itoa(l)
				spans[key] = append(spans[key], dur)
			}
			if l == 0 { // device 0's lane 0 runs the kernels too
				for k := 1; k <= kernels; k++ {
					// 1-32 us, each spread over a factor of 3: hundreds of
					// buckets in a window.
					kd := time.Duration(k*(500+(i*31+k*17)%1000)) * time.Microsecond / 1000
					ks := h.KernelBegin(uint64(k), stream)
					gpus[0].Launch(stream, kd)
					h.KernelEnd(ks)
					spans["0/lane0"][len(spans["0/lane0"])-1] += kd
				}
			}
			h.LaneEnd(l)
		}
		clock.Advance(10 * time.Millisecond)
		h.Harvest()
	}
	got := recentAll(t, h)
	if len(got) != lanes*devices {
		t.Fatalf("recent quantiles of %d lanes and devices, want %d: %v", len(got), lanes*devices, got)
	}
	worst := 0.0
	for key, ds := range spans {
		want := exactQuantile(ds, 0.99)
		v := got[key]["0.99"]
		err := math.Abs(v/want - 1)
		worst = math.Max(worst, err)
		if err > 0.02 {
			t.Errorf("%s: p99 %v s, exact %v s (%.2f%% off)", key, v, want, 100*err)
		}
	}
	t.Logf("%d lanes and devices, the worst p99 %.2f%% off its spans' own", len(spans), 100*worst)
}

// Every lane of every GPU with a span in the last minute has its recent
// quantiles, however many: 64 lanes on 8 GPUs (one shared window kept 8 of
// the 512).
func TestRecentQuantilesEveryLane(t *testing.T) {
	const lanes, devices, kernels = 64, 8, 32
	h, gpus, clock := scaleHub(t, lanes, devices, kernels)
	for i := 0; i < 100; i++ {
		h.BeginStep()
		for l := 0; l < lanes; l++ {
			h.LaneBegin(l)
			for _, g := range gpus {
				g.Launch(stream, time.Duration(50+l*10+(i*13)%40)*time.Microsecond)
			}
			if l == 0 {
				for k := 1; k <= kernels; k++ {
					ks := h.KernelBegin(uint64(k), stream)
					gpus[0].Launch(stream, time.Duration(k*(500+(i*31+k*17)%1000))*time.Microsecond/1000)
					h.KernelEnd(ks)
				}
			}
			h.LaneEnd(l)
		}
		clock.Advance(10 * time.Millisecond)
		h.Harvest()
	}
	if got := recentAll(t, h); len(got) != lanes*devices {
		t.Errorf("recent quantiles of %d lanes and devices, want %d", len(got), lanes*devices)
	}
}

// summaries gathers family's summaries from c: "device/name" (name: the
// label's value, if any) -> quantile label -> seconds, and "_count" and
// "_sum".
func summaries(t *testing.T, c *Collector, family, name string) map[string]map[string]float64 {
	t.Helper()
	mfs := families(t, c)
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			qs := map[string]float64{"_count": float64(m.GetSummary().GetSampleCount()), "_sum": m.GetSummary().GetSampleSum()}
			for _, q := range m.GetSummary().GetQuantile() {
				qs[qlabel(q.GetQuantile())] = q.GetValue()
			}
			out[l["device"]+"/"+l[name]] = qs
		}
	}
	return out
}

// Each kernel's last minute, with kernel histograms: its p50 and p99
// within 1.1% of its spans' own, the count and sum its totals; none
// without kernel histograms, and none for a kernel idle for a minute.
func TestRecentKernelQuantiles(t *testing.T) {
	h, gpus, clock := scaleHub(t, 1, 1, 2)
	spans := map[string][]time.Duration{}
	run := func(n int, scale float64) {
		for i := 0; i < n; i++ {
			h.BeginStep()
			h.LaneBegin(0)
			for k := 1; k <= 2; k++ {
				// kernel1 20-60 us, kernel2 200-600 us.
				d := time.Duration(scale*float64(k*k*(20_000+(i*7919+k*31)%40_000))) * time.Nanosecond
				ks := h.KernelBegin(uint64(k), stream)
				gpus[0].Launch(stream, d)
				h.KernelEnd(ks)
				name := "kernel" + strconv.Itoa(k)
				spans[name] = append(spans[name], d)
			}
			h.LaneEnd(0)
			clock.Advance(10 * time.Millisecond)
			h.Harvest()
		}
	}
	run(12000, 1)  // two minutes
	run(6000, 1.3) // the last minute 30% slower
	if got := summaries(t, NewCollector(h, Options{}), "gpuspans_kernel_recent_duration_seconds", "kernel"); len(got) != 0 {
		t.Errorf("kernel summaries without kernel histograms: %v", got)
	}
	got := summaries(t, NewCollector(h, Options{KernelHistograms: true}), "gpuspans_kernel_recent_duration_seconds", "kernel")
	if len(got) != 2 {
		t.Fatalf("kernel summaries %v, want kernel1's and kernel2's", got)
	}
	snap := h.Snapshot()
	for name, ds := range spans {
		g := got["0/"+name]
		for _, q := range kernelQuantiles {
			want := exactQuantile(ds[len(ds)-6000:], q)
			if v := g[qlabel(q)]; math.Abs(v/want-1) > 0.011 {
				t.Errorf("%s quantile %v: %v s, want the last minute's %v within 1.1%%", name, q, v, want)
			}
		}
		for _, a := range snap.Kernels {
			if a.Name == name && (g["_count"] != float64(a.Count) || g["_sum"] != a.Sum.Seconds()) {
				t.Errorf("%s count and sum %v and %v, want the totals %d and %v", name, g["_count"], g["_sum"], a.Count, a.Sum.Seconds())
			}
		}
	}
	for i := 0; i < 8; i++ {
		clock.Advance(10 * time.Second)
		h.BeginStep()
		h.Harvest()
	}
	if got := summaries(t, NewCollector(h, Options{KernelHistograms: true}), "gpuspans_kernel_recent_duration_seconds", "kernel"); len(got) != 0 {
		t.Errorf("kernel summaries after 80 s idle: %v", got)
	}
}

// The gaps between kernels that kernel windows measured in the last
// minute: p50 and p99 within 1.1% of the gaps' own (a classic-only
// server's default gap buckets are 4 apart), count and sum their totals.
func TestRecentGapQuantiles(t *testing.T) {
	h, clock, tracer, gpu := tracedHub(t)
	var gaps []time.Duration
	step := func(i int, scale float64) {
		h.BeginStep()
		h.LaneBegin(0)
		for k := 0; k < 4; k++ {
			start, end := gpu.Launch(stream, 10*time.Microsecond)
			tracer.Kernel(0, uint32(stream), start, end, kernelName(k), 0)
			if k < 3 {
				// The host stalls: 5-50 us, then the next kernel.
				g := time.Duration(scale*float64(5_000+(i*7919+k*104729)%45_000)) * time.Nanosecond
				clock.Advance(10*time.Microsecond + g)
				gaps = append(gaps, g)
			}
		}
		h.LaneEnd(0)
		clock.Advance(10 * time.Millisecond)
	}
	for i := 0; i < 6000; i++ {
		step(i, 1)
	}
	before := len(gaps)
	for i := 0; i < 6000; i++ { // the last minute 30% longer
		step(i, 1.3)
	}
	h.BeginStep()
	h.Harvest()
	clock.Advance(gpuspans.GPUTimeServedWait) // the last window's wait for spans after it ends
	h.Harvest()
	g := h.GPUTime()
	if len(g.Gaps) != 1 || g.Gaps[0].Count < uint64(len(gaps))/2 {
		t.Fatalf("the windows measured %+v gaps, want most of the %d", g.Gaps, len(gaps))
	}
	got := summaries(t, NewCollector(h, Options{}), "gpuspans_kernel_gap_recent_seconds", "")
	s, ok := got["0/"]
	if len(got) != 1 || !ok {
		t.Fatalf("gap summaries %v, want device 0's", got)
	}
	for _, q := range kernelQuantiles {
		want := exactQuantile(gaps[before:], q)
		if v := s[qlabel(q)]; math.Abs(v/want-1) > 0.011 {
			t.Errorf("gap quantile %v: %v s, want the last minute's %v within 1.1%%", q, v, want)
		}
	}
	if s["_count"] != float64(g.Gaps[0].Count) || s["_sum"] != g.Gaps[0].Sum.Seconds() {
		t.Errorf("gap count and sum %v and %v, want the totals %d and %v", s["_count"], s["_sum"], g.Gaps[0].Count, g.Gaps[0].Sum.Seconds())
	}
}

package prom

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// The series budget per GPU of a one-GPU process with 2 lanes (the package
// documentation's): every gpuspans_ series Prometheus stores, with native
// histograms on and with classic buckets only. tools/e2e/prometheus.sh
// checks the same numbers against a real Prometheus's count of the demo.
const (
	budgetNative          = 30
	budgetClassic         = 85
	budgetKernelsNative   = 380  // with Options.KernelHistograms and 64 kernels
	budgetKernelsClassic  = 2200 // the same, classic
	eagerPerDevice        = 6
	eagerPerHub           = 7
	defaultClassicBounds  = 25
	registeredKernelCount = 64
)

// families gathers c's families through a pedantic registry.
func families(t *testing.T, c *Collector) []*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// storedSeries counts the series Prometheus stores from one gather: with
// native histograms on, one per histogram that has a native part; classic
// only (and for a histogram without one), each histogram's _bucket series
// (+Inf included), _sum and _count. Every other sample is one series
// either way.
func storedSeries(t *testing.T, c *Collector) (native, classic int, names map[string]int) {
	t.Helper()
	mfs := families(t, c)
	names = make(map[string]int)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			names[mf.GetName()]++
			native++
			classic++
			if h := m.GetHistogram(); mf.GetType() == dto.MetricType_HISTOGRAM {
				b := len(h.GetBucket())
				if b > 0 && h.GetBucket()[b-1].GetUpperBound() > 1e300 {
					b-- // an explicit +Inf bucket (one holding an exemplar)
				}
				classic += b + 2 // the bounds' _bucket, +Inf, _sum, _count: one counted already
				if h.Schema == nil {
					native += b + 2 // no native part: stored as classic there too
				}
			}
			if sm := m.GetSummary(); mf.GetType() == dto.MetricType_SUMMARY {
				n := len(sm.GetQuantile()) + 1 // each quantile, _sum, _count: one counted already
				native += n
				classic += n
			}
		}
	}
	return native, classic, names
}

// kernelName is the i-th of the 64 registered kernels.
func kernelName(i int) string { return fmt.Sprintf("kernel_%02d", i) }

// busyHub is one simulated GPU serving steps of 2 lanes, every step armed,
// each step launching the 64 registered kernels: every series that normal
// serving makes exists.
func busyHub(t testing.TB) *gpuspans.Hub {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Now: clock.Now, Logf: func(string, ...interface{}) {}})
	if err != nil {
		t.Fatal(err)
	}
	gpu := sim.New(sim.Options{Now: clock.Now})
	if err := h.Install(0, stream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < registeredKernelCount; k++ {
		if err := h.RegisterKernel(uint64(k+1), kernelName(k)); err != nil {
			t.Fatal(err)
		}
	}
	for step := 0; step < 3; step++ {
		h.BeginStep()
		for lane := 0; lane < 2; lane++ {
			h.LaneBegin(lane)
			for k := lane; k < registeredKernelCount; k += 2 {
				ks := h.KernelBegin(uint64(k+1), stream)
				gpu.Launch(stream, time.Duration(k+1)*time.Microsecond)
				h.KernelEnd(ks)
			}
			h.LaneEnd(lane)
		}
		clock.Advance(time.Millisecond)
	}
	h.BeginStep()
	h.Harvest()
	return h
}

// TestSeriesBudget counts the series of a busy one-GPU hub with 2 lanes
// and 64 registered kernels, by default and with kernel histograms, as
// Prometheus stores them either way, against the formula of the package
// documentation and the budget.
func TestSeriesBudget(t *testing.T) {
	h := busyHub(t)
	if n := len(layouts[DefaultClassicBuckets].bounds); n != defaultClassicBounds {
		t.Fatalf("%d default classic bounds, the budget assumes %d", n, defaultClassicBounds)
	}
	const perHist = defaultClassicBounds + 3
	// Every step was armed: armed_steps_total is there too, beside the
	// eager series.
	const others = eagerPerDevice + eagerPerHub + 1
	// The recent quantiles' summaries: 3 quantiles, _count and _sum per
	// lane; 2 quantiles, _count and _sum per kernel with kernel histograms.
	const recent = 2 * (len(recentQuantiles) + 2)
	const kernelRecent = registeredKernelCount * (len(kernelQuantiles) + 2)
	for _, tc := range []struct {
		name                   string
		opts                   Options
		native, classic        int
		budgetN, budgetClassic int
	}{
		{"default", Options{}, 2 + recent + others, 2*perHist + recent + others, budgetNative, budgetClassic},
		{"kernel histograms", Options{KernelHistograms: true},
			2 + registeredKernelCount + recent + kernelRecent + others, (2+registeredKernelCount)*perHist + recent + kernelRecent + others,
			budgetKernelsNative, budgetKernelsClassic},
	} {
		native, classic, names := storedSeries(t, NewCollector(h, tc.opts))
		t.Logf("%s: %d series with native histograms, %d classic only", tc.name, native, classic)
		if native != tc.native || classic != tc.classic {
			t.Errorf("%s: %d native, %d classic series; the formula says %d and %d (%v)", tc.name, native, classic, tc.native, tc.classic, names)
		}
		if native > tc.budgetN || classic > tc.budgetClassic {
			t.Errorf("%s: %d native, %d classic series: over the budget of %d and %d", tc.name, native, classic, tc.budgetN, tc.budgetClassic)
		}
	}
}

// TestNoZeroSeries: a hub whose device has landed nothing sends only the
// eager series (package documentation), and no counter at zero but the
// span counters and activity counters that must exist before they count.
// Each lazy series appears with its first count.
func TestNoZeroSeries(t *testing.T) {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelStep, KernelSpanEvery: 1, Now: clock.Now, Logf: func(string, ...interface{}) {}})
	if err != nil {
		t.Fatal(err)
	}
	gpu := sim.New(sim.Options{Now: clock.Now})
	if err := h.Install(0, stream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	h.Harvest()
	// The eager series, but event_offset_seconds: the pool opens, and
	// measures it, at the first step at level kernel.
	eager := []string{
		"gpuspans_device_info", "gpuspans_device_up", "gpuspans_harvest_seconds_total",
		"gpuspans_harvests_total", "gpuspans_kernel_span_every", "gpuspans_kernel_timing_info", "gpuspans_level",
		"gpuspans_level_info", "gpuspans_spans_begun_total", "gpuspans_spans_in_flight", "gpuspans_spans_landed_total",
		"gpuspans_steps_total",
	}
	got := func(o Options) []string {
		_, _, names := storedSeries(t, NewCollector(h, o))
		var out []string
		for n := range names {
			out = append(out, n)
		}
		sort.Strings(out)
		return out
	}
	if g := got(Options{KernelHistograms: true}); strings.Join(g, " ") != strings.Join(eager, " ") || len(eager) != eagerPerDevice+eagerPerHub-1 {
		t.Errorf("idle hub's series:\n%v\nwant\n%v", g, eager)
	}

	// Each lazy family appears with its first count.
	h.SetLevel(gpuspans.LevelKernel)
	h.BeginStep()
	h.LaneBegin(0)
	h.LaneBegin(0) // already open
	h.LaneBegin(99)
	gpu.BeginCapture(stream)
	h.KernelEnd(h.KernelBegin(1, stream)) // refused: capturing
	gpu.EndCapture(stream)
	h.KernelEnd(h.KernelBegin(1, stream))
	gpu.Launch(stream, time.Microsecond)
	h.LaneEnd(0)
	clock.Advance(time.Millisecond)
	h.BeginStep()
	h.Harvest()
	g := strings.Join(got(Options{KernelHistograms: true}), " ")
	for _, want := range []string{"gpuspans_lane_duration_seconds", "gpuspans_kernel_duration_seconds", "gpuspans_spans_dropped_total",
		"gpuspans_lane_already_open_calls_total", "gpuspans_unknown_lane_calls_total", "gpuspans_armed_steps_total"} {
		if !strings.Contains(g, want) {
			t.Errorf("no %s after its first count: %s", want, g)
		}
	}
	if strings.Contains(g, "gpuspans_spans_errored_total") || strings.Contains(g, "gpuspans_pool_panics_total") {
		t.Errorf("a counter at zero: %s", g)
	}
}

// TestReadmeBudget holds the series budget that examples/observability's
// README and docs/operations.md state to the exporter's: the formulas'
// terms per lane and per GPU, and the budgets. Beside the sources only
// (go test; Bazel's sandbox has no README).
func TestReadmeBudget(t *testing.T) {
	if os.Getenv("TEST_SRCDIR") != "" {
		t.Skip("under Bazel: the documents it reads are go test's (CI runs it there)")
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	perLane := 1 + len(recentQuantiles) + 2 // the histogram; the summary's quantiles, _count and _sum
	eager := eagerPerDevice + eagerPerHub
	readme := read("../../../examples/observability/README.md")
	for _, want := range []string{
		fmt.Sprintf("native `%dL + %d`", perLane, eager),
		fmt.Sprintf("classic `L*(B+%d) + %d`", 3+perLane-1, eager),
		fmt.Sprintf("(budgets %d and %d)", budgetNative, budgetClassic),
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("examples/observability/README.md does not say %q", want)
		}
	}
	if want := fmt.Sprintf("plus `%dK` or `K*(B+%d)` with kernel histograms", 1+len(kernelQuantiles)+2, 3+len(kernelQuantiles)+2); !strings.Contains(readme, want) {
		t.Errorf("examples/observability/README.md does not say %q", want)
	}
	if want := fmt.Sprintf("`%dL + %d` native, `%dL + %d` classic", windowsPerLane, 1+gapRecentSeries, windowsPerLane, gapClassicSeries+gapRecentSeries); !strings.Contains(readme, want) {
		t.Errorf("examples/observability/README.md does not say %q", want)
	}
	if want := fmt.Sprintf("(budgets %d and %d)", budgetWindowsNative, budgetWindowsClassic); !strings.Contains(readme, want) {
		t.Errorf("examples/observability/README.md does not say %q", want)
	}
	ops := read("../../../docs/operations.md")
	if want := fmt.Sprintf("(budget %d) | ", budgetNative); !strings.Contains(ops, want) {
		t.Errorf("docs/operations.md does not say %q", want)
	}
	if want := fmt.Sprintf("(budget %d) |\n", budgetClassic); !strings.Contains(ops, want) {
		t.Errorf("docs/operations.md does not say %q", want)
	}
	// The package documentation's formulas, and its example's numbers.
	doc := read("prom.go")
	for _, want := range []string{
		fmt.Sprintf("L + %dL + %d per device + %d per hub   = %d for 2 lanes and one GPU", perLane-1, eagerPerDevice, eagerPerHub, 2*perLane+eager),
		fmt.Sprintf("L*(B+3) + %dL + %d + %d                = %d", perLane-1, eagerPerDevice, eagerPerHub, 2*(defaultClassicBounds+3)+2*(perLane-1)+eager),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("the package documentation does not say %q", want)
		}
	}
}

// With kernel windows, a GPU adds per lane its busy ratio, busy counter,
// idle counters by cause, window cost counter and up to sharesPerLane
// kernel shares, and per device the gap histogram (1 native series or 12
// classic ones) and the gaps' recent summary (2 quantiles, _count and
// _sum).
const (
	windowsPerLane        = 3 + idleCauses + sharesPerLane
	idleCauses            = 5
	gapClassicSeries      = 12
	gapRecentSeries       = len(kernelQuantiles) + 2
	budgetWindowsNative   = 62
	budgetWindowsClassic  = 145
	windowedLanes         = 2
	windowedKernelsAtLane = 5
)

// windowedHub is busyHub's shape under kernel windows: 2 lanes, each
// running windowedKernelsAtLane traced kernels a step with gaps between.
func windowedHub(t testing.TB) *gpuspans.Hub {
	t.Helper()
	h, _ := windowedHubClock(t)
	return h
}

// tracedHub is a hub at kernel timing auto, a window due every
// millisecond, on one simulated GPU whose kernels the fake tracer reports
// when told, on a manual clock.
func tracedHub(t testing.TB) (*gpuspans.Hub, *sim.Clock, *fake.Tracer, *sim.GPU) {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	tracer := new(fake.Tracer)
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, Now: clock.Now, Logf: func(string, ...interface{}) {},
		KernelTracer: tracer.Opener(), KernelTiming: gpuspans.KernelTimingAuto, KernelWindowEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	gpu := sim.New(sim.Options{Now: clock.Now})
	if err := h.Install(0, stream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	return h, clock, tracer, gpu
}

// windowedHubClock is windowedHub with its clock.
func windowedHubClock(t testing.TB) (*gpuspans.Hub, *sim.Clock) {
	t.Helper()
	h, clock, tracer, gpu := tracedHub(t)
	for step := 0; step < 8; step++ {
		h.BeginStep()
		for lane := 0; lane < windowedLanes; lane++ {
			h.LaneBegin(lane)
			for k := 0; k < windowedKernelsAtLane; k++ {
				start, end := gpu.Launch(stream, time.Duration(k+1)*time.Microsecond)
				tracer.Kernel(0, uint32(stream), start, end, kernelName(k), 0)
				clock.Advance(time.Duration(k+10) * time.Microsecond)
			}
			h.LaneEnd(lane)
		}
		clock.Advance(time.Millisecond)
	}
	h.BeginStep()
	h.Harvest()
	h.Harvest()
	return h, clock
}

func TestSeriesBudgetWithWindows(t *testing.T) {
	h := windowedHub(t)
	g := h.GPUTime()
	if g.Windows == 0 || len(g.Lanes) != windowedLanes || len(g.Gaps) != 1 {
		t.Fatalf("the windows measured %+v, want both lanes and gaps", g)
	}
	n0, c0, _ := storedSeries(t, NewCollector(busyHub(t), Options{}))
	native, classic, names := storedSeries(t, NewCollector(h, Options{}))
	if names["gpuspans_lane_busy_ratio"] != windowedLanes || names["gpuspans_lane_busy_seconds_total"] != windowedLanes ||
		names["gpuspans_lane_idle_seconds_total"] != windowedLanes*idleCauses || names["gpuspans_lane_window_cost_seconds_total"] != windowedLanes || names["gpuspans_lane_kernel_share_ratio"] != windowedLanes*sharesPerLane ||
		names["gpuspans_kernel_gap_seconds"] != 1 || names["gpuspans_kernel_gap_recent_seconds"] != 1 {
		t.Errorf("GPU time's series: %v", names)
	}
	// Against the hub without windows: the windows' own series (windows
	// and kernels totals, the last window's kernels, and the open and
	// close costs, two classic histograms), and GPU time's.
	t.Logf("with windows: %d native, %d classic series (without: %d, %d)", native, classic, n0, c0)
	const windowsN, windowsC = 5, 3 + 2*(6+3)
	if len(windowCostLayout.bounds) != 6 {
		t.Fatalf("%d window cost bounds, the budget assumes 6", len(windowCostLayout.bounds))
	}
	wantN := n0 + windowsN + windowedLanes*windowsPerLane + 1 + gapRecentSeries
	wantC := c0 + windowsC + windowedLanes*windowsPerLane + gapClassicSeries + gapRecentSeries
	if native != wantN || classic != wantC {
		t.Errorf("%d native, %d classic series; the formula says %d and %d", native, classic, wantN, wantC)
	}
	if native > budgetWindowsNative || classic > budgetWindowsClassic {
		t.Errorf("%d native, %d classic series: over the budget of %d and %d", native, classic, budgetWindowsNative, budgetWindowsClassic)
	}
	if b := len(gapLayout.bounds) + 3; b != gapClassicSeries {
		t.Errorf("the gap histogram stores %d classic series, want %d", b, gapClassicSeries)
	}
}

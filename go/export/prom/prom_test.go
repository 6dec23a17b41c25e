package prom

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

const stream = backend.Stream(0x10)

// errNoDriver is a long error, to check that the reason label is cut.
var errNoDriver = fmt.Errorf("%w: libcuda.so.1: cannot open shared object file: No such file or directory (searched /usr/lib/x86_64-linux-gnu, /usr/local/cuda/lib64)", backend.ErrNoDriver)

// servedHub runs two steps of known GPU work on a simulated device 0, next
// to a device whose pool cannot open (1) and one that hits a sticky error
// at its first span (2):
//
//	step 1 (not armed): prefill 150us, decode 3us
//	step 2 (armed):     prefill = attention 40us + unregistered kernel 8us,
//	                    decode = attention 2us
//
// and makes one call of each kind the hub ignores and counts.
func servedHub(t testing.TB) *gpuspans.Hub {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	h, err := gpuspans.New(gpuspans.Options{
		Level: gpuspans.LevelKernel, KernelSpanEvery: 2, Slots: 64, Now: clock.Now,
		Logf: func(string, ...interface{}) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	gpu := sim.New(sim.Options{Device: 0, Now: clock.Now})
	failed := fake.New(fake.Options{Device: 1, OpenErr: errNoDriver, Errorf: t.Errorf})
	sticky := fake.New(fake.Options{Device: 2, Errorf: t.Errorf})
	sticky.SetRecordError(func(fake.Op, int, backend.Stream) error {
		return &backend.DriverError{Op: "cuEventRecord", Code: 700, Msg: "CUDA_ERROR_ILLEGAL_ADDRESS", Kind: backend.ErrSticky}
	})
	for dev, open := range []backend.Opener{gpu.Opener(), failed.Opener(), sticky.Opener()} {
		if err := h.Install(dev, stream, open); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.RegisterKernel(0xa1, "attention"); err != nil {
		t.Fatal(err)
	}
	prefill, _ := h.LaneIndex("prefill")
	decode, _ := h.LaneIndex("decode")
	kernel := func(handle uint64, d time.Duration) gpuspans.KernelSpan {
		ks := h.KernelBegin(handle, stream)
		gpu.Launch(stream, d)
		h.KernelEnd(ks)
		return ks
	}

	h.BeginStep()
	h.LaneBegin(prefill)
	gpu.Launch(stream, 150*time.Microsecond)
	h.LaneEnd(prefill)
	h.LaneBegin(decode)
	gpu.Launch(stream, 3*time.Microsecond)
	h.LaneEnd(decode)
	clock.Advance(time.Millisecond)

	h.BeginStep()
	h.LaneBegin(prefill)
	h.LaneBegin(prefill) // already open: counted
	kernel(0xa1, 40*time.Microsecond)
	ks := kernel(0xff, 8*time.Microsecond)
	h.KernelEnd(ks) // ended twice: counted
	h.LaneEnd(prefill)
	h.LaneBegin(decode)
	kernel(0xa1, 2*time.Microsecond)
	h.LaneEnd(decode)
	h.LaneBegin(7) // no such lane: counted
	clock.Advance(time.Millisecond)
	h.Harvest()
	return h
}

// bucketLines is the exposition of one classic histogram series over l
// holding spans of the given durations.
func bucketLines(name, labels string, l *layout, spans ...time.Duration) string {
	var b strings.Builder
	var sum time.Duration
	for _, d := range spans {
		sum += d
	}
	for _, le := range l.bounds {
		n := 0
		for _, d := range spans {
			if float64(d)/1e9 <= le {
				n++
			}
		}
		fmt.Fprintf(&b, "%s_bucket{%s,le=%q} %d\n", name, labels, fmt.Sprint(le), n)
	}
	fmt.Fprintf(&b, "%s_bucket{%s,le=\"+Inf\"} %d\n%s_sum{%s} %s\n%s_count{%s} %d\n",
		name, labels, len(spans), name, labels, fmt.Sprint(sum.Seconds()), name, labels, len(spans))
	return b.String()
}

func TestCollect(t *testing.T) {
	const lane, kernel, us = "gpuspans_lane_duration_seconds", "gpuspans_kernel_duration_seconds", time.Microsecond
	h := servedHub(t)
	l := layouts[DefaultClassicBuckets]
	// Devices 1 and 2 never landed a span: no histograms, and no kernel
	// histograms at all without Options.KernelHistograms.
	lanes := `
# HELP gpuspans_lane_duration_seconds GPU time of a serve lane's work in one step.
# TYPE gpuspans_lane_duration_seconds histogram
` + bucketLines(lane, `device="0",lane="prefill"`, l, 150*us, 48*us) +
		bucketLines(lane, `device="0",lane="decode"`, l, 3*us, 2*us) + `
# HELP gpuspans_lane_recent_duration_seconds A serve lane's GPU time per step: quantiles 0.5, 0.9 and 0.99 over the last minute, within 1.1%, per device, not to be averaged across devices (histogram_quantile over lane_duration_seconds is); count and sum since the start. Absent for a lane with no span in the last minute.
# TYPE gpuspans_lane_recent_duration_seconds summary
` +
		// The geometric middles of the schema-5 buckets holding 48 and
		// 150 us, 2 and 3 us: the spans of ranks 1 and 2; the count and
		// sum are the lanes' own.
		`gpuspans_lane_recent_duration_seconds{device="0",lane="prefill",quantile="0.5"} 4.7577e-05
gpuspans_lane_recent_duration_seconds{device="0",lane="prefill",quantile="0.9"} 0.000149961
gpuspans_lane_recent_duration_seconds{device="0",lane="prefill",quantile="0.99"} 0.000149961
gpuspans_lane_recent_duration_seconds_sum{device="0",lane="prefill"} 0.000198
gpuspans_lane_recent_duration_seconds_count{device="0",lane="prefill"} 2
gpuspans_lane_recent_duration_seconds{device="0",lane="decode",quantile="0.5"} 2.013e-06
gpuspans_lane_recent_duration_seconds{device="0",lane="decode",quantile="0.9"} 2.973e-06
gpuspans_lane_recent_duration_seconds{device="0",lane="decode",quantile="0.99"} 2.973e-06
gpuspans_lane_recent_duration_seconds_sum{device="0",lane="decode"} 5e-06
gpuspans_lane_recent_duration_seconds_count{device="0",lane="decode"} 2
`
	kernels := `
# HELP gpuspans_kernel_duration_seconds GPU time of one kernel launch, on steps armed for kernel spans.
# TYPE gpuspans_kernel_duration_seconds histogram
` + bucketLines(kernel, `device="0",kernel="other"`, l, 8*us) +
		bucketLines(kernel, `device="0",kernel="attention"`, l, 40*us, 2*us) + `
# HELP gpuspans_kernel_recent_duration_seconds GPU time of one kernel launch: quantiles 0.5 and 0.99 over the last minute, within 1.1% (2.2% or more where a window's kernels outgrew its cells), per device, not to be averaged across devices; count and sum since the start. Absent for a kernel with no span in the last minute.
# TYPE gpuspans_kernel_recent_duration_seconds summary
` +
		// As the lanes': the middles of the buckets holding 2 and 40 us,
		// and 8 us.
		`gpuspans_kernel_recent_duration_seconds{device="0",kernel="attention",quantile="0.5"} 2.013e-06
gpuspans_kernel_recent_duration_seconds{device="0",kernel="attention",quantile="0.99"} 4.0007e-05
gpuspans_kernel_recent_duration_seconds_sum{device="0",kernel="attention"} 4.2e-05
gpuspans_kernel_recent_duration_seconds_count{device="0",kernel="attention"} 2
gpuspans_kernel_recent_duration_seconds{device="0",kernel="other",quantile="0.5"} 8.053e-06
gpuspans_kernel_recent_duration_seconds{device="0",kernel="other",quantile="0.99"} 8.053e-06
gpuspans_kernel_recent_duration_seconds_sum{device="0",kernel="other"} 8e-06
gpuspans_kernel_recent_duration_seconds_count{device="0",kernel="other"} 1
`
	rest := `
# HELP gpuspans_spans_begun_total Spans that took a ring slot: landed + dropped + errored + in flight.
# TYPE gpuspans_spans_begun_total counter
gpuspans_spans_begun_total{device="0"} 7
gpuspans_spans_begun_total{device="1"} 0
gpuspans_spans_begun_total{device="2"} 1
# HELP gpuspans_spans_landed_total Spans harvested with a duration.
# TYPE gpuspans_spans_landed_total counter
gpuspans_spans_landed_total{device="0"} 7
gpuspans_spans_landed_total{device="1"} 0
gpuspans_spans_landed_total{device="2"} 0
# HELP gpuspans_spans_errored_total Spans a driver call failed for. Appears at the first.
# TYPE gpuspans_spans_errored_total counter
gpuspans_spans_errored_total{device="2"} 1
# HELP gpuspans_spans_in_flight Spans holding a slot: open, or ended and awaiting a harvest.
# TYPE gpuspans_spans_in_flight gauge
gpuspans_spans_in_flight{device="0"} 0
gpuspans_spans_in_flight{device="1"} 0
gpuspans_spans_in_flight{device="2"} 0
# HELP gpuspans_unknown_lane_calls_total LaneBegin calls with a lane index outside the hub's lanes (ignored). Appears at the first.
# TYPE gpuspans_unknown_lane_calls_total counter
gpuspans_unknown_lane_calls_total 1
# HELP gpuspans_lane_already_open_calls_total LaneBegin calls on a lane already open (ignored). Appears at the first.
# TYPE gpuspans_lane_already_open_calls_total counter
gpuspans_lane_already_open_calls_total 1
# HELP gpuspans_bad_end_calls_total KernelEnd calls with a span not open on this hub, or reclaimed as leaked (ignored). Appears at the first.
# TYPE gpuspans_bad_end_calls_total counter
gpuspans_bad_end_calls_total 1
# HELP gpuspans_install_failures_total Event pools that could not be opened. Appears at the first.
# TYPE gpuspans_install_failures_total counter
gpuspans_install_failures_total 1
# HELP gpuspans_sticky_disables_total Recorders turned off by a sticky CUDA error. Appears at the first.
# TYPE gpuspans_sticky_disables_total counter
gpuspans_sticky_disables_total 1
# HELP gpuspans_level Telemetry level: 0 off, 1 step, 2 kernel.
# TYPE gpuspans_level gauge
gpuspans_level 2
# HELP gpuspans_level_info Telemetry level by name; always 1.
# TYPE gpuspans_level_info gauge
gpuspans_level_info{level="kernel"} 1
# HELP gpuspans_kernel_timing_info Where kernel spans come from: mode as asked (events, auto, cupti) and source now (cupti: every kernel from the tracer; events: event pairs around wrapped launches); always 1.
# TYPE gpuspans_kernel_timing_info gauge
gpuspans_kernel_timing_info{mode="events",source="events"} 1
# HELP gpuspans_kernel_span_every Kernel spans are armed on one step in this many.
# TYPE gpuspans_kernel_span_every gauge
gpuspans_kernel_span_every 2
# HELP gpuspans_steps_total Engine steps counted (at level step and above).
# TYPE gpuspans_steps_total counter
gpuspans_steps_total 2
# HELP gpuspans_armed_steps_total Steps armed for kernel spans. Appears at the first.
# TYPE gpuspans_armed_steps_total counter
gpuspans_armed_steps_total 1
# HELP gpuspans_harvests_total Harvests the hub has run: with BeginStep at level kernel, or on RunHarvester's ticks.
# TYPE gpuspans_harvests_total counter
gpuspans_harvests_total 3
# HELP gpuspans_harvest_seconds_total Host time spent in harvests.
# TYPE gpuspans_harvest_seconds_total counter
gpuspans_harvest_seconds_total 0
# HELP gpuspans_device_up 1 if the device's installed recorder is recording spans, else 0.
# TYPE gpuspans_device_up gauge
gpuspans_device_up{device="0"} 1
gpuspans_device_up{device="1"} 0
gpuspans_device_up{device="2"} 0
# HELP gpuspans_device_info The device's identity (as DCGM and nvidia-smi write it), the driver's CUDA version and its recorder's state: pending, open, failed, dead or retiring; always 1. Why spans are off is in the log and on the live page.
# TYPE gpuspans_device_info gauge
gpuspans_device_info{device="0",driver="13.0",name="gpuspans simulated GPU",pci_bus_id="00000000:80:00.0",state="open",uuid="GPU-51a1a7ed-0000-0000-0000-000000000000"} 1
gpuspans_device_info{device="1",driver="",name="",pci_bus_id="",state="failed",uuid=""} 1
gpuspans_device_info{device="2",driver="",name="",pci_bus_id="",state="dead",uuid=""} 1
# HELP gpuspans_event_offset_seconds How much longer an event pair reads than the kernel between them, measured when the pool opened; subtracted from kernel spans unless the hub reports them raw. Absent until measured.
# TYPE gpuspans_event_offset_seconds gauge
gpuspans_event_offset_seconds{device="0"} 0
`
	for _, tc := range []struct {
		name string
		c    *Collector
		want string
	}{
		{"default", NewCollector(h, Options{}), lanes + rest},
		{"kernel histograms", NewCollector(h, Options{KernelHistograms: true}), lanes + kernels + rest},
	} {
		if err := testutil.CollectAndCompare(tc.c, strings.NewReader(tc.want)); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	c := NewCollector(h, Options{KernelHistograms: true})
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestDeviceReplaced: a device with a retiring recorder and a new one has
// one series of each device metric, describing the new one, and once
// uninstalled, the newest retiring one.
func TestDeviceReplaced(t *testing.T) {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, Now: clock.Now, Logf: func(string, ...interface{}) {}})
	if err != nil {
		t.Fatal(err)
	}
	gpu := sim.New(sim.Options{Now: clock.Now})
	install := func() {
		if err := h.Install(0, stream, gpu.Opener()); err != nil {
			t.Fatal(err)
		}
	}
	install()
	h.BeginStep()
	h.LaneBegin(0)
	gpu.Launch(stream, time.Second) // in flight: the pool cannot close yet
	h.LaneEnd(0)
	install()
	install()
	c := NewCollector(h, Options{})
	want := func(state, driver, name, bus, uuid string) string {
		return `
# HELP gpuspans_device_up 1 if the device's installed recorder is recording spans, else 0.
# TYPE gpuspans_device_up gauge
gpuspans_device_up{device="0"} 0
# HELP gpuspans_device_info The device's identity (as DCGM and nvidia-smi write it), the driver's CUDA version and its recorder's state: pending, open, failed, dead or retiring; always 1. Why spans are off is in the log and on the live page.
# TYPE gpuspans_device_info gauge
gpuspans_device_info{device="0",driver="` + driver + `",name="` + name + `",pci_bus_id="` + bus + `",state="` + state + `",uuid="` + uuid + `"} 1
`
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want("pending", "", "", "", "")), "gpuspans_device_up", "gpuspans_device_info"); err != nil {
		t.Error(err)
	}
	h.Uninstall(0)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want("retiring", "13.0", "gpuspans simulated GPU", "00000000:80:00.0", "GPU-51a1a7ed-0000-0000-0000-000000000000")), "gpuspans_device_up", "gpuspans_device_info"); err != nil {
		t.Error(err)
	}
}

func TestLabel(t *testing.T) {
	long := strings.Repeat("é", maxLabelLen) // two bytes each
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"NVIDIA H200", "NVIDIA H200"},
		{long, long[:maxLabelLen]},
		{"x" + long, "x" + long[:maxLabelLen-2]}, // not cut inside a character
		{"bad \xff byte", "bad \uFFFD byte"},
	} {
		if got := label(tc.in); got != tc.want {
			t.Errorf("label(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestConcurrentCollect scrapes while the hub runs; run it with -race.
func TestConcurrentCollect(t *testing.T) {
	h := servedHub(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(h, Options{}))
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if _, err := reg.Gather(); err != nil {
					t.Error(err)
					return
				}
				h.BeginStep()
			}
		}()
	}
	wg.Wait()
}

// TestPromtool runs `promtool check metrics` on what /metrics serves, when
// promtool is installed (Debian: apt-get install prometheus).
func TestPromtool(t *testing.T) {
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH")
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(servedHub(t), Options{}))
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.PanicOnError}).
		ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d, %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = rec.Body
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// BenchmarkCollect measures one scrape's Collect, metrics discarded.
// Allocations are the const metrics themselves; the snapshot is reused.
func BenchmarkCollect(b *testing.B) {
	for _, native := range []bool{false, true} {
		b.Run(fmt.Sprintf("native=%v", native), func(b *testing.B) {
			c := NewCollector(servedHub(b), Options{NoNativeHistograms: !native})
			ch := make(chan prometheus.Metric, 128)
			done := make(chan struct{})
			go func() {
				for range ch {
				}
				close(done)
			}()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Collect(ch)
			}
			b.StopTimer()
			close(ch)
			<-done
		})
	}
}

// panickyPool panics in RecordBegin.
type panickyPool struct{ *fake.Pool }

func (panickyPool) RecordBegin(int, backend.Stream) error { panic("pool bug") }

// TestFailureCounters: whole-harvest failures, pool panics and leaked spans
// reach their series.
func TestFailureCounters(t *testing.T) {
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Logf: func(string, ...interface{}) {}})
	if err != nil {
		t.Fatal(err)
	}
	f := fake.New(fake.Options{Errorf: t.Errorf})
	if err := h.Install(0, stream, f.Opener()); err != nil {
		t.Fatal(err)
	}
	p := panickyPool{fake.New(fake.Options{Device: 1, Errorf: t.Errorf})}
	if err := h.Install(1, stream, func(int) (backend.Pool, error) { return p, nil }); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	h.KernelBegin(1, stream) // never ended
	h.KernelEnd(h.KernelBegin(1, stream))
	h.Device(1).KernelBegin(1, stream) // panics inside: device 1 dead
	f.SetHarvestError(fmt.Errorf("capture mode switch failed"))
	h.Harvest()
	f.SetHarvestError(nil)
	for i := 0; i <= gpuspans.LeakSteps+1; i++ {
		h.BeginStep()
	}
	want := `
# HELP gpuspans_pool_panics_total Recorders turned off because a method of their event pool panicked. Appears at the first.
# TYPE gpuspans_pool_panics_total counter
gpuspans_pool_panics_total 1
# HELP gpuspans_harvest_failures_total Harvest calls that failed as a whole without a sticky error; their spans wait for the next harvest. Appears at the first.
# TYPE gpuspans_harvest_failures_total counter
gpuspans_harvest_failures_total 1
`
	if err := testutil.CollectAndCompare(NewCollector(h, Options{}), strings.NewReader(want), "gpuspans_pool_panics_total", "gpuspans_harvest_failures_total"); err != nil {
		t.Error(err)
	}
	if s := h.Snapshot(); s.Counters.Dropped[gpuspans.DropLeaked] != 1 {
		t.Errorf("counters %+v", s.Counters)
	}
}

// CheckConstLabels refuses, by name, what would clash or mislead, and every
// label of the families' own is reserved.
func TestCheckConstLabels(t *testing.T) {
	if err := CheckConstLabels(map[string]string{"model_name": "llama-3-70b", "region": "eu", "_x1": "é"}); err != nil {
		t.Fatal(err)
	}
	if err := CheckConstLabels(nil); err != nil {
		t.Fatal(err)
	}
	many := map[string]string{}
	for i := 0; i <= MaxConstLabels; i++ {
		many[fmt.Sprintf("l%d", i)] = "v"
	}
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"1x": "v"}, `"1x"`},
		{map[string]string{"model-name": "v"}, `"model-name"`},
		{map[string]string{"": "v"}, `""`},
		{map[string]string{"__name__": "v"}, "__"},
		{map[string]string{"lane": "v"}, `"lane"`},
		{map[string]string{"instance": "v"}, `"instance"`},
		{map[string]string{"model": ""}, "empty"},
		{map[string]string{"model": "\xff"}, "UTF-8"},
		{map[string]string{"model": strings.Repeat("x", 1025)}, "1025 bytes"},
		{map[string]string{strings.Repeat("m", 1<<20): "v"}, "of 1048576 bytes: at most 128"},
		{many, "at most 16"},
	} {
		if err := CheckConstLabels(tc.labels); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.labels, err, tc.want)
		}
	}
	// Every variable label of the collector's families is reserved.
	h := busyHub(t)
	ch := make(chan *prometheus.Desc, 256)
	NewCollector(h, Options{KernelHistograms: true}).Describe(ch)
	close(ch)
	re := regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
	for d := range ch {
		m := re.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the labels of %s", d)
		}
		for _, l := range strings.Split(m[1], ",") {
			if l != "" && !reservedLabels[l] {
				t.Errorf("%s: label %q is not reserved", d, l)
			}
		}
	}
}

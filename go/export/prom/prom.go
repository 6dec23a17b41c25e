// Over 600 lines: the Collector and the Options it checks, with every
// series' description beside the code that fills it from one snapshot, so
// that a series and its help text change together.

// Package prom exports a gpuspans hub to Prometheus.
//
// The Collector holds no metric state of its own: each scrape takes one hub
// snapshot and turns it into const metrics, the shape of client_golang's
// collectors.NewDBStatsCollector. Label values stay bounded: lanes are
// fixed at hub creation, and the hub folds unregistered kernels into
// "other".
//
// # Histograms
//
// gpuspans_lane_duration_seconds (per device and lane) and, with
// Options.KernelHistograms, gpuspans_kernel_duration_seconds (per device and
// kernel) carry two forms of the same counts, both exact copies of the
// hub's aggregate. The native histogram of schema 5 has the hub's own
// buckets, 2.2% wide, so histogram_quantile is within about 2%: it is the
// recommended form, one series per histogram. The classic buckets are
// upper bounds of the hub's buckets from 2^-20 s (0.95 us) to 2^4 s (16 s),
// r apart: r = 2 by default (25 bounds), 2^(1/2), 2^(1/4) or 2^(1/8) with
// Options.ClassicBuckets. Their counts are exact, so histogram_quantile
// lands in the bucket holding the true quantile, and reads at most r times
// it and at least 1/r times it: within 100% by default, 41%, 19% or 9%.
// A span over 16 s is counted in le="+Inf" only, where histogram_quantile
// reads 16 s; _bucket{le="+Inf"} - _bucket{le="16"} counts those spans.
// Prometheus stores the native form when it scrapes with native histograms
// on, the classic one otherwise.
//
// # Series budget
//
// A fleet pays per GPU, with L lanes (2 in the demo), B classic bounds (25
// by default) and the series below:
//
//	native histograms:  L + 5L + 6 per device + 7 per hub   = 25 for 2 lanes and one GPU
//	classic buckets:    L*(B+3) + 5L + 6 + 7                = 79
//
// The 5L are the recent quantiles' summaries below (3 quantiles, _count
// and _sum).
// The 6 per device are spans_begun_total, spans_landed_total,
// spans_in_flight, device_up, device_info and event_offset_seconds; the 7
// per hub level, level_info, kernel_span_every, kernel_timing_info,
// steps_total, harvests_total and harvest_seconds_total. These exist from
// the start, at zero if need be: alerts read them (device_up, level), and
// begun and landed are the denominators of drop ratios and must exist
// before they count for rate() to see their first increments. Every other
// series appears only once it has something to say: a lane or kernel
// histogram at its first span, spans_dropped_total{reason} and
// spans_errored_total at a device's first such span, and the hub-wide
// fault counters (bad_end_calls_total, sticky_disables_total, ...) and
// armed_steps_total at their first count. An alert on one of those must
// see its appearance as an increase: increase() counts from the first
// sample, so use `x > 0 unless x offset 10m` beside `increase(x[10m]) > 0`,
// or compare with `or vector(0)`.
//
// Kernel windows (kernel timing auto or cupti) add 5 series of their own
// (21 classic: the open and close costs are two histograms of 6 classic
// bounds) and GPU time's: per lane and device gpuspans_lane_busy_ratio,
// lane_busy_seconds_total, lane_idle_seconds_total by cause (host,
// launch, copy, wait, other), lane_window_cost_seconds_total and up to 3
// lane_kernel_share_ratio, and per device the kernel_gap_seconds histogram
// (1 native series, 12 classic) and the gaps' recent summary (4): 11L + 5
// native, 11L + 16 classic, so 27 and 38 for 2 lanes and one GPU, and
// lane_unsettled_windows_total per lane at its first count. Each appears
// when a window first measures its lane; outside windows nothing is
// known, and nothing reads zero for it. The busy ratio and the kernel
// shares describe the lane's latest windows: like the recent quantiles,
// they are absent while the lane has had no span for a minute (a lane that
// stopped), where the counters stay.
//
// Whose GPU time (requests.go; an engine that calls ServeRequests) adds,
// per exported request class (gpuspans.Options.RequestLabels classes, 8
// by default, and "other"), for L lanes: 3L+4 native series, 3L+28
// classic (the per-request histogram's 22 bounds), one more with lane
// work (FLOPs); per device and lane 9, 13 with lane work and kernel
// windows; per device 2 peaks where known; 1 per hub: 109 native and 325
// classic for 2 lanes and one GPU at the defaults, a label budget of 9
// served_model, adapter and tenant combinations whatever the engine
// serves (requests_test.go's requestBudget counts it).
//
// Options.KernelHistograms adds one histogram per device and kernel with
// spans (K registered kernels, plus "other") and its recent summary:
// 5(K+1) native series, or (K+1)*(B+7) classic ones, 2,080 for 64
// kernels: an explicit choice, not a default.
// With kernel spans from the tracer, K counts the traced names with a
// label (gpuspans.Options.KernelLabels).
//
// # Recent quantiles
//
// gpuspans_lane_recent_duration_seconds{device, lane} is a summary: the
// 0.5, 0.9 and 0.99 quantile of a lane's spans landed in the last minute
// (the hub's recent windows begun within it: 50 to 60 s of spans), from
// the windows' schema-5 buckets: within 1.1% of the spans' own quantile,
// whatever buckets Prometheus stores, so a classic-only server gets a
// p99 it can alert on, as quantile="0.5|0.9|0.99"; its _count and _sum
// are, as a summary's, the lane's totals since the hub began (the lane
// histogram's too). gpuspans_kernel_recent_duration_seconds{device,
// kernel} (with Options.KernelHistograms) and
// gpuspans_kernel_gap_recent_seconds{device} (with kernel windows) do the
// same for each kernel and for the gaps between kernels, at quantiles
// 0.5 and 0.99: within 1.1% while a window's kernels and gaps fit its
// cells (gpuspans.WindowCells), 2.2% or more where it had to merge them.
// Like a summary each is per device and does not aggregate: a quantile
// across GPUs comes from the histograms (histogram_quantile over sum by
// (le)). A lane, kernel or device with no span or gap in the last minute
// has none.
//
// # Exemplars
//
// Options.Exemplars gives each lane histogram an exemplar: the latest span of
// that lane exported to a tracing backend (otlp.Exporter implements
// Exemplars), with its trace_id and span_id, so that a latency spike in
// Grafana opens a trace of that lane. Exemplars reach Prometheus through
// the OpenMetrics text format or the protobuf one; serve the registry with
// promhttp.HandlerOpts.EnableOpenMetrics.
//
// To export several hubs into one registry, register each collector through
// prometheus.WrapRegistererWith with a label that tells them apart.
package prom

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/profile"
)

// Options configures a Collector; the zero Options is the default.
type Options struct {
	// NoNativeHistograms leaves the native part out of the histograms, for
	// a pipeline that mishandles it; the classic buckets are unchanged.
	NoNativeHistograms bool

	// KernelHistograms adds gpuspans_kernel_duration_seconds, one histogram
	// per device and kernel that has spans: a native series each, or B+3
	// classic ones (see the package documentation for the series budget).
	KernelHistograms bool

	// ClassicBuckets is how many classic buckets split each doubling of
	// duration from 0.95 us to 16 s: 1, 2, 4 or 8, for histogram_quantile
	// within 100%, 41%, 19% or 9% of the truth, at 24*ClassicBuckets+4
	// series per histogram. 0 means DefaultClassicBuckets. NewCollector
	// panics on another value, as prometheus.NewHistogram does on bad
	// buckets; CheckClassicBuckets checks a value that comes from a user.
	ClassicBuckets int

	// Exemplars attaches to each lane histogram the exemplar it gives for
	// its device and lane, if any (otlp.Exporter is one); nil attaches none.
	Exemplars Exemplars
}

// Bounds of CheckConstLabels: labels, and bytes of a name and of a value.
const (
	MaxConstLabels     = 16
	MaxConstLabelName  = 128
	MaxConstLabelValue = 1024
)

// reservedLabels are the label names gpuspans' own families use, and the
// target labels Prometheus sets: a constant label taking one would clash.
var reservedLabels = map[string]bool{
	"device": true, "lane": true, "kernel": true, "quantile": true, "le": true, "reason": true, "state": true,
	"uuid": true, "pci_bus_id": true, "name": true, "driver": true, "mode": true, "source": true, "phase": true, "level": true, "cause": true,
	"job": true, "instance": true,
	"device_model": true, "previous_build": true, "change": true,
	"served_model": true, "adapter": true, "tenant": true, "part": true, "term": true, "method": true, "status": true,
}

// CheckConstLabels reports what is wrong with labels meant for every
// series of the hub's families, as an engine puts a model name on all its
// metrics (vLLM's model_name): at most MaxConstLabels, each name a
// Prometheus label name that neither begins with "__" nor is one of the
// families' own labels (device, lane, kernel, quantile, le, reason, ...)
// or a target label (job, instance), of at most 128 bytes, each value
// non-empty valid UTF-8 of at most 1,024 bytes (every series carries them:
// unbounded, a 1 MiB name made every scrape 71 MiB). A Go engine that registers NewCollector itself
// puts such labels on with prometheus.WrapRegistererWith (the
// client_golang convention); gpuspanshttp.Options.ConstLabels, the C ABI's
// gs_hub_set_metric_labels, Python's Hub.set_metric_labels and the demo's
// --metric_labels do it for the HTTP surface they serve. Constant labels
// add no series: each series carries them.
func CheckConstLabels(labels map[string]string) error {
	if len(labels) > MaxConstLabels {
		return fmt.Errorf("%d constant labels: at most %d", len(labels), MaxConstLabels)
	}
	names := make([]string, 0, len(labels))
	for n := range labels {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := labels[n]
		switch {
		case len(n) > MaxConstLabelName:
			return fmt.Errorf("constant label name %q... of %d bytes: at most %d", n[:32], len(n), MaxConstLabelName)
		case !validLabelName(n):
			return fmt.Errorf("constant label name %q: want letters, digits and underscores, not starting with a digit", n)
		case strings.HasPrefix(n, "__"):
			return fmt.Errorf("constant label name %q: names beginning with __ are Prometheus's", n)
		case reservedLabels[n]:
			return fmt.Errorf("constant label name %q: gpuspans' families or Prometheus's targets use it", n)
		case v == "":
			return fmt.Errorf("constant label %s: empty value (Prometheus reads it as no label)", n)
		case !utf8.ValidString(v):
			return fmt.Errorf("constant label %s: value is not valid UTF-8", n)
		case len(v) > MaxConstLabelValue:
			return fmt.Errorf("constant label %s: value of %d bytes, at most %d", n, len(v), MaxConstLabelValue)
		}
	}
	return nil
}

func validLabelName(n string) bool {
	for i, c := range n {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return n != ""
}

// Classic bucket resolutions Options.ClassicBuckets takes, in buckets per
// doubling of duration.
const (
	DefaultClassicBuckets = 1 // 25 bounds, histogram_quantile within a factor of 2
	MaxClassicBuckets     = 8 // 193 bounds, within 9%
)

// CheckClassicBuckets reports what is wrong with an Options.ClassicBuckets
// value, for callers that take it from a user (a flag, the C ABI). It
// refuses 0, which Options reads as DefaultClassicBuckets: a caller whose
// users may ask for the default maps their 0 first, as the C ABI does.
func CheckClassicBuckets(perDoubling int) error {
	if _, ok := layouts[perDoubling]; !ok {
		return fmt.Errorf("prom: %d classic buckets per doubling: want 1, 2, 4 or 8", perDoubling)
	}
	return nil
}

// Exemplars gives lane histograms their exemplars. Collect calls
// LaneExemplar for each lane histogram of each scrape, from the scraping
// goroutine (concurrent scrapes call it concurrently): it must be safe for
// concurrent use, quick, and must not call the hub.
type Exemplars interface {
	// LaneExemplar returns a recent span of lane on device that the
	// tracing backend has, and false when there is none.
	LaneExemplar(device int, lane string) (Exemplar, bool)
}

// Exemplar is one span that a histogram links to: its duration, and where
// to find it in a tracing backend (W3C trace and span ids, written as
// trace_id and span_id in lower-case hex).
type Exemplar struct {
	Duration time.Duration
	TraceID  [16]byte
	SpanID   [8]byte
	// Time is when the span ended on the host clock; the zero Time leaves
	// the exemplar's timestamp out (the scrape's time is used).
	Time time.Time
}

// Collector is a prometheus.Collector of one hub. Make one with
// NewCollector.
//
// It describes the same descriptors on every call and is safe for
// concurrent Collect calls (a mutex serialises them around a reused
// snapshot, so steady scrapes allocate little beyond the metrics they
// send).
type Collector struct {
	hub         *gpuspans.Hub
	classicOnly bool
	kernels     bool
	layout      *layout
	exemplars   Exemplars

	laneDuration, kernelDuration *prometheus.Desc
	laneRecent, kernelRecent     *prometheus.Desc
	gapRecent                    *prometheus.Desc
	begun, landed, dropped       *prometheus.Desc
	errored, inFlight            *prometheus.Desc
	unknownLane, laneOpen        *prometheus.Desc
	badEnd, installFailures      *prometheus.Desc
	stickyDisables, poolPanics   *prometheus.Desc
	harvestFailures, abandoned   *prometheus.Desc
	level, levelInfo, every      *prometheus.Desc
	steps, armedSteps            *prometheus.Desc
	harvests, harvestsSkipped    *prometheus.Desc
	harvestSeconds, overwritten  *prometheus.Desc
	deviceUp, deviceInfo         *prometheus.Desc
	eventOffset                  *prometheus.Desc
	kernelTiming, tracerFallback *prometheus.Desc
	windows, windowsSkipped      *prometheus.Desc
	windowsAbandoned, windowCost *prometheus.Desc
	windowsLeftAttached          *prometheus.Desc
	windowKernels, lastKernels   *prometheus.Desc
	busyRatio, busy, idle        *prometheus.Desc
	// Against the previous build's profile (Hub.StartProfile).
	timeVsBuild, busyVsBuild, kernelsVsBuild *prometheus.Desc
	laneWindowCost, unsettled                *prometheus.Desc
	kernelShare, gaps                        *prometheus.Desc
	req                                      requestDescs // requests.go

	mu   sync.Mutex
	snap gpuspans.Snapshot
}

// NewCollector returns a collector of h configured by o. It panics on a nil
// hub or a bad o.ClassicBuckets, as prometheus.MustRegister would on a
// broken collector: a scrape is the wrong time to find out.
func NewCollector(h *gpuspans.Hub, o Options) *Collector {
	if h == nil {
		panic("prom: NewCollector(nil)")
	}
	perDoubling := o.ClassicBuckets
	if perDoubling == 0 {
		perDoubling = DefaultClassicBuckets
	}
	l, ok := layouts[perDoubling]
	if !ok {
		panic(CheckClassicBuckets(perDoubling))
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("gpuspans_"+name, help, labels, nil)
	}
	c := &Collector{
		hub:         h,
		classicOnly: o.NoNativeHistograms,
		kernels:     o.KernelHistograms,
		layout:      l,
		exemplars:   o.Exemplars,

		laneDuration:   d("lane_duration_seconds", "GPU time of a serve lane's work in one step.", "device", "lane"),
		kernelDuration: d("kernel_duration_seconds", "GPU time of one kernel launch, on steps armed for kernel spans.", "device", "kernel"),
		laneRecent:     d("lane_recent_duration_seconds", "A serve lane's GPU time per step: quantiles 0.5, 0.9 and 0.99 over the last minute, within 1.1%, per device, not to be averaged across devices (histogram_quantile over lane_duration_seconds is); count and sum since the start. Absent for a lane with no span in the last minute.", "device", "lane"),
		kernelRecent:   d("kernel_recent_duration_seconds", "GPU time of one kernel launch: quantiles 0.5 and 0.99 over the last minute, within 1.1% (2.2% or more where a window's kernels outgrew its cells), per device, not to be averaged across devices; count and sum since the start. Absent for a kernel with no span in the last minute.", "device", "kernel"),
		gapRecent:      d("kernel_gap_recent_seconds", "Idle gaps between consecutive kernels of the device inside lane spans, measured by kernel windows: quantiles 0.5 and 0.99 over the last minute, within 1.1% (2.2% or more where a window's kernels outgrew its cells), not to be averaged across devices; count and sum since the start. Absent for a device with no gap measured in the last minute.", "device"),

		begun:    d("spans_begun_total", "Spans that took a ring slot: landed + dropped + errored + in flight.", "device"),
		landed:   d("spans_landed_total", "Spans harvested with a duration.", "device"),
		dropped:  d("spans_dropped_total", "Spans given up before landing, by reason (capturing: the stream was being captured into a graph; leaked: begun, never ended, reclaimed; tracer_lost: a kernel the tracer saw but could not deliver). A reason appears at its first span.", "device", "reason"),
		errored:  d("spans_errored_total", "Spans a driver call failed for. Appears at the first.", "device"),
		inFlight: d("spans_in_flight", "Spans holding a slot: open, or ended and awaiting a harvest.", "device"),

		unknownLane:     d("unknown_lane_calls_total", "LaneBegin calls with a lane index outside the hub's lanes (ignored). Appears at the first."),
		laneOpen:        d("lane_already_open_calls_total", "LaneBegin calls on a lane already open (ignored). Appears at the first."),
		badEnd:          d("bad_end_calls_total", "KernelEnd calls with a span not open on this hub, or reclaimed as leaked (ignored). Appears at the first."),
		installFailures: d("install_failures_total", "Event pools that could not be opened. Appears at the first."),
		stickyDisables:  d("sticky_disables_total", "Recorders turned off by a sticky CUDA error. Appears at the first."),
		poolPanics:      d("pool_panics_total", "Recorders turned off because a method of their event pool panicked. Appears at the first."),
		harvestFailures: d("harvest_failures_total", "Harvest calls that failed as a whole without a sticky error; their spans wait for the next harvest. Appears at the first."),
		abandoned:       d("pools_abandoned_total", "Retired event pools given up on while still busy (left unclosed) to keep the hub's memory bounded. Appears at the first."),

		level:     d("level", "Telemetry level: 0 off, 1 step, 2 kernel."),
		levelInfo: d("level_info", "Telemetry level by name; always 1.", "level"),
		every:     d("kernel_span_every", "Kernel spans are armed on one step in this many."),

		kernelTiming:   d("kernel_timing_info", "Where kernel spans come from: mode as asked (events, auto, cupti) and source now (cupti: every kernel from the tracer; events: event pairs around wrapped launches); always 1.", "mode", "source"),
		tracerFallback: d("kernel_tracer_fallbacks_total", "Times the kernel tracer (CUPTI) was given up for event pairs: it could not load, was refused, or another profiler held it. The reason is in the log and on the live page. Appears at the first."),

		windows:             d("kernel_windows_total", "Kernel windows opened: CUPTI attached for a few steps, then detached. Appears at the first."),
		windowsSkipped:      d("kernel_windows_skipped_total", "Kernel windows due but not opened because another CUPTI client (a profiler) held it; kernel spans came from event pairs meanwhile. Appears at the first."),
		windowsAbandoned:    d("kernel_windows_abandoned_total", "Kernel windows left attached because their thread stopped stepping; windows are off after one. Appears at the first."),
		windowsLeftAttached: d("kernel_windows_left_attached_total", "Kernel windows left attached because another thread replayed CUDA graphs during them (a detach then could lose the CUDA context); windows are off after one. Appears at the first."),
		windowCost:          d("kernel_window_seconds", "What opening (CUPTI's attach) and closing (flush and detach) a kernel window cost the stepping thread. Appears at the first window.", "phase"),
		windowKernels:       d("kernel_window_kernels_total", "Kernel records landed from kernel windows. Appears at the first window."),
		lastKernels:         d("kernel_window_last_kernels", "How many kernel records the newest finished kernel window landed. Appears at the first."),

		timeVsBuild:    d("lane_time_vs_previous_build_ratio", "A lane's time per step outside kernel windows over the previous build's, from the profile this build compares with (Hub.StartProfile, gs_hub_start_profile); 1.2: 20% slower. Absent until both builds have 5 windows of the lane.", "device_model", "lane", "previous_build"),
		busyVsBuild:    d("lane_busy_vs_previous_build_ratio", "A lane's busy time per step (kernels running) over the previous build's, as lane_time_vs_previous_build_ratio.", "device_model", "lane", "previous_build"),
		kernelsVsBuild: d("lane_kernels_changed_vs_previous_build", "Kernel names of a lane, or launches of one name, whose time per step changed against the previous build, by change (grew, shrank, new, gone; at most 10 a lane are counted, the largest), as lane_time_vs_previous_build_ratio.", "device_model", "lane", "previous_build", "change"),
		busyRatio:      d("lane_busy_ratio", "Fraction of a lane's served time in which some kernel of the device ran, over the lane's latest 16 settled kernel windows: busy inside the windows over the lane's time outside them (a window slows the step it measures); the rest is idle (lane_idle_seconds_total says why). Absent until a window settled for the lane, and while the lane has had no span for a minute.", "device", "lane"),
		busy:           d("lane_busy_seconds_total", "Time some kernel of the device ran inside a lane's spans, over the spans of settled kernel windows (not every span: divide by lane_busy_seconds_total + the sum of lane_idle_seconds_total, not by the lane histogram's sum). Absent until a kernel window measured the lane.", "device", "lane"),
		idle:           d("lane_idle_seconds_total", "Time no kernel of the device ran inside a lane's served time, over the spans of settled kernel windows, by cause: host (the device ran out of work before the next launch call returned), launch (work queued, not yet started), copy (copies or memsets ran, no kernel), wait (queued behind another stream or an event), other. The windows' own cost is not in it (lane_window_cost_seconds_total). Absent until a kernel window measured the lane.", "device", "lane", "cause"),
		laneWindowCost: d("lane_window_cost_seconds_total", "What kernel windows added to a lane's spans, over the spans of settled windows: their event time less the lane's time outside windows around them (CUPTI attached slows every launch). Absent until a kernel window measured the lane.", "device", "lane"),
		unsettled:      d("lane_unsettled_windows_total", "Kernel windows whose lane time outside windows could not be estimated (it moved by more than 10% across the window, or the lane ran no span outside windows near it); their spans are left out of the lane's busy ratio and GPU time totals. Appears at the first.", "device", "lane"),
		kernelShare:    d("lane_kernel_share_ratio", "A kernel's share of the kernel time inside a lane in the latest kernel window that measured it: the lane's top 3 kernels. Absent until a kernel window measured the lane, and while the lane has had no span for a minute.", "device", "lane", "kernel"),
		gaps:           d("kernel_gap_seconds", "Idle gaps between consecutive kernels of the device inside lane spans, in kernel windows: many near the launch latency is a launch-bound engine, a few long ones a host-bound one. Absent until a kernel window measured a gap.", "device"),

		steps:           d("steps_total", "Engine steps counted (at level step and above)."),
		armedSteps:      d("armed_steps_total", "Steps armed for kernel spans. Appears at the first."),
		harvests:        d("harvests_total", "Harvests the hub has run: with BeginStep at level kernel, or on RunHarvester's ticks."),
		harvestsSkipped: d("harvests_skipped_total", "Harvests skipped because the harvest lock was held. Appears at the first."),
		harvestSeconds:  d("harvest_seconds_total", "Host time spent in harvests."),
		overwritten:     d("recent_spans_overwritten_total", "Spans overwritten in the hub's recent-span ring before any reader read them. Appears at the first."),

		deviceUp:    d("device_up", "1 if the device's installed recorder is recording spans, else 0.", "device"),
		eventOffset: d("event_offset_seconds", "How much longer an event pair reads than the kernel between them, measured when the pool opened; subtracted from kernel spans unless the hub reports them raw. Absent until measured.", "device"),
		req:         newRequestDescs(d),
		deviceInfo:  d("device_info", "The device's identity (as DCGM and nvidia-smi write it), the driver's CUDA version and its recorder's state: pending, open, failed, dead or retiring; always 1. Why spans are off is in the log and on the live page.", "device", "state", "uuid", "pci_bus_id", "name", "driver"),
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.laneDuration, c.kernelDuration, c.laneRecent, c.kernelRecent, c.gapRecent,
		c.begun, c.landed, c.dropped, c.errored, c.inFlight,
		c.unknownLane, c.laneOpen, c.badEnd, c.installFailures, c.stickyDisables,
		c.poolPanics, c.harvestFailures, c.abandoned,
		c.level, c.levelInfo, c.every, c.kernelTiming, c.tracerFallback,
		c.windows, c.windowsSkipped, c.windowsAbandoned, c.windowsLeftAttached, c.windowCost, c.windowKernels, c.lastKernels,
		c.busyRatio, c.busy, c.idle, c.laneWindowCost, c.unsettled, c.kernelShare, c.gaps,
		c.timeVsBuild, c.busyVsBuild, c.kernelsVsBuild,
		c.steps, c.armedSteps, c.harvests, c.harvestsSkipped, c.harvestSeconds, c.overwritten,
		c.deviceUp, c.deviceInfo, c.eventOffset,
	} {
		ch <- d
	}
	for _, d := range c.req.all() {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It takes one hub snapshot, which
// takes the hub's harvest lock briefly; span paths never wait for it.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.snap
	c.hub.SnapshotInto(s)

	for i := range s.Lanes {
		if a := &s.Lanes[i]; a.Count > 0 {
			c.histogram(ch, c.laneDuration, a, c.exemplars)
		}
	}
	if c.kernels {
		for i := range s.Kernels {
			if a := &s.Kernels[i]; a.Count > 0 {
				c.histogram(ch, c.kernelDuration, a, nil)
			}
		}
	}
	live := c.recent(ch, s)

	k := &s.Counters
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	// lazy sends a counter from its first count on (see the package
	// documentation).
	lazy := func(d *prometheus.Desc, v uint64, labels ...string) {
		if v > 0 {
			counter(d, v, labels...)
		}
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for i := range s.PerDevice {
		d := &s.PerDevice[i]
		dev := strconv.Itoa(d.Device)
		counter(c.begun, d.Begun, dev)
		counter(c.landed, d.Landed, dev)
		for r, n := range d.Dropped {
			lazy(c.dropped, n, dev, gpuspans.DropReason(r).String())
		}
		lazy(c.errored, d.Errored, dev)
		gauge(c.inFlight, float64(d.InFlight), dev)
	}
	lazy(c.unknownLane, k.UnknownLane)
	lazy(c.laneOpen, k.LaneAlreadyOpen)
	lazy(c.badEnd, k.BadEnd)
	lazy(c.installFailures, k.InstallFailures)
	lazy(c.stickyDisables, k.StickyDisables)
	lazy(c.poolPanics, k.PoolPanics)
	lazy(c.harvestFailures, k.HarvestFailures)
	lazy(c.abandoned, k.AbandonedPools)

	gauge(c.level, float64(s.Level))
	gauge(c.levelInfo, 1, s.Level.String())
	gauge(c.every, float64(s.KernelSpanEvery))
	source := "events"
	if s.KernelTiming.Tracing {
		source = "cupti"
	}
	gauge(c.kernelTiming, 1, s.KernelTiming.Mode.String(), source)
	lazy(c.tracerFallback, s.KernelTiming.Fallbacks)
	if w := &s.KernelTiming.Windows; w.Opened > 0 {
		counter(c.windows, w.Opened)
		counter(c.windowKernels, w.Kernels)
		ch <- c.windowCostHistogram(&w.OpenTime, "open")
		ch <- c.windowCostHistogram(&w.CloseTime, "close")
		if w.Last.Seq > 0 {
			gauge(c.lastKernels, float64(w.Last.Kernels))
		}
	}
	lazy(c.windowsSkipped, s.KernelTiming.Windows.Skipped)
	lazy(c.windowsAbandoned, s.KernelTiming.Windows.Abandoned)
	lazy(c.windowsLeftAttached, s.KernelTiming.Windows.LeftAttached)
	counter(c.steps, s.Step)
	lazy(c.armedSteps, s.ArmedSteps)
	counter(c.harvests, k.Harvests)
	lazy(c.harvestsSkipped, k.HarvestsSkipped)
	ch <- prometheus.MustNewConstMetric(c.harvestSeconds, prometheus.CounterValue, k.HarvestTime.Seconds())
	lazy(c.overwritten, k.RecentOverwritten)

	c.devices(ch, s.Devices)
	c.gpuTime(ch, &s.GPUTime, live)
	c.sinceBuild(ch, s.Profile.Since)
	c.requests(ch, &s.Requests)
}

// sinceBuild sends each compared lane's time and busy time per step
// against the previous build's, and its kernels that changed: 6 series a
// lane, once compared.
func (c *Collector) sinceBuild(ch chan<- prometheus.Metric, d *profile.Diff) {
	if d == nil {
		return
	}
	before := label(d.Before) // read from a file: bounded like the identity labels
	for i := range d.Lanes {
		l := &d.Lanes[i]
		model := label(l.Model)
		if l.Time[0] > 0 {
			ch <- prometheus.MustNewConstMetric(c.timeVsBuild, prometheus.GaugeValue, l.Time[1]/l.Time[0], model, l.Lane, before)
		}
		if l.Busy[0] > 0 {
			ch <- prometheus.MustNewConstMetric(c.busyVsBuild, prometheus.GaugeValue, l.Busy[1]/l.Busy[0], model, l.Lane, before)
		}
		for _, change := range []profile.Change{profile.Grew, profile.Shrank, profile.New, profile.Gone} {
			n := 0
			for _, k := range l.Kernels {
				if k.Change == change {
					n++
				}
			}
			ch <- prometheus.MustNewConstMetric(c.kernelsVsBuild, prometheus.GaugeValue, float64(n), model, l.Lane, before, string(change))
		}
	}
}

// sharesPerLane is how many kernels lane_kernel_share_ratio names per lane.
const sharesPerLane = 3

// gapLayout is kernel_gap_seconds' classic buckets: 2^-19 s (1.9 us) to
// 2^-3 s (125 ms), a factor of 4 apart, 9 bounds and +Inf, so a
// classic-only server stores 12 series per device.
var gapLayout = func() *layout {
	l := newLayout(-19<<gpuspans.Schema, -3<<gpuspans.Schema, 2<<gpuspans.Schema)
	return &l
}()

// gpuTime sends what kernel windows measured: per lane its busy ratio,
// busy, idle by cause and window cost totals, unsettled windows and top
// kernels, and per device its gaps. The ratio and the shares describe the
// lane's latest windows: like its recent quantiles they are absent for a
// lane not in live, with no span in the last minute (a lane that stopped),
// where the counters stay, as counters do.
func (c *Collector) gpuTime(ch chan<- prometheus.Metric, g *gpuspans.GPUTime, live map[seriesName]bool) {
	for i := range g.Lanes {
		l := &g.Lanes[i]
		dev := strconv.Itoa(l.Device)
		now := live[seriesName{l.Device, l.Lane}]
		if l.RecentServed > 0 && now {
			ch <- prometheus.MustNewConstMetric(c.busyRatio, prometheus.GaugeValue, l.BusyRatio(), dev, l.Lane)
		}
		ch <- prometheus.MustNewConstMetric(c.busy, prometheus.CounterValue, l.ServedBusy.Seconds(), dev, l.Lane)
		for _, p := range causes(&l.Causes) {
			ch <- prometheus.MustNewConstMetric(c.idle, prometheus.CounterValue, p.d.Seconds(), dev, l.Lane, p.cause)
		}
		ch <- prometheus.MustNewConstMetric(c.laneWindowCost, prometheus.CounterValue, l.WindowCost.Seconds(), dev, l.Lane)
		if l.Unsettled > 0 {
			ch <- prometheus.MustNewConstMetric(c.unsettled, prometheus.CounterValue, float64(l.Unsettled), dev, l.Lane)
		}
		if now {
			for _, k := range l.Kernels[:min(len(l.Kernels), sharesPerLane)] {
				ch <- prometheus.MustNewConstMetric(c.kernelShare, prometheus.GaugeValue, k.Share, dev, l.Lane, k.Kernel)
			}
		}
	}
	for i := range g.Gaps {
		if a := &g.Gaps[i]; a.Count > 0 {
			ch <- &histogram{
				desc:   c.gaps,
				labels: prometheus.MakeLabelPairs(c.gaps, []string{strconv.Itoa(a.Device)}),
				hist:   gapLayout.histogram(a, !c.classicOnly),
			}
		}
	}
}

// causePart is one cause of idle time and its label value.
type causePart struct {
	cause string
	d     time.Duration
}

// causes lists c's parts with their cause label values, in a fixed order.
func causes(c *gpuspans.IdleCauses) [5]causePart {
	return [5]causePart{{"host", c.Host}, {"launch", c.Launch}, {"copy", c.Copy}, {"wait", c.Wait}, {"other", c.Other}}
}

// seriesName is a summary's device and name: a lane's, a kernel's, or
// none for a device's gaps.
type seriesName struct {
	device int
	name   string
}

// histogram sends a as a histogram, built now: the snapshot is reused by
// the next Collect while the registry may still be writing. src, when
// set, gives its exemplar.
func (c *Collector) histogram(ch chan<- prometheus.Metric, d *prometheus.Desc, a *gpuspans.Aggregate, src Exemplars) {
	h := &histogram{
		desc:   d,
		labels: prometheus.MakeLabelPairs(d, []string{strconv.Itoa(a.Device), a.Name}),
		hist:   c.layout.histogram(a, !c.classicOnly),
	}
	if src != nil {
		if ex, ok := src.LaneExemplar(a.Device, a.Name); ok {
			c.layout.attach(h.hist, a, &ex)
		}
	}
	ch <- h
}

// windowCostLayout is kernel_window_seconds' classic buckets, 2 ms to 128
// ms (2^-9, then 2^-7 to 2^-3 s): edges of the hub's buckets, so the counts
// are exact, and 9 series a phase keep classic-only servers within their
// budget. Native servers store the hub's own buckets, one series a phase.
var windowCostLayout = func() *layout {
	var l layout
	for _, e := range []int{-9, -7, -6, -5, -4, -3} {
		k := e << gpuspans.Schema
		l.bounds = append(l.bounds, gpuspans.KeyUpperBound(k))
		l.last = append(l.last, k-gpuspans.MinBucketKey)
	}
	return &l
}()

// windowCostHistogram is a window cost histogram of a.
func (c *Collector) windowCostHistogram(a *gpuspans.Aggregate, phase string) prometheus.Metric {
	return &histogram{
		desc:   c.windowCost,
		labels: prometheus.MakeLabelPairs(c.windowCost, []string{phase}),
		hist:   windowCostLayout.histogram(a, !c.classicOnly),
	}
}

// devices sends one up and one info series per device. A device being
// replaced has several recorders; its series describe the installed one,
// or, once uninstalled, the newest retiring one, so that every device has
// exactly one series of each.
func (c *Collector) devices(ch chan<- prometheus.Metric, devs []gpuspans.DeviceStatus) {
	var pick [gpuspans.MaxDevices]int // per device: index+1 into devs, or 0
	for i := range devs {
		dev := devs[i].Device
		if dev < 0 || dev >= gpuspans.MaxDevices {
			continue
		}
		// devs lists a device's recorders oldest first.
		if p := pick[dev] - 1; p < 0 || devs[i].State != gpuspans.DeviceRetiring || devs[p].State == gpuspans.DeviceRetiring {
			pick[dev] = i + 1
		}
	}
	for _, p := range pick {
		if p == 0 {
			continue
		}
		d := &devs[p-1]
		dev := strconv.Itoa(d.Device)
		up := 0.0
		if d.State == gpuspans.DeviceOpen {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.deviceUp, prometheus.GaugeValue, up, dev)
		if d.EventOffset >= 0 {
			ch <- prometheus.MustNewConstMetric(c.eventOffset, prometheus.GaugeValue, d.EventOffset.Seconds(), dev)
		}
		id := d.Identity
		ch <- prometheus.MustNewConstMetric(c.deviceInfo, prometheus.GaugeValue, 1, dev, d.State.String(), label(id.UUID), label(id.PCIBusID), label(id.Name), label(id.Driver))
	}
}

// maxLabelLen bounds identity label values, in bytes: they come from the
// driver, and a label value is stored with every sample.
const maxLabelLen = 96

// label is s as a label value: valid UTF-8, at most maxLabelLen bytes, cut
// on a character boundary.
func label(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxLabelLen {
		return s
	}
	n := maxLabelLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

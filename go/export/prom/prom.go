// Package prom exports a gpuspans hub to Prometheus.
//
// The Collector holds no metric state of its own: each scrape takes one hub
// snapshot and turns it into const metrics, the shape of client_golang's
// collectors.NewDBStatsCollector. Label values stay bounded: lanes are
// fixed at hub creation, and the hub folds unregistered kernels into
// "other".
//
// Each histogram series (gpuspans_lane_duration_seconds,
// gpuspans_kernel_duration_seconds) carries two forms of the same counts,
// both exact copies of the hub's aggregate: a native histogram of schema 5
// (the hub's own buckets, 2.2% wide, so histogram_quantile is within about
// 1%), and classic buckets on a subset of the hub's bounds (lanes: 2^(1/8)
// apart from 7.6 us to 16 s, histogram_quantile within 10%; kernels:
// 2^(1/2) apart from 0.95 us to 125 ms). Prometheus stores the native form
// when scraping with native histograms on, the classic one otherwise, and
// both with scrape_classic_histograms.
//
// Series per device, with L lanes, K registered kernels (plus "other"),
// Bl = 169 lane bounds and Bk = 35 kernel bounds (each histogram adds
// _bucket{le="+Inf"}, _sum and _count) and C = 30 other series (18 hub-wide
// counters and gauges; per device, the 9 span outcome series, device_up,
// device_info and event_offset_seconds):
//
//	series_per_device = L*(Bl+3) + (K+1)*(Bk+3) + C
//	                  = 2*172 + 65*38 + 30 = 2,844 for 2 lanes and 64 kernels
//
// plus one native series per histogram (67) where Prometheus keeps both
// forms: 2,911, under a budget of 3,000. With kernel spans from the tracer,
// K counts the traced names with a label (Options.KernelLabels). Lanes and kernels with no span yet
// are exported with zero counts, so series do not appear and vanish.
//
// To export several hubs into one registry, register each collector through
// prometheus.WrapRegistererWith with a label that tells them apart.
package prom

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Option configures a Collector.
type Option func(*config)

type config struct {
	classicOnly bool
}

// WithoutNativeHistograms leaves the native part out of the histograms,
// for a pipeline that mishandles it; the classic buckets are unchanged.
func WithoutNativeHistograms() Option {
	return func(c *config) { c.classicOnly = true }
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

	laneDuration, kernelDuration *prometheus.Desc
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

	mu   sync.Mutex
	snap gpuspans.Snapshot
}

// NewCollector returns a collector of h. It panics on a nil hub, as
// prometheus.MustRegister would on a broken collector: a scrape is the
// wrong time to find out.
func NewCollector(h *gpuspans.Hub, opts ...Option) *Collector {
	if h == nil {
		panic("prom: NewCollector(nil)")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("gpuspans_"+name, help, labels, nil)
	}
	c := &Collector{
		hub:         h,
		classicOnly: cfg.classicOnly,

		laneDuration:   d("lane_duration_seconds", "GPU time of a serve lane's work in one step.", "device", "lane"),
		kernelDuration: d("kernel_duration_seconds", "GPU time of one kernel launch, on steps armed for kernel spans.", "device", "kernel"),

		begun:    d("spans_begun_total", "Spans that took a ring slot: landed + dropped + errored + in flight.", "device"),
		landed:   d("spans_landed_total", "Spans harvested with a duration.", "device"),
		dropped:  d("spans_dropped_total", "Spans given up before landing, by reason (capturing: the stream was being captured into a graph; leaked: begun, never ended, reclaimed; tracer_lost: a kernel the tracer saw but could not deliver).", "device", "reason"),
		errored:  d("spans_errored_total", "Spans a driver call failed for.", "device"),
		inFlight: d("spans_in_flight", "Spans holding a slot: open, or ended and awaiting a harvest.", "device"),

		unknownLane:     d("unknown_lane_calls_total", "LaneBegin calls with a lane index outside the hub's lanes (ignored)."),
		laneOpen:        d("lane_already_open_calls_total", "LaneBegin calls on a lane already open (ignored)."),
		badEnd:          d("bad_end_calls_total", "KernelEnd calls with a span not open on this hub, or reclaimed as leaked (ignored)."),
		installFailures: d("install_failures_total", "Event pools that could not be opened."),
		stickyDisables:  d("sticky_disables_total", "Recorders turned off by a sticky CUDA error."),
		poolPanics:      d("pool_panics_total", "Recorders turned off because a method of their event pool panicked."),
		harvestFailures: d("harvest_failures_total", "Harvest calls that failed as a whole without a sticky error; their spans wait for the next harvest."),
		abandoned:       d("pools_abandoned_total", "Retired event pools given up on while still busy (left unclosed) to keep the hub's memory bounded."),

		level:     d("level", "Telemetry level: 0 off, 1 step, 2 kernel."),
		levelInfo: d("level_info", "Telemetry level by name; always 1.", "level"),
		every:     d("kernel_span_every", "Kernel spans are armed on one step in this many."),

		kernelTiming:   d("kernel_timing_info", "Where kernel spans come from: mode as asked (events, auto, cupti) and source now (cupti: every kernel from the tracer; events: event pairs around wrapped launches); always 1.", "mode", "source"),
		tracerFallback: d("kernel_tracer_fallbacks_total", "Times the kernel tracer (CUPTI) was given up for event pairs: it could not load, was refused, or another profiler held it. The reason is in the log and on the live page."),

		steps:           d("steps_total", "Engine steps counted (at level step and above)."),
		armedSteps:      d("armed_steps_total", "Steps armed for kernel spans."),
		harvests:        d("harvests_total", "Harvests run."),
		harvestsSkipped: d("harvests_skipped_total", "Harvests skipped because the harvest lock was held."),
		harvestSeconds:  d("harvest_seconds_total", "Host time spent in harvests."),
		overwritten:     d("recent_spans_overwritten_total", "Spans overwritten in the hub's recent-span ring before any reader read them."),

		deviceUp:    d("device_up", "1 if the device's installed recorder is recording spans, else 0.", "device"),
		eventOffset: d("event_offset_seconds", "How much longer an event pair reads than the kernel between them, measured when the pool opened; subtracted from kernel spans unless the hub reports them raw. Absent until measured.", "device"),
		deviceInfo:  d("device_info", "The device's identity (as DCGM and nvidia-smi write it) and its recorder's state: pending, open, failed, dead or retiring; always 1. Why spans are off is in the log and on the live page.", "device", "state", "uuid", "pci_bus_id", "name"),
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.laneDuration, c.kernelDuration,
		c.begun, c.landed, c.dropped, c.errored, c.inFlight,
		c.unknownLane, c.laneOpen, c.badEnd, c.installFailures, c.stickyDisables,
		c.poolPanics, c.harvestFailures, c.abandoned,
		c.level, c.levelInfo, c.every, c.kernelTiming, c.tracerFallback,
		c.steps, c.armedSteps, c.harvests, c.harvestsSkipped, c.harvestSeconds, c.overwritten,
		c.deviceUp, c.deviceInfo, c.eventOffset,
	} {
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
		c.histogram(ch, c.laneDuration, &laneLayout, &s.Lanes[i])
	}
	for i := range s.Kernels {
		c.histogram(ch, c.kernelDuration, &kernelLayout, &s.Kernels[i])
	}

	k := &s.Counters
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
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
			counter(c.dropped, n, dev, gpuspans.DropReason(r).String())
		}
		counter(c.errored, d.Errored, dev)
		gauge(c.inFlight, float64(d.InFlight), dev)
	}
	counter(c.unknownLane, k.UnknownLane)
	counter(c.laneOpen, k.LaneAlreadyOpen)
	counter(c.badEnd, k.BadEnd)
	counter(c.installFailures, k.InstallFailures)
	counter(c.stickyDisables, k.StickyDisables)
	counter(c.poolPanics, k.PoolPanics)
	counter(c.harvestFailures, k.HarvestFailures)
	counter(c.abandoned, k.AbandonedPools)

	gauge(c.level, float64(s.Level))
	gauge(c.levelInfo, 1, s.Level.String())
	gauge(c.every, float64(s.KernelSpanEvery))
	source := "events"
	if s.KernelTiming.Tracing {
		source = "cupti"
	}
	gauge(c.kernelTiming, 1, s.KernelTiming.Mode.String(), source)
	counter(c.tracerFallback, s.KernelTiming.Fallbacks)
	counter(c.steps, s.Step)
	counter(c.armedSteps, s.ArmedSteps)
	counter(c.harvests, k.Harvests)
	counter(c.harvestsSkipped, k.HarvestsSkipped)
	ch <- prometheus.MustNewConstMetric(c.harvestSeconds, prometheus.CounterValue, k.HarvestTime.Seconds())
	counter(c.overwritten, k.RecentOverwritten)

	c.devices(ch, s.Devices)
}

// histogram sends a as a histogram over l, built now: the snapshot is
// reused by the next Collect while the registry may still be writing.
func (c *Collector) histogram(ch chan<- prometheus.Metric, d *prometheus.Desc, l *layout, a *gpuspans.Aggregate) {
	ch <- &histogram{
		desc:   d,
		labels: prometheus.MakeLabelPairs(d, []string{strconv.Itoa(a.Device), a.Name}),
		hist:   l.histogram(a, !c.classicOnly),
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
		ch <- prometheus.MustNewConstMetric(c.deviceInfo, prometheus.GaugeValue, 1, dev, d.State.String(), label(id.UUID), label(id.PCIBusID), label(id.Name))
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

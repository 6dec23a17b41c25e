// Package prom exports a gpuspans hub to Prometheus.
//
// The Collector holds no metric state of its own: each scrape takes one hub
// snapshot and turns it into const metrics, the shape of client_golang's
// collectors.NewDBStatsCollector. Histograms use the hub's own buckets
// (gpuspans.BucketBounds, in seconds), so they are exact copies of the
// hub's aggregates. Label values stay bounded: lanes are fixed at hub
// creation, and the hub folds unregistered kernels into "other".
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
	nativeFactor float64
}

// WithNativeHistograms adds native (exponential-bucket) histograms of lane
// and kernel durations, with the given bucket growth factor (1.1: buckets
// about 10% wide); a factor <= 1 adds none, as in
// prometheus.HistogramOpts.NativeHistogramBucketFactor.
//
// They are separate families, gpuspans_native_lane_duration_seconds and
// gpuspans_native_kernel_duration_seconds, because they cannot come from the
// hub's aggregates: client_golang 1.18 has no const native histogram, and
// the aggregates' 1-2-5 buckets cannot be split into exponential ones
// without inventing where spans fell. Instead the collector observes each
// landed span into real histograms, reading the hub's recent-span ring
// (Hub.RecentSpans) at every scrape. That ring is finite: spans overwritten
// between two scrapes are missing from the native histograms and counted in
// gpuspans_native_missed_spans_total, so size gpuspans.Options.RecentSpans
// to hold a scrape interval's spans. The classic histograms stay exact
// whatever happens. Another reader of RecentSpans on the same hub does not
// disturb this one (each reader keeps its own position), but it does share
// Counters.RecentOverwritten.
func WithNativeHistograms(factor float64) Option {
	return func(c *config) { c.nativeFactor = factor }
}

// Collector is a prometheus.Collector of one hub. Make one with
// NewCollector.
//
// It describes the same descriptors on every call and is safe for
// concurrent Collect calls (a mutex serialises them around a reused
// snapshot, so steady scrapes allocate little beyond the metrics they
// send).
type Collector struct {
	hub    *gpuspans.Hub
	bounds []float64 // histogram upper bounds, seconds

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

	mu     sync.Mutex
	snap   gpuspans.Snapshot
	native *native // nil without WithNativeHistograms
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
		hub: h,

		laneDuration:   d("lane_duration_seconds", "GPU time of a serve lane's work in one step.", "device", "lane"),
		kernelDuration: d("kernel_duration_seconds", "GPU time of one kernel launch, on steps armed for kernel spans.", "device", "kernel"),

		begun:    d("spans_begun_total", "Spans that took a ring slot: landed + dropped + errored + in flight."),
		landed:   d("spans_landed_total", "Spans harvested with a duration."),
		dropped:  d("spans_dropped_total", "Spans given up before landing, by reason (capturing: the stream was being captured into a graph; leaked: begun, never ended, reclaimed).", "reason"),
		errored:  d("spans_errored_total", "Spans a driver call failed for."),
		inFlight: d("spans_in_flight", "Spans holding a slot: open, or ended and awaiting a harvest."),

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
	for _, b := range gpuspans.BucketBounds() {
		c.bounds = append(c.bounds, b.Seconds())
	}
	if cfg.nativeFactor > 1 {
		c.native = newNative(cfg.nativeFactor)
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
		c.level, c.levelInfo, c.every,
		c.steps, c.armedSteps, c.harvests, c.harvestsSkipped, c.harvestSeconds, c.overwritten,
		c.deviceUp, c.deviceInfo, c.eventOffset,
	} {
		ch <- d
	}
	if c.native != nil {
		c.native.describe(ch)
	}
}

// Collect implements prometheus.Collector. It takes one hub snapshot; with
// native histograms it also reads the spans landed since the last Collect.
// Both take the hub's harvest lock briefly; span paths never wait for it.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.snap
	c.hub.SnapshotInto(s)

	for i := range s.Lanes {
		c.histogram(ch, c.laneDuration, &s.Lanes[i])
	}
	for i := range s.Kernels {
		c.histogram(ch, c.kernelDuration, &s.Kernels[i])
	}

	k := &s.Counters
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter(c.begun, k.Begun)
	counter(c.landed, k.Landed)
	for r, n := range k.Dropped {
		counter(c.dropped, n, gpuspans.DropReason(r).String())
	}
	counter(c.errored, k.Errored)
	gauge(c.inFlight, float64(k.InFlight))
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
	counter(c.steps, s.Step)
	counter(c.armedSteps, s.ArmedSteps)
	counter(c.harvests, k.Harvests)
	counter(c.harvestsSkipped, k.HarvestsSkipped)
	ch <- prometheus.MustNewConstMetric(c.harvestSeconds, prometheus.CounterValue, k.HarvestTime.Seconds())
	counter(c.overwritten, k.RecentOverwritten)

	c.devices(ch, s.Devices)

	if c.native != nil {
		c.native.collect(ch, c.hub)
	}
}

// histogram sends a as a const histogram; the hub's buckets are per bucket,
// Prometheus's cumulative.
func (c *Collector) histogram(ch chan<- prometheus.Metric, d *prometheus.Desc, a *gpuspans.Aggregate) {
	buckets := make(map[float64]uint64, len(c.bounds))
	var cum uint64
	for i, ub := range c.bounds {
		cum += a.Buckets[i]
		buckets[ub] = cum
	}
	ch <- prometheus.MustNewConstHistogram(d, a.Count, a.Sum.Seconds(), buckets, strconv.Itoa(a.Device), a.Name)
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

package otlp

import "github.com/prometheus/client_golang/prometheus"

// Collector is a prometheus.Collector of an exporter's Stats, as
// gpuspans_otlp_* series. Register it beside the hub's collector (package
// prom): it holds no state and takes no lock of the hub.
type Collector struct {
	e                                *Exporter
	read, unsampled, dropped, queued *prometheus.Desc
	capacity, exported, exports      *prometheus.Desc
	exportErrors, linksDropped       *prometheus.Desc
	linkStepsLost, requestSpans      *prometheus.Desc
}

// Collector returns the exporter's Prometheus collector.
func (e *Exporter) Collector() *Collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("gpuspans_otlp_"+name, help, labels, nil)
	}
	return &Collector{
		e:             e,
		read:          d("spans_read_total", "Landed spans the OTLP exporter read from the hub."),
		unsampled:     d("spans_unsampled_total", "Spans read and not exported: their step was not sampled (or kernel spans are off)."),
		dropped:       d("spans_dropped_total", "Spans not exported, by reason (missed: overwritten in the hub's ring before they were read; unplaced: no host start time; queue_full; export_failed: the request failed; shutdown: still queued at Close).", "reason"),
		queued:        d("queue_spans", "Spans waiting on the export queue."),
		capacity:      d("queue_capacity_spans", "The export queue's bound, in spans."),
		exported:      d("spans_exported_total", "Spans the collector accepted (GPU spans, step roots and request spans)."),
		exports:       d("exports_total", "Export requests sent."),
		exportErrors:  d("export_errors_total", "Export requests that failed; their spans were dropped."),
		linksDropped:  d("links_dropped_total", "Request links past the per-step cap."),
		linkStepsLost: d("link_steps_lost_total", "Steps whose request links were overwritten before their spans were exported."),
		requestSpans:  d("request_spans_total", "GPU time spans of finished requests put on the export queue, each under its request's span."),
	}
}

// Describe sends the descriptors of every series Collect sends.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.read, c.unsampled, c.dropped, c.queued, c.capacity, c.exported, c.exports, c.exportErrors, c.linksDropped, c.linkStepsLost, c.requestSpans} {
		ch <- d
	}
}

// Collect sends the exporter's current Stats.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.e.Stats()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.read, s.Read)
	counter(c.unsampled, s.Unsampled)
	for _, r := range []struct {
		reason string
		v      uint64
	}{{"missed", s.Missed}, {"unplaced", s.Unplaced}, {"queue_full", s.QueueFull}, {"export_failed", s.ExportFailed}, {"shutdown", s.Shutdown}} {
		counter(c.dropped, r.v, r.reason)
	}
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(s.Queued))
	ch <- prometheus.MustNewConstMetric(c.capacity, prometheus.GaugeValue, float64(c.e.QueueCapacity()))
	counter(c.exported, s.Exported)
	counter(c.exports, s.Exports)
	counter(c.exportErrors, s.ExportErrors)
	counter(c.linksDropped, s.LinksDropped)
	counter(c.linkStepsLost, s.LinkStepsLost)
	counter(c.requestSpans, s.RequestSpans)
}

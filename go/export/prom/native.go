package prom

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// nativeMaxBuckets bounds each native histogram; past it client_golang
// widens the buckets rather than grow. A lane's or kernel's spans rarely
// spread over more than a few doublings, which at factor 1.1 (8 buckets a
// doubling) is far below this.
const nativeMaxBuckets = 160

// native holds the native histograms of WithNativeHistograms and the
// position in the hub's recent-span ring they have been fed up to. Guarded
// by the Collector's mutex.
type native struct {
	lanes, kernels *prometheus.HistogramVec
	missedDesc     *prometheus.Desc
	missed         uint64
	cursor         uint64 // Seq of the last span observed
	spans          []gpuspans.Span
}

func newNative(factor float64) *native {
	vec := func(name, help, label string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                           name,
			Help:                           help,
			NativeHistogramBucketFactor:    factor,
			NativeHistogramMaxBucketNumber: nativeMaxBuckets,
		}, []string{"device", label})
	}
	return &native{
		lanes: vec("gpuspans_native_lane_duration_seconds",
			"GPU time of a serve lane's work in one step, as a native histogram fed from the recent-span ring.", "lane"),
		kernels: vec("gpuspans_native_kernel_duration_seconds",
			"GPU time of one kernel launch, as a native histogram fed from the recent-span ring.", "kernel"),
		missedDesc: prometheus.NewDesc("gpuspans_native_missed_spans_total",
			"Landed spans the native histograms miss: overwritten in the recent-span ring before a scrape read them.", nil, nil),
	}
}

func (n *native) describe(ch chan<- *prometheus.Desc) {
	n.lanes.Describe(ch)
	n.kernels.Describe(ch)
	ch <- n.missedDesc
}

// collect observes the spans landed since the last call, then sends the
// histograms. Spans are numbered from 1 without gaps, so a gap in what the
// ring returns is exactly the spans overwritten before this read.
func (n *native) collect(ch chan<- prometheus.Metric, h *gpuspans.Hub) {
	n.spans = h.RecentSpans(n.cursor, n.spans[:0])
	for i := range n.spans {
		s := &n.spans[i]
		if s.Seq > n.cursor+1 {
			n.missed += s.Seq - n.cursor - 1
		}
		n.cursor = s.Seq
		d := s.DurationNs
		if d < 0 {
			d = 0 // as the hub's aggregates clamp it
		}
		vec := n.lanes
		if s.Kind == gpuspans.KindKernel {
			vec = n.kernels
		}
		vec.WithLabelValues(strconv.Itoa(s.Device), s.Name).Observe(time.Duration(d).Seconds())
	}
	n.lanes.Collect(ch)
	n.kernels.Collect(ch)
	ch <- prometheus.MustNewConstMetric(n.missedDesc, prometheus.CounterValue, float64(n.missed))
}

package prom

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Whose GPU time's series (docs/operations.md, the series budget): per
// request class (labels served_model, adapter and tenant, apart from a
// constant model_name or model an engine puts on every series; the hub labels
// gpuspans.Options.RequestLabels of them and folds the rest into "other",
// so the label values stay bounded) its GPU seconds by lane and part
// (input: the new tokens' share of each span, output: the decoded ones'),
// its busy seconds, tokens, requests finished and a histogram of GPU
// seconds per request; per device and lane its cost model and what its
// spans gave. Class counters carry no device label: they sum over a
// process's GPUs, so sum by (served_model) over a fleet is the GPU seconds
// the model took.
type requestDescs struct {
	gpuSeconds, busySeconds, tokens, finished, abandoned, perRequest, flops *prometheus.Desc
	modelInfo, modelTerm, residual, spans, unmeasured, attributed           *prometheus.Desc
	windowCost, laneFlops, laneBytes, workSeconds, workBusy, peakFlops      *prometheus.Desc
	peakBandwidth, inFlight, refused, backlog, expired, unattributed        *prometheus.Desc
}

func newRequestDescs(d func(name, help string, labels ...string) *prometheus.Desc) requestDescs {
	cls := []string{"served_model", "adapter", "tenant"}
	with := func(extra ...string) []string { return append(append([]string(nil), cls...), extra...) }
	return requestDescs{
		gpuSeconds:  d("request_gpu_seconds_total", "GPU time of the requests of a class (served_model, adapter, tenant; \"other\": the classes past the label budget): each lane span split among the requests it served by the lane's cost model, the parts adding up to the span, summed over devices; part input is the share of each span spent on their new (prompt) tokens, output on their decoded ones.", with("lane", "part")...),
		busySeconds: d("request_busy_seconds_total", "The part of request_gpu_seconds_total in which kernels ran, from each lane's busy ratio where kernel windows measured it. Appears with the first such span.", with("lane")...),
		tokens:      d("request_tokens_total", "Tokens the spans processed for the requests of a class: part input the new (prompt) tokens, output the decoded ones.", with("part")...),
		finished:    d("requests_finished_total", "Requests of a class whose records are made: ended, every span that served them landed or given up.", cls...),
		abandoned:   d("requests_abandoned_total", "Requests the hub ended itself after a minute unserved (the engine never ended them). Appears at the first.", cls...),
		perRequest:  d("request_gpu_time_seconds", "GPU time of each finished request of a class, every lane and device.", cls...),
		flops:       d("request_flops_total", "Floating-point operations engines gave their spans (LaneWork), split as the spans' time. Appears with the first.", cls...),

		modelInfo:     d("lane_cost_model_info", "A lane's cost model status: ok (spans split by it), fitting (too few steps yet), undetermined (the steps cannot price apart what tells a batch's requests apart: all batches alike) or unexplained (the batches' composition does not explain the step times); split by tokens but at ok. Always 1.", "device", "lane", "status"),
		modelTerm:     d("lane_cost_model_seconds", "A lane's fitted cost model: a step costs term fixed, plus token per token processed, plus context per context token its requests' tokens read, plus pair per attention pair (a token times the context it attends to), over its requests.", "device", "lane", "term"),
		residual:      d("lane_cost_model_residual_ratio", "The cost model's root-mean-square error over the lane's mean step time.", "device", "lane"),
		spans:         d("lane_split_spans_total", "Lane spans split among their requests, by method: model (the cost model) or tokens (the fallback while the model is not ok).", "device", "lane", "method"),
		unmeasured:    d("lane_unmeasured_spans_total", "Lane spans said to serve requests that never landed (dropped, or not within 10 s): their requests got no time. Appears at the first.", "device", "lane"),
		attributed:    d("lane_split_seconds_total", "Lane time split among requests: equal to request_gpu_seconds_total summed over the lane's classes and parts.", "device", "lane"),
		unattributed:  d("lane_unattributed_seconds_total", "Time of a lane's spans no request was said for (the engine called no ServeRequests for the lane that step): no request pays it. Appears at the first.", "device", "lane"),
		windowCost:    d("lane_split_window_cost_seconds_total", "What kernel windows added to the spans split: no request pays it. Appears at the first.", "device", "lane"),
		laneFlops:     d("lane_flops_total", "Floating-point operations engines gave a lane's spans (LaneWork). Appears at the first.", "device", "lane"),
		laneBytes:     d("lane_bytes_total", "Bytes moved engines gave a lane's spans (LaneWork). Appears at the first.", "device", "lane"),
		workSeconds:   d("lane_work_seconds_total", "Time of the lane spans given work: rate(lane_flops_total) over its rate is the achieved FLOP/s over served time. Appears with lane_flops_total.", "device", "lane"),
		workBusy:      d("lane_work_busy_seconds_total", "Busy time of the lane spans given work, where kernel windows measured it: achieved FLOP/s over busy time. Appears with its first.", "device", "lane"),
		peakFlops:     d("device_peak_flops", "The device's peak FLOP/s (dense BF16, from its model or the hub's option), for utilisation. Absent when not known.", "device"),
		peakBandwidth: d("device_peak_bandwidth_bytes", "The device's peak memory bandwidth in bytes/s. Absent when not known.", "device"),

		inFlight: d("requests_in_flight", "Requests the hub holds: in flight, or ended with spans still to land."),
		refused:  d("request_calls_refused_total", "ServeRequests, LaneWork and RequestClass calls refused (a bad id, tokens, lane or class, too many in flight): the error says which. Appears at the first."),
		backlog:  d("request_calls_dropped_total", "Calls dropped because the request inbox was full (harvests too rare). Appears at the first."),
		expired:  d("request_batches_lost_total", "Batches whose span never landed within 10 s, or given up for room. Appears at the first."),
	}
}

func (r *requestDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{r.gpuSeconds, r.busySeconds, r.tokens, r.finished, r.abandoned, r.perRequest, r.flops,
		r.modelInfo, r.modelTerm, r.residual, r.spans, r.unmeasured, r.attributed, r.windowCost, r.laneFlops, r.laneBytes,
		r.workSeconds, r.workBusy, r.peakFlops, r.peakBandwidth, r.inFlight, r.refused, r.backlog, r.expired, r.unattributed}
}

// requestLayout is request_gpu_time_seconds' classic buckets: 61 us to
// 128 s, a doubling each (2^-14 to 2^7 s), edges of the hub's buckets.
var requestLayout = func() *layout {
	l := newLayout(-14<<gpuspans.Schema, 7<<gpuspans.Schema, 1<<gpuspans.Schema)
	return &l
}()

// requests sends whose GPU time's series; none while no request was ever
// said.
func (c *Collector) requests(ch chan<- prometheus.Metric, a *gpuspans.RequestAttribution) {
	r := &c.req
	if a.Counters == (gpuspans.RequestCounters{}) && len(a.Lanes) == 0 && a.InFlight == 0 {
		return
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	lazy := func(d *prometheus.Desc, v float64, labels ...string) {
		if v > 0 {
			counter(d, v, labels...)
		}
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(r.inFlight, float64(a.InFlight))
	lazy(r.refused, float64(a.Counters.Refused))
	lazy(r.backlog, float64(a.Counters.Backlog))
	lazy(r.expired, float64(a.Counters.Expired+a.Counters.Overrun))
	var peaks [gpuspans.MaxDevices]bool
	for i := range a.Lanes {
		l := &a.Lanes[i]
		dev := strconv.Itoa(l.Device)
		gauge(r.modelInfo, 1, dev, l.Lane, l.Model.Status)
		gauge(r.modelTerm, l.Model.Fixed.Seconds(), dev, l.Lane, "fixed")
		gauge(r.modelTerm, l.Model.PerToken/1e9, dev, l.Lane, "token")
		gauge(r.modelTerm, l.Model.PerContext/1e9, dev, l.Lane, "context")
		gauge(r.modelTerm, l.Model.PerPair/1e9, dev, l.Lane, "pair")
		gauge(r.residual, l.Model.Residual, dev, l.Lane)
		counter(r.spans, float64(l.ModelSpans), dev, l.Lane, "model")
		counter(r.spans, float64(l.Spans-l.ModelSpans), dev, l.Lane, "tokens")
		counter(r.attributed, l.Time.Seconds(), dev, l.Lane)
		lazy(r.unmeasured, float64(l.Unmeasured), dev, l.Lane)
		lazy(r.windowCost, l.WindowCost.Seconds(), dev, l.Lane)
		lazy(r.unattributed, l.UnattributedTime.Seconds(), dev, l.Lane)
		if l.FLOPs > 0 || l.Bytes > 0 {
			counter(r.laneFlops, l.FLOPs, dev, l.Lane)
			counter(r.laneBytes, l.Bytes, dev, l.Lane)
			counter(r.workSeconds, l.WorkTime.Seconds(), dev, l.Lane)
			lazy(r.workBusy, l.WorkBusy.Seconds(), dev, l.Lane)
		}
		if d := l.Device; d >= 0 && d < gpuspans.MaxDevices && !peaks[d] {
			peaks[d] = true
			if l.PeakFlops > 0 {
				gauge(r.peakFlops, l.PeakFlops, dev)
			}
			if l.PeakBandwidth > 0 {
				gauge(r.peakBandwidth, l.PeakBandwidth, dev)
			}
		}
	}
	for i := range a.Classes {
		cl := &a.Classes[i]
		m, ad, t := label(cl.Model), label(cl.Adapter), label(cl.Tenant)
		for _, l := range cl.Lanes {
			counter(r.gpuSeconds, l.Input.Seconds(), m, ad, t, l.Lane, "input")
			counter(r.gpuSeconds, l.Output.Seconds(), m, ad, t, l.Lane, "output")
			lazy(r.busySeconds, l.Busy.Seconds(), m, ad, t, l.Lane)
		}
		counter(r.tokens, float64(cl.NewTokens), m, ad, t, "input")
		counter(r.tokens, float64(cl.DecodedTokens), m, ad, t, "output")
		counter(r.finished, float64(cl.Finished), m, ad, t)
		lazy(r.abandoned, float64(cl.Abandoned), m, ad, t)
		lazy(r.flops, cl.FLOPs, m, ad, t)
		if cl.PerRequest.Count > 0 {
			ch <- &histogram{desc: r.perRequest, labels: prometheus.MakeLabelPairs(r.perRequest, []string{m, ad, t}),
				hist: requestLayout.histogram(&cl.PerRequest, !c.classicOnly)}
		}
	}
}

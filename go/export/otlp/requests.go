package otlp

import (
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Attributes of a request's GPU time span (RequestSpanName): what the hub
// attributed to it (gpuspans.RequestRecord), in ns and counts.
const (
	AttrRequestID       = attribute.Key("gpuspans.request.id") // the engine's id, in decimal
	AttrRequestSteps    = attribute.Key("gpuspans.request.steps")
	AttrNewTokens       = attribute.Key("gpuspans.request.new_tokens")
	AttrDecodedTokens   = attribute.Key("gpuspans.request.decoded_tokens")
	AttrServedModel     = attribute.Key("gpuspans.served_model")
	AttrAdapter         = attribute.Key("gpuspans.adapter")
	AttrTenant          = attribute.Key("gpuspans.tenant")
	AttrGPUTime         = attribute.Key("gpuspans.gpu.time_ns")
	AttrGPUInput        = attribute.Key("gpuspans.gpu.input_ns")
	AttrGPUOutput       = attribute.Key("gpuspans.gpu.output_ns")
	AttrBusyTime        = attribute.Key("gpuspans.gpu.busy_time_ns") // the part of the time whose busy share kernel windows measured
	AttrFallbackSpans   = attribute.Key("gpuspans.request.fallback_spans")
	AttrUnmeasuredSpans = attribute.Key("gpuspans.request.unmeasured_spans")
	AttrAbandoned       = attribute.Key("gpuspans.request.abandoned")
	// RequestSpanName is the span of a request's GPU time, under the
	// request's own span (its RequestWork.TraceID and SpanID), from its
	// first lane span's begin to its last one's end.
	RequestSpanName = "gpu time"
)

// pollRequests sends the GPU time of each request finished since the last
// poll that gave its span context, as a span under that span. A request
// without one has nowhere to go; one whose spans were never placed on the
// host clock is counted as unplaced.
func (a *assembler) pollRequests() {
	e := a.e
	a.reqs = e.hub.FinishedRequests(a.reqLast, a.reqs[:0])
	for i := range a.reqs {
		r := &a.reqs[i]
		a.reqLast = r.Seq
		if r.TraceID == ([16]byte{}) {
			continue
		}
		if r.StartNs == 0 {
			e.unplaced.Add(1)
			continue
		}
		parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: r.TraceID, SpanID: r.SpanID, TraceFlags: trace.FlagsSampled, Remote: true})
		if !parent.IsValid() {
			continue
		}
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: r.TraceID, SpanID: e.spanID(3, r.Seq), TraceFlags: trace.FlagsSampled})
		attrs := []attribute.KeyValue{
			AttrRequestID.String(strconv.FormatUint(r.ID, 10)), AttrRequestSteps.Int64(int64(r.Steps)),
			AttrNewTokens.Int64(int64(r.NewTokens)), AttrDecodedTokens.Int64(int64(r.DecodedTokens)),
			AttrGPUTime.Int64(int64(r.GPUTime)), AttrGPUInput.Int64(int64(r.Input)), AttrGPUOutput.Int64(int64(r.Output)),
		}
		for _, kv := range [3]struct {
			k attribute.Key
			v string
		}{{AttrServedModel, r.Model}, {AttrAdapter, r.Adapter}, {AttrTenant, r.Tenant}} {
			if kv.v != "" {
				attrs = append(attrs, kv.k.String(kv.v))
			}
		}
		if r.BusyTime > 0 {
			attrs = append(attrs, AttrBusy.Int64(int64(r.Busy)), AttrBusyTime.Int64(int64(r.BusyTime)))
		}
		if r.Fallback > 0 {
			attrs = append(attrs, AttrFallbackSpans.Int64(int64(r.Fallback)))
		}
		if r.Unmeasured > 0 {
			attrs = append(attrs, AttrUnmeasuredSpans.Int64(int64(r.Unmeasured)))
		}
		if r.Abandoned {
			attrs = append(attrs, AttrAbandoned.Bool(true))
		}
		for _, l := range r.Lanes {
			attrs = append(attrs, a.laneTimeKey(l.Lane).Int64(int64(l.GPUTime)))
		}
		e.requestSpans.Add(1)
		e.enqueue(e.finished(gpuSpan{name: RequestSpanName, sc: sc, parent: parent, start: r.StartNs, end: max(r.EndNs, r.StartNs), attrs: attrs}))
	}
}

// laneTimeKey is the attribute of a request's time in lane:
// gpuspans.gpu.lane.<lane>.time_ns. Lanes are fixed at the hub's New, so
// the keys are too.
func (a *assembler) laneTimeKey(lane string) attribute.Key {
	k, ok := a.laneKeys[lane]
	if !ok {
		if a.laneKeys == nil {
			a.laneKeys = make(map[string]attribute.Key)
		}
		k = attribute.Key("gpuspans.gpu.lane." + lane + ".time_ns")
		a.laneKeys[lane] = k
	}
	return k
}

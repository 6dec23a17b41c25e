package debugpage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/durfmt"
)

// attributionJSON is Snapshot.Requests, with the proto's names: whose GPU
// time.
type attributionJSON struct {
	InFlight int                 `json:"in_flight"`
	Finished uint64              `json:"finished"`
	Counters requestCountersJSON `json:"counters"`
	Lanes    []laneAttrJSON      `json:"lanes"`
	Classes  []classAttrJSON     `json:"classes"`
	Heaviest []RequestJSON       `json:"heaviest"`
}

type requestCountersJSON struct {
	Batches            uint64 `json:"batches"`
	Served             uint64 `json:"served"`
	Refused            uint64 `json:"refused"`
	Backlog            uint64 `json:"backlog"`
	Expired            uint64 `json:"expired"`
	Overrun            uint64 `json:"overrun"`
	Abandoned          uint64 `json:"abandoned"`
	RecordsOverwritten uint64 `json:"records_overwritten"`
}

type costModelJSON struct {
	Status     string  `json:"status"`
	FixedNs    int64   `json:"fixed_ns"`
	PerTokenNs float64 `json:"per_token_ns"`
	PerPairNs  float64 `json:"per_pair_ns"`
	// PerContextNs follows per_pair_ns, as the schema numbers them.
	PerContextNs float64 `json:"per_context_ns"`
	Residual     float64 `json:"residual"`
	Steps        uint64  `json:"steps"`
}

type laneAttrJSON struct {
	Device         int           `json:"device"`
	Lane           string        `json:"lane"`
	Model          costModelJSON `json:"model"`
	Spans          uint64        `json:"spans"`
	ModelSpans     uint64        `json:"model_spans"`
	Unmeasured     uint64        `json:"unmeasured"`
	TimeNs         int64         `json:"time_ns"`
	BusyNs         int64         `json:"busy_ns"`
	BusyTimeNs     int64         `json:"busy_time_ns"`
	WindowCostNs   int64         `json:"window_cost_ns"`
	Flops          float64       `json:"flops"`
	Bytes          float64       `json:"bytes"`
	WorkTimeNs     int64         `json:"work_time_ns"`
	WorkBusyNs     int64         `json:"work_busy_ns"`
	WorkBusyTimeNs int64         `json:"work_busy_time_ns"`
	PeakFlops      float64       `json:"peak_flops"`
	PeakBandwidth  float64       `json:"peak_bandwidth"`
	Unattributed   uint64        `json:"unattributed"`
	UnattributedNs int64         `json:"unattributed_ns"`
	// Page-only: LaneAttribution.Achieved.
	AchievedFlopsServed float64 `json:"achieved_flops_served"`
	AchievedFlopsBusy   float64 `json:"achieved_flops_busy"`
}

type classAttrJSON struct {
	Model         string          `json:"model"`
	Adapter       string          `json:"adapter"`
	Tenant        string          `json:"tenant"`
	Other         bool            `json:"other"`
	Lanes         []classLaneJSON `json:"lanes"`
	NewTokens     uint64          `json:"new_tokens"`
	DecodedTokens uint64          `json:"decoded_tokens"`
	Finished      uint64          `json:"finished"`
	Abandoned     uint64          `json:"abandoned"`
	Flops         float64         `json:"flops"`
	PerRequest    aggregateJSON   `json:"per_request"`
}

type classLaneJSON struct {
	Lane       string `json:"lane"`
	GPUNs      int64  `json:"gpu_ns"`
	InputNs    int64  `json:"input_ns"`
	OutputNs   int64  `json:"output_ns"`
	BusyNs     int64  `json:"busy_ns"`
	BusyTimeNs int64  `json:"busy_time_ns"`
}

// RequestJSON is a finished request's record (gpuspans.RequestRecord) as
// JSON, with the names of the schema's RequestRecord; trace_id and span_id
// are base64, as protojson writes bytes, and absent when not given.
type RequestJSON struct {
	Seq           uint64            `json:"seq"`
	ID            uint64            `json:"id"`
	Model         string            `json:"model"`
	Adapter       string            `json:"adapter"`
	Tenant        string            `json:"tenant"`
	TraceID       string            `json:"trace_id,omitempty"`
	SpanID        string            `json:"span_id,omitempty"`
	Steps         uint64            `json:"steps"`
	FirstStep     uint64            `json:"first_step"`
	LastStep      uint64            `json:"last_step"`
	NewTokens     uint64            `json:"new_tokens"`
	DecodedTokens uint64            `json:"decoded_tokens"`
	GPUNs         int64             `json:"gpu_ns"`
	InputNs       int64             `json:"input_ns"`
	OutputNs      int64             `json:"output_ns"`
	BusyNs        int64             `json:"busy_ns"`
	BusyTimeNs    int64             `json:"busy_time_ns"`
	Unmeasured    uint64            `json:"unmeasured"`
	Fallback      uint64            `json:"fallback"`
	Abandoned     bool              `json:"abandoned"`
	StartUnixNs   int64             `json:"start_unix_ns"`
	EndUnixNs     int64             `json:"end_unix_ns"`
	Lanes         []requestLaneJSON `json:"lanes"`
}

type requestLaneJSON struct {
	Lane       string `json:"lane"`
	Steps      uint64 `json:"steps"`
	GPUNs      int64  `json:"gpu_ns"`
	BusyNs     int64  `json:"busy_ns"`
	BusyTimeNs int64  `json:"busy_time_ns"`
}

// Request returns r as JSON's RequestJSON.
func Request(r *gpuspans.RequestRecord) RequestJSON {
	j := RequestJSON{Seq: r.Seq, ID: r.ID, Model: r.Model, Adapter: r.Adapter, Tenant: r.Tenant,
		Steps: r.Steps, FirstStep: r.FirstStep, LastStep: r.LastStep, NewTokens: r.NewTokens, DecodedTokens: r.DecodedTokens,
		GPUNs: int64(r.GPUTime), InputNs: int64(r.Input), OutputNs: int64(r.Output), BusyNs: int64(r.Busy), BusyTimeNs: int64(r.BusyTime),
		Unmeasured: r.Unmeasured, Fallback: r.Fallback, Abandoned: r.Abandoned, StartUnixNs: r.StartNs, EndUnixNs: r.EndNs,
		Lanes: make([]requestLaneJSON, 0, len(r.Lanes))}
	if r.TraceID != ([16]byte{}) {
		j.TraceID = base64.StdEncoding.EncodeToString(r.TraceID[:])
		j.SpanID = base64.StdEncoding.EncodeToString(r.SpanID[:])
	}
	for _, l := range r.Lanes {
		j.Lanes = append(j.Lanes, requestLaneJSON{Lane: l.Lane, Steps: l.Steps, GPUNs: int64(l.GPUTime), BusyNs: int64(l.Busy), BusyTimeNs: int64(l.BusyTime)})
	}
	return j
}

// MarshalRequests returns recs as a JSON array of RequestJSON, as the C
// ABI's gs_hub_finished_requests writes them.
func MarshalRequests(recs []gpuspans.RequestRecord) ([]byte, error) {
	out := make([]RequestJSON, len(recs))
	for i := range recs {
		out[i] = Request(&recs[i])
	}
	return json.Marshal(out)
}

// attribution returns a's JSON; nil while no request was ever said, as
// the schema leaves it out then.
func attribution(a *gpuspans.RequestAttribution) *attributionJSON {
	if a.Counters == (gpuspans.RequestCounters{}) && len(a.Lanes) == 0 && a.InFlight == 0 {
		return nil
	}
	c := &a.Counters
	j := &attributionJSON{InFlight: a.InFlight, Finished: a.Finished,
		Counters: requestCountersJSON{Batches: c.Batches, Served: c.Served, Refused: c.Refused, Backlog: c.Backlog,
			Expired: c.Expired, Overrun: c.Overrun, Abandoned: c.Abandoned, RecordsOverwritten: c.RecordsOverwritten},
		Lanes: []laneAttrJSON{}, Classes: []classAttrJSON{}, Heaviest: []RequestJSON{}}
	for i := range a.Lanes {
		l := &a.Lanes[i]
		fs, fb, _, _ := l.Achieved()
		j.Lanes = append(j.Lanes, laneAttrJSON{Device: l.Device, Lane: l.Lane,
			Model: costModelJSON{Status: l.Model.Status, FixedNs: int64(l.Model.Fixed), PerTokenNs: l.Model.PerToken, PerPairNs: l.Model.PerPair, PerContextNs: l.Model.PerContext,
				Residual: l.Model.Residual, Steps: l.Model.Steps},
			Spans: l.Spans, ModelSpans: l.ModelSpans, Unmeasured: l.Unmeasured,
			TimeNs: int64(l.Time), BusyNs: int64(l.Busy), BusyTimeNs: int64(l.BusyTime), WindowCostNs: int64(l.WindowCost),
			Flops: l.FLOPs, Bytes: l.Bytes, WorkTimeNs: int64(l.WorkTime), WorkBusyNs: int64(l.WorkBusy), WorkBusyTimeNs: int64(l.WorkBusyTime),
			PeakFlops: l.PeakFlops, PeakBandwidth: l.PeakBandwidth, Unattributed: l.Unattributed, UnattributedNs: int64(l.UnattributedTime),
			AchievedFlopsServed: fs, AchievedFlopsBusy: fb})
	}
	for i := range a.Classes {
		cl := &a.Classes[i]
		cj := classAttrJSON{Model: cl.Model, Adapter: cl.Adapter, Tenant: cl.Tenant, Other: cl.Other, Lanes: []classLaneJSON{},
			NewTokens: cl.NewTokens, DecodedTokens: cl.DecodedTokens, Finished: cl.Finished, Abandoned: cl.Abandoned, Flops: cl.FLOPs,
			PerRequest: aggregates([]gpuspans.Aggregate{cl.PerRequest})[0]}
		for _, l := range cl.Lanes {
			cj.Lanes = append(cj.Lanes, classLaneJSON{Lane: l.Lane, GPUNs: int64(l.GPUTime), InputNs: int64(l.Input), OutputNs: int64(l.Output),
				BusyNs: int64(l.Busy), BusyTimeNs: int64(l.BusyTime)})
		}
		j.Classes = append(j.Classes, cj)
	}
	for i := range a.Heaviest {
		j.Heaviest = append(j.Heaviest, Request(&a.Heaviest[i]))
	}
	return j
}

// requestsView is the page's "Whose GPU time": each lane's cost model and
// what its spans gave, the classes, and the heaviest recent requests.
type requestsView struct {
	InFlight int
	Finished uint64
	Lanes    []requestLaneRow
	Classes  []requestClassRow
	Heaviest []requestRow
	Lost     string // requests' spans lost or refused calls, when any
}

type requestLaneRow struct {
	Device                                             int
	Lane, Status, Fixed, PerToken, PerContext, PerPair string
	Residual, Split, ByModel, Time, Busy, WindowCost   string
	Unattributed                                       string
	Achieved                                           string
}

type requestClassRow struct {
	Class, Share, GPU, Input, Output, Busy, Tokens, Finished, PerMillion, P50, P99 string
}

type requestRow struct {
	ID, Class, GPU, Busy, Input, Output, Steps, Tokens, Lanes, Note string
}

// newRequestsView is nil while no request was ever said.
func newRequestsView(a *gpuspans.RequestAttribution) *requestsView {
	if a.Counters == (gpuspans.RequestCounters{}) && len(a.Lanes) == 0 && a.InFlight == 0 {
		return nil
	}
	v := &requestsView{InFlight: a.InFlight, Finished: a.Finished}
	for i := range a.Lanes {
		l := &a.Lanes[i]
		m := &l.Model
		r := requestLaneRow{Device: l.Device, Lane: l.Lane, Status: m.Status, Fixed: durfmt.Format(m.Fixed),
			PerToken: nsText(m.PerToken), PerContext: nsText(m.PerContext), PerPair: nsText(m.PerPair),
			Residual: fmt.Sprintf("%.1f%%", 100*m.Residual), Split: fmt.Sprint(l.Spans),
			ByModel: fmt.Sprintf("%d (%.0f%%)", l.ModelSpans, percent(float64(l.ModelSpans), float64(l.Spans))),
			Time:    durfmt.Format(l.Time), Busy: "-", WindowCost: durfmt.Format(l.WindowCost),
			Unattributed: fmt.Sprintf("%d (%s)", l.Unattributed, durfmt.Format(l.UnattributedTime))}
		if l.BusyTime > 0 {
			r.Busy = fmt.Sprintf("%.1f%%", percent(float64(l.Busy), float64(l.BusyTime)))
		}
		if fs, fb, _, _ := l.Achieved(); fs > 0 {
			r.Achieved = fmt.Sprintf("%.1f TFLOP/s", fs/1e12)
			if fb > 0 {
				r.Achieved += fmt.Sprintf(", %.1f busy", fb/1e12)
			}
			if l.PeakFlops > 0 {
				r.Achieved += fmt.Sprintf(" (%.1f%% of peak)", percent(fs, l.PeakFlops))
			}
		}
		v.Lanes = append(v.Lanes, r)
	}
	var total time.Duration
	for i := range a.Classes {
		for _, l := range a.Classes[i].Lanes {
			total += l.GPUTime
		}
	}
	for i := range a.Classes {
		c := &a.Classes[i]
		var gpu, in, out, busy, busyTime time.Duration
		for _, l := range c.Lanes {
			gpu, in, out, busy, busyTime = gpu+l.GPUTime, in+l.Input, out+l.Output, busy+l.Busy, busyTime+l.BusyTime
		}
		if gpu == 0 && c.Finished == 0 {
			continue
		}
		r := requestClassRow{Class: className(c.Model, c.Adapter, c.Tenant), Share: fmt.Sprintf("%.1f%%", percent(float64(gpu), float64(total))),
			GPU: durfmt.Format(gpu), Input: durfmt.Format(in), Output: durfmt.Format(out), Busy: "-",
			Tokens: fmt.Sprintf("%d / %d", c.NewTokens, c.DecodedTokens), Finished: fmt.Sprint(c.Finished), PerMillion: "-"}
		if c.Other {
			r.Class = "other (classes past the label budget)"
		}
		if busyTime > 0 {
			r.Busy = fmt.Sprintf("%.1f%%", percent(float64(busy), float64(busyTime)))
		}
		if c.NewTokens > 0 || c.DecodedTokens > 0 {
			r.PerMillion = fmt.Sprintf("%s / %s", perMillion(in, c.NewTokens), perMillion(out, c.DecodedTokens))
		}
		if c.PerRequest.Count > 0 {
			r.P50, r.P99 = durfmt.Format(c.PerRequest.Quantile(0.5)), durfmt.Format(c.PerRequest.Quantile(0.99))
		}
		v.Classes = append(v.Classes, r)
	}
	for i := range a.Heaviest {
		h := &a.Heaviest[i]
		r := requestRow{ID: fmt.Sprint(h.ID), Class: className(h.Model, h.Adapter, h.Tenant), GPU: durfmt.Format(h.GPUTime), Busy: "-",
			Input: durfmt.Format(h.Input), Output: durfmt.Format(h.Output), Steps: fmt.Sprint(h.Steps),
			Tokens: fmt.Sprintf("%d / %d", h.NewTokens, h.DecodedTokens)}
		if h.BusyTime > 0 {
			r.Busy = fmt.Sprintf("%.1f%%", percent(float64(h.Busy), float64(h.BusyTime)))
		}
		for j, l := range h.Lanes {
			if j > 0 {
				r.Lanes += ", "
			}
			r.Lanes += l.Lane + " " + durfmt.Format(l.GPUTime)
		}
		switch {
		case h.Abandoned:
			r.Note = "abandoned: never ended"
		case h.Unmeasured > 0:
			r.Note = fmt.Sprintf("%d spans unmeasured", h.Unmeasured)
		case h.Fallback > 0:
			r.Note = fmt.Sprintf("%d spans split by tokens", h.Fallback)
		}
		v.Heaviest = append(v.Heaviest, r)
	}
	c := &a.Counters
	if lost := c.Expired + c.Overrun + c.Backlog + c.Refused; lost > 0 {
		v.Lost = fmt.Sprintf("%d calls refused, %d dropped on a full inbox, %d batches whose span never landed", c.Refused, c.Backlog, c.Expired+c.Overrun)
	}
	return v
}

// className is a class's names as the page shows them.
func className(model, adapter, tenant string) string {
	var parts []string
	for _, p := range [][2]string{{"model", model}, {"adapter", adapter}, {"tenant", tenant}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+p[1])
		}
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, ", ")
}

// nsText is a coefficient in ns, to 3 significant figures.
func nsText(ns float64) string { return strconv.FormatFloat(ns, 'g', 3, 64) + " ns" }

func percent(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * a / b
}

// perMillion is GPU seconds per million tokens, "-" with no tokens.
func perMillion(d time.Duration, tokens uint64) string {
	if tokens == 0 {
		return "-"
	}
	return strconv.FormatFloat(d.Seconds()*1e6/float64(tokens), 'g', 3, 64) + " s"
}

package prom

import (
	"fmt"
	"math"
	"regexp"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Whose GPU time's series budget (docs/operations.md states it), per
// exported class (gpuspans.Options.RequestLabels classes and "other") for
// L lanes: 2L GPU seconds (by part), L busy seconds (with kernel
// windows), 2 token counters, 1 finished, the per-request histogram (1
// series native, 25 classic) and 1 of FLOPs (with lane work); per device
// and lane 9, and 4 more with lane work and windows; per device 2 peaks,
// where known; per hub 1.
func requestBudget(classes, lanes, devices int, native, windows, work bool) int {
	perClass := 2*lanes + 2 + 1 + 25
	if native {
		perClass -= 24
	}
	perLane := 9
	if windows {
		perClass += lanes
	}
	if work {
		perClass++
		perLane += 3
		if windows {
			perLane++
		}
	}
	return classes*perClass + devices*lanes*perLane + 1
}

// requestHub serves tenants tenants, each a request a step in both lanes
// of a simulated GPU, with lane work, for steps steps, and ends them.
func requestHub(t *testing.T, tenants, steps int) (*gpuspans.Hub, []gpuspans.RequestRecord) {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	s := gpu.NewStream()
	h, err := gpuspans.New(gpuspans.Options{Lanes: []string{"prefill", "decode"}, Level: gpuspans.LevelKernel, Now: clock.Now, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, s, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	classes := make([]gpuspans.RequestClass, tenants)
	for i := range classes {
		// Heavier tenants later: the labels go to the heaviest of those
		// first served together.
		if classes[i], err = h.RequestClass("llama", "", fmt.Sprintf("t%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	work := make([]gpuspans.RequestWork, tenants)
	for step := 0; step < steps; step++ {
		h.BeginStep()
		for lane := 0; lane < 2; lane++ {
			for i := range work {
				work[i] = gpuspans.RequestWork{ID: uint64(i + 1), Class: classes[i], Context: uint32(100 * (i + 1))}
				if lane == 0 {
					work[i].NewTokens = 8
				} else {
					work[i].DecodedTokens = 1
				}
			}
			if err := h.ServeRequests(lane, work); err != nil {
				t.Fatal(err)
			}
			if err := h.LaneWork(lane, 1e9, 1e8); err != nil {
				t.Fatal(err)
			}
			h.LaneBegin(lane)
			gpu.Launch(s, time.Duration(100+lane*50)*time.Microsecond)
			h.LaneEnd(lane)
		}
		clock.Advance(time.Millisecond)
	}
	for i := range work {
		if err := h.EndRequest(work[i].ID); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Millisecond)
	h.BeginStep()
	return h, h.FinishedRequests(0, nil)
}

// requestSeries counts the series of whose GPU time's families Prometheus
// stores from one gather, native histograms on or off.
func requestSeries(t *testing.T, c *Collector, native bool) int {
	ours := map[string]bool{}
	for _, d := range c.req.all() {
		ours[regexp.MustCompile(`fqName: "([a-z_]+)"`).FindStringSubmatch(d.String())[1]] = true
	}
	n := 0
	for _, mf := range families(t, c) {
		if !ours[mf.GetName()] {
			continue
		}
		for _, m := range mf.GetMetric() {
			n++
			if h := m.GetHistogram(); h != nil && (!native || h.Schema == nil) {
				n += len(h.GetBucket()) + 2 // the bounds' _bucket series, +Inf, _sum and _count: one counted already
			}
		}
	}
	return n
}

func TestRequestSeriesBudget(t *testing.T) {
	h, _ := requestHub(t, 40, 50)
	classes := gpuspans.DefaultRequestLabels + 1
	for _, native := range []bool{true, false} {
		got := requestSeries(t, NewCollector(h, Options{NoNativeHistograms: !native}), native)
		// 40 tenants: the default labels and "other"; no windows, lane work.
		if want := requestBudget(classes, 2, 1, native, false, true); got != want {
			t.Errorf("native %v: %d series of whose GPU time, want %d", native, got, want)
		}
	}
	// 40 tenants, 8 labels: 8 tenants by name and "other", no more.
	seen := map[string]bool{}
	for _, mf := range families(t, NewCollector(h, Options{})) {
		if mf.GetName() != "gpuspans_requests_finished_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tenant" {
					seen[l.GetValue()] = true
				}
			}
		}
	}
	if len(seen) != classes || !seen["other"] {
		t.Fatalf("tenants labeled: %v, want %d with other", seen, classes)
	}
}

// The counters and histograms agree with the records they were made from.
func TestRequestSeriesAgreeWithRecords(t *testing.T) {
	h, recs := requestHub(t, 3, 200)
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	byTenant := map[string]*gpuspans.RequestRecord{}
	for i := range recs {
		byTenant[recs[i].Tenant] = &recs[i]
	}
	value := func(m *dto.Metric) float64 {
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	labels := func(m *dto.Metric) map[string]string {
		out := map[string]string{}
		for _, l := range m.GetLabel() {
			out[l.GetName()] = l.GetValue()
		}
		return out
	}
	gpu := map[string]float64{}
	var laneSplit, spanSum float64
	for _, mf := range families(t, NewCollector(h, Options{})) {
		for _, m := range mf.GetMetric() {
			l := labels(m)
			switch mf.GetName() {
			case "gpuspans_request_gpu_seconds_total":
				gpu[l["tenant"]] += value(m)
			case "gpuspans_request_tokens_total":
				r := byTenant[l["tenant"]]
				if r == nil {
					continue // the fold, empty
				}
				want := float64(r.NewTokens)
				if l["part"] == "output" {
					want = float64(r.DecodedTokens)
				}
				if value(m) != want {
					t.Errorf("tokens %v: %v, the record says %v", l, value(m), want)
				}
			case "gpuspans_requests_finished_total":
				if value(m) != 1 && l["tenant"] != "other" {
					t.Errorf("finished %v: %v", l, value(m))
				}
			case "gpuspans_request_gpu_time_seconds":
				hs := m.GetHistogram()
				if r := byTenant[l["tenant"]]; l["tenant"] != "other" && (hs.GetSampleCount() != 1 || math.Abs(hs.GetSampleSum()-r.GPUTime.Seconds()) > 1e-9) {
					t.Errorf("histogram %v: %d, %v; the record %v", l, hs.GetSampleCount(), hs.GetSampleSum(), r.GPUTime)
				}
			case "gpuspans_lane_split_seconds_total":
				laneSplit += value(m)
			case "gpuspans_lane_duration_seconds":
				spanSum += m.GetHistogram().GetSampleSum()
			case "gpuspans_lane_flops_total":
				if value(m) != 200*1e9 {
					t.Errorf("flops %v: %v", l, value(m))
				}
			}
		}
	}
	var total float64
	for tenant, r := range byTenant {
		if math.Abs(gpu[tenant]-r.GPUTime.Seconds()) > 1e-9 {
			t.Errorf("tenant %s: %v GPU seconds on /metrics, %v in its record", tenant, gpu[tenant], r.GPUTime.Seconds())
		}
		total += r.GPUTime.Seconds()
	}
	if math.Abs(laneSplit-total) > 1e-9 || math.Abs(spanSum-total) > 1e-9 {
		t.Fatalf("lanes split %v, spans %v, records %v", laneSplit, spanSum, total)
	}
}

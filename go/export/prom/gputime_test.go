package prom

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuspans/gpuspans/go/profile"
)

// gather returns the collector's metrics of family name, by their labels
// joined.
func gather(t *testing.T, c *Collector, name string) map[string]*dto.Metric {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Metric{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			key := ""
			for _, l := range m.Label {
				key += l.GetName() + "=" + l.GetValue() + ","
			}
			out[key] = m
		}
	}
	return out
}

// GPU time goes out in served terms: busy over the settled windows, idle
// by cause, the windows' cost; busy + idle + cost is the lanes' measured
// time over the settled windows.
func TestGPUTimeServedSeries(t *testing.T) {
	h := windowedHub(t)
	c := NewCollector(h, Options{})
	g := h.GPUTime()
	for _, l := range g.Lanes {
		if l.Served == 0 || l.Unsettled != 0 {
			t.Fatalf("%s: %+v, want settled windows", l.Lane, l)
		}
		labels := "device=0,lane=" + l.Lane + ","
		busy := gather(t, c, "gpuspans_lane_busy_seconds_total")[labels].GetCounter().GetValue()
		cost := gather(t, c, "gpuspans_lane_window_cost_seconds_total")[labels].GetCounter().GetValue()
		var idle float64
		for _, cause := range []string{"host", "launch", "copy", "wait", "other"} {
			m := gather(t, c, "gpuspans_lane_idle_seconds_total")["cause="+cause+","+labels]
			if m == nil {
				t.Fatalf("%s: no idle series for cause %s", l.Lane, cause)
			}
			idle += m.GetCounter().GetValue()
		}
		if busy != l.ServedBusy.Seconds() || cost != l.WindowCost.Seconds() {
			t.Errorf("%s: busy %v cost %v, want %v and %v", l.Lane, busy, cost, l.ServedBusy.Seconds(), l.WindowCost.Seconds())
		}
		if d := busy + idle - l.Served.Seconds(); d > 1e-12 || d < -1e-12 {
			t.Errorf("%s: busy %v + idle %v, want the served %v", l.Lane, busy, idle, l.Served.Seconds())
		}
		ratio := gather(t, c, "gpuspans_lane_busy_ratio")[labels].GetGauge().GetValue()
		if ratio != l.BusyRatio() || ratio != float64(l.RecentBusy)/float64(l.RecentServed) {
			t.Errorf("%s: ratio %v, want recent busy over served %v", l.Lane, ratio, l.BusyRatio())
		}
	}
}

// A lane that stops loses its busy ratio and kernel shares once it has had
// no span for a minute, as its recent quantiles do; its counters stay.
func TestGPUTimeGaugesAbsentAfterTheLaneStops(t *testing.T) {
	h, clock := windowedHubClock(t)
	c := NewCollector(h, Options{})
	count := func(name string) int { return len(gather(t, c, name)) }
	if count("gpuspans_lane_busy_ratio") != windowedLanes || count("gpuspans_lane_kernel_share_ratio") != windowedLanes*sharesPerLane {
		t.Fatalf("while the lanes run: %d ratios, %d shares", count("gpuspans_lane_busy_ratio"), count("gpuspans_lane_kernel_share_ratio"))
	}
	// 50 s with no lane span: still within the minute.
	for i := 0; i < 5; i++ {
		clock.Advance(10 * time.Second)
		h.Harvest()
	}
	if count("gpuspans_lane_busy_ratio") != windowedLanes {
		t.Fatalf("50 s after the last span: %d ratios, want them still", count("gpuspans_lane_busy_ratio"))
	}
	for i := 0; i < 3; i++ {
		clock.Advance(10 * time.Second)
		h.Harvest()
	}
	if n, k := count("gpuspans_lane_busy_ratio"), count("gpuspans_lane_kernel_share_ratio"); n != 0 || k != 0 {
		t.Errorf("80 s after the last span: %d ratios, %d shares, want none", n, k)
	}
	if n := count("gpuspans_lane_busy_seconds_total"); n != windowedLanes {
		t.Errorf("%d busy counters, want them kept", n)
	}
	if n := count("gpuspans_lane_recent_duration_seconds"); n != 0 {
		t.Errorf("%d recent summaries: the gauges' rule is theirs", n)
	}
}

// Against the previous build: the two ratios and the kernels that changed,
// by change, six series a lane.
func TestSinceBuildSeries(t *testing.T) {
	c := NewCollector(windowedHub(t), Options{})
	d := &profile.Diff{Before: "v1", After: "v2", Lanes: []profile.LaneDiff{{Model: "NVIDIA H200", Lane: "decode",
		Time: [2]float64{1000, 1200}, Busy: [2]float64{800, 1000},
		Kernels: []profile.KernelChange{{Name: "a", Change: profile.Grew}, {Name: "b", Change: profile.Grew}, {Name: "c", Change: profile.Gone}}}}}
	ch := make(chan prometheus.Metric, 16)
	c.sinceBuild(ch, d)
	c.sinceBuild(ch, nil)
	close(ch)
	got := map[string]float64{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		key := m.Desc().String()[:60]
		for _, l := range pb.Label {
			if l.GetName() == "change" {
				key = l.GetValue()
			}
		}
		got[key] = pb.GetGauge().GetValue()
	}
	if len(got) != 6 || got["grew"] != 2 || got["gone"] != 1 || got["new"] != 0 || got["shrank"] != 0 {
		t.Errorf("series %v", got)
	}
	var ratios []float64
	for k, v := range got {
		if strings.Contains(k, "ratio") {
			ratios = append(ratios, v)
		}
	}
	sort.Float64s(ratios)
	if len(ratios) != 2 || ratios[0] != 1.2 || ratios[1] != 1.25 {
		t.Errorf("ratios %v, want 1.2 and 1.25", ratios)
	}
}

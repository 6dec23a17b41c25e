package otlp

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuspans/gpuspans/go/export/prom"
)

// TestLaneExemplars: the exporter's exemplar of each device and lane is
// the latest lane span the collector got (step 4 of 4, 2 sampled, though
// Close sends the pending steps in any order), with its trace and span ids,
// duration and end; and /metrics, as OpenMetrics, links each lane
// histogram to it.
func TestLaneExemplars(t *testing.T) {
	rcv := newReceiver(t)
	h := newHub(t)
	e, err := New(context.Background(), h, Options{Endpoint: rcv.srv.URL, SampleEvery: 2, PollEvery: time.Hour, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.LaneExemplar(0, "prefill"); ok {
		t.Error("an exemplar before any export")
	}
	serve(t, h, 4, nil)
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector(h, prom.Options{Exemplars: e}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}).ServeHTTP(rec, req)
	body := rec.Body.String()

	n := 0
	for _, r := range rcv.spans(t) {
		a := attrMap(r.span.Attributes)
		if a["gpuspans.kind"] != "lane" || a["gpuspans.step"] != "4" {
			continue
		}
		n++
		var dev int
		fmt.Sscan(a["gpuspans.device"], &dev)
		ex, ok := e.LaneExemplar(dev, a["gpuspans.lane"])
		if !ok {
			t.Errorf("device %d lane %s: no exemplar", dev, a["gpuspans.lane"])
			continue
		}
		dur := time.Duration(r.span.EndTimeUnixNano - r.span.StartTimeUnixNano)
		if hex.EncodeToString(ex.TraceID[:]) != hex.EncodeToString(r.span.TraceId) || hex.EncodeToString(ex.SpanID[:]) != hex.EncodeToString(r.span.SpanId) ||
			ex.Duration != dur || ex.Time.UnixNano() != int64(r.span.EndTimeUnixNano) {
			t.Errorf("device %d lane %s: exemplar %+v, the collector got trace %x span %x, %v ending at %d",
				dev, a["gpuspans.lane"], ex, r.span.TraceId, r.span.SpanId, dur, r.span.EndTimeUnixNano)
		}
		line := fmt.Sprintf(`gpuspans_lane_duration_seconds_bucket{device="%d",lane="%s",`, dev, a["gpuspans.lane"])
		want := fmt.Sprintf(` # {trace_id="%x",span_id="%x"} %g `, r.span.TraceId, r.span.SpanId, dur.Seconds())
		found := false
		for _, l := range strings.Split(body, "\n") {
			found = found || strings.HasPrefix(l, line) && strings.Contains(l, want)
		}
		if !found {
			t.Errorf("no bucket line %s...%s in\n%s", line, want, body)
		}
	}
	if n != 4 {
		t.Errorf("%d lane spans of step 4 received, want 2 lanes on 2 devices", n)
	}
	for _, c := range []struct {
		dev  int
		lane string
	}{{-1, "prefill"}, {64, "prefill"}, {2, "prefill"}, {0, "nope"}} {
		if ex, ok := e.LaneExemplar(c.dev, c.lane); ok {
			t.Errorf("device %d lane %q: exemplar %+v", c.dev, c.lane, ex)
		}
	}
}

// TestNoExemplarsWhenExportsFail: spans the collector never got give no
// exemplar.
func TestNoExemplarsWhenExportsFail(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	h := newHub(t)
	e, err := New(context.Background(), h, Options{Endpoint: "http://" + addr, SampleEvery: 1, PollEvery: time.Hour, Logf: func(string, ...interface{}) {}})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, h, 4, nil)
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.ExportFailed == 0 || st.Exported != 0 {
		t.Fatalf("stats %+v: want every export failed", st)
	}
	for _, lane := range []string{"prefill", "decode"} {
		if ex, ok := e.LaneExemplar(0, lane); ok {
			t.Errorf("lane %s: exemplar %+v of a span never exported", lane, ex)
		}
	}
}

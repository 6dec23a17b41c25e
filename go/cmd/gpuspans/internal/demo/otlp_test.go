package demo

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSink is an OTLP/HTTP collector on a loopback port that passes each
// span it receives to got, holding mu; it is closed when t ends.
func otlpSink(t *testing.T, mu *sync.Mutex, got func(*tracepb.Span)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		var m coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(data, &m)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					got(s)
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRunWithOTLP: the demo, pointed at a collector, delivers GPU spans
// linked to its request spans.
func TestRunWithOTLP(t *testing.T) {
	var mu sync.Mutex
	var spans []*tracepb.Span
	srv := otlpSink(t, &mu, func(s *tracepb.Span) { spans = append(spans, s) })

	cfg := fastConfig(t)
	cfg.Steps = 200
	cfg.OTLP = srv.URL
	cfg.OTLPSampleEvery = 4
	cfg.Requests = 3
	var out syncBuffer
	res, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	o := res.OTLP
	if o.Exported == 0 || o.QueueFull+o.ExportFailed+o.Shutdown != 0 || o.Exported != o.Enqueued {
		t.Errorf("OTLP stats %+v", o)
	}
	if !strings.Contains(out.String(), "OTLP: ") {
		t.Errorf("no OTLP line in\n%s", out.String())
	}

	mu.Lock()
	defer mu.Unlock()
	requests := make(map[string]bool)
	for _, s := range spans {
		if s.Name == "demo request" {
			requests[hex.EncodeToString(s.SpanId)] = true
		}
	}
	lanes, linked := 0, 0
	for _, s := range spans {
		if !strings.HasPrefix(s.Name, "lane ") {
			continue
		}
		lanes++
		if len(s.Links) == 3 {
			linked++
		}
		for _, l := range s.Links {
			if !requests[hex.EncodeToString(l.SpanId)] {
				t.Errorf("%s links to %x, not a request span", s.Name, l.SpanId)
			}
		}
	}
	// 200 steps, 1 in 4 sampled, 2 lanes each; the capture step has no lanes.
	if lanes < 90 || linked != lanes || len(requests) < 3 {
		t.Errorf("%d lane spans, %d linked to their 3 requests, %d requests", lanes, linked, len(requests))
	}
}

// TestExemplarsWithOTLP: with OTLP on, /metrics served as OpenMetrics links
// each lane histogram to a lane span the collector received (its trace and
// span ids), and --kernel_histograms adds the kernel histograms.
func TestExemplarsWithOTLP(t *testing.T) {
	var mu sync.Mutex
	got := make(map[string]string) // "trace/span" of lane spans -> lane
	srv := otlpSink(t, &mu, func(s *tracepb.Span) {
		if lane, ok := strings.CutPrefix(s.Name, "lane "); ok {
			got[hex.EncodeToString(s.TraceId)+"/"+hex.EncodeToString(s.SpanId)] = lane
		}
	})

	cfg := fastConfig(t)
	cfg.Rate = 1000
	cfg.OTLP = srv.URL
	cfg.OTLPSampleEvery = 2
	cfg.KernelHistograms = true
	addr := make(chan net.Addr, 1)
	cfg.OnListen = func(a net.Addr) { addr <- a }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { _, err := Run(ctx, cfg, &out); done <- err }()
	var url string
	select {
	case a := <-addr:
		url = "http://" + a.String() + "/metrics"
	case err := <-done:
		t.Fatalf("Run: %v\n%s", err, out.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not listen within 30s")
	}
	ex := regexp.MustCompile(`(?m)^gpuspans_lane_duration_seconds_bucket\{device="0",lane="(\w+)",le="[^"]+"\} \d+ # \{trace_id="([0-9a-f]{32})",span_id="([0-9a-f]{16})"\} `)
	var body string
	matched := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); len(matched) < 2 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		mu.Lock()
		for _, m := range ex.FindAllStringSubmatch(body, -1) {
			if lane, ok := got[m[2]+"/"+m[3]]; !ok || lane != m[1] {
				t.Errorf("lane %s: exemplar trace %s span %s, which the collector got as lane %q (%v)", m[1], m[2], m[3], lane, ok)
			}
			matched[m[1]] = true
		}
		mu.Unlock()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if !matched["prefill"] || !matched["decode"] || !strings.Contains(body, `gpuspans_kernel_duration_seconds_count{device="0",kernel="attn_decode"}`) {
		t.Errorf("exemplars of lanes %v, want prefill and decode; kernel histograms in\n%.3000s", matched, body)
	}
}

package demo

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestRunWithOTLP: the demo, pointed at a collector, delivers GPU spans
// linked to its request spans.
func TestRunWithOTLP(t *testing.T) {
	var mu sync.Mutex
	var spans []*tracepb.Span
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
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
	}))
	defer srv.Close()

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

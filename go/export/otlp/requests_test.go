package otlp

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// A finished request with a span context gets its GPU time as a span
// under its own span, carrying what its record says; one without gets
// none.
func TestRequestSpans(t *testing.T) {
	h := newHub(t)
	mem := &keepExporter{}
	e, err := New(context.Background(), h, Options{SpanExporter: mem, LookupEnv: noEnv, SampleEvery: 1 << 20, PollEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := h.RequestClass("llama", "lora-1", "acme")
	if err != nil {
		t.Fatal(err)
	}
	parent := sc(5, 6)
	with := gpuspans.RequestWork{ID: 1 << 63, NewTokens: 12, Context: 12, Class: tenant, TraceID: parent.TraceID(), SpanID: parent.SpanID()}
	without := gpuspans.RequestWork{ID: 2, DecodedTokens: 1, Context: 40}
	serve(t, h, 3, func(step uint64) {
		if step == 3 {
			with.NewTokens, with.DecodedTokens = 0, 1
		}
		for lane := 0; lane < 2; lane++ {
			if err := h.ServeRequests(lane, []gpuspans.RequestWork{with, without}); err != nil {
				t.Fatal(err)
			}
		}
	})
	for _, id := range []uint64{with.ID, without.ID} {
		if err := h.EndRequest(id); err != nil {
			t.Fatal(err)
		}
	}
	h.BeginStep()
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := h.FinishedRequests(0, nil)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	var got []sdktrace.ReadOnlySpan
	for _, s := range mem.spans {
		if s.Name() == RequestSpanName {
			got = append(got, s)
		}
	}
	if len(got) != 1 || e.Stats().RequestSpans != 1 {
		t.Fatalf("%d request spans (stats %d), want 1", len(got), e.Stats().RequestSpans)
	}
	s, r := got[0], recs[0]
	if s.Parent().SpanID() != parent.SpanID() || s.SpanContext().TraceID() != parent.TraceID() || !s.Parent().IsRemote() {
		t.Fatalf("parent %v in trace %v, want %v", s.Parent(), s.SpanContext().TraceID(), parent)
	}
	if s.StartTime().UnixNano() != r.StartNs || s.EndTime().UnixNano() != r.EndNs || r.StartNs == 0 {
		t.Fatalf("span %v..%v, record %d..%d", s.StartTime(), s.EndTime(), r.StartNs, r.EndNs)
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	for k, want := range map[string]string{
		"gpuspans.request.id": strconv.FormatUint(1<<63, 10), "gpuspans.request.steps": "6",
		"gpuspans.request.new_tokens": "48", "gpuspans.request.decoded_tokens": "2",
		"gpuspans.gpu.time_ns": strconv.FormatInt(int64(r.GPUTime), 10), "gpuspans.gpu.input_ns": strconv.FormatInt(int64(r.Input), 10),
		"gpuspans.gpu.output_ns": strconv.FormatInt(int64(r.Output), 10),
		"gpuspans.served_model":  "llama", "gpuspans.adapter": "lora-1", "gpuspans.tenant": "acme",
		"gpuspans.gpu.lane.prefill.time_ns": strconv.FormatInt(int64(r.Lanes[0].GPUTime), 10),
		"gpuspans.gpu.lane.decode.time_ns":  strconv.FormatInt(int64(r.Lanes[1].GPUTime), 10),
	} {
		if attrs[k] != want {
			t.Errorf("%s = %q, want %q", k, attrs[k], want)
		}
	}
	if r.GPUTime <= 0 || r.Input+r.Output != r.GPUTime {
		t.Errorf("record %+v", r)
	}
}

// keepExporter keeps what it is sent, through its Shutdown (tracetest's
// in-memory exporter forgets it there).
type keepExporter struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (k *keepExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.spans = append(k.spans, spans...)
	return nil
}

func (k *keepExporter) Shutdown(context.Context) error { return nil }

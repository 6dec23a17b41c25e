package demo

import (
	"context"
	"math/rand"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/gpuspans/gpuspans/go/export/otlp"
)

// Bounds of the demo's simulated requests.
const (
	// DefaultRequests is how many requests the demo engine serves at once,
	// each in every step's batch until it finishes.
	DefaultRequests = 8
	MaxRequests     = otlp.MaxLinks
	// Each request lasts a random number of steps in this range: one
	// prefill, then a decode per step.
	minRequestSteps = 4
	maxRequestSteps = 64
)

// requests simulates the requests a serving engine batches, for the OTLP
// demo: each is a span of its own ("demo request", as a router or engine
// front end would make), and every sampled step links its GPU spans to the
// requests in its batch (Exporter.LinkStep).
type requests struct {
	exp    *otlp.Exporter
	tracer trace.Tracer
	rng    *rand.Rand
	live   []request
	links  []trace.SpanContext // reused: LinkStep copies it
	served uint64              // requests finished
}

type request struct {
	span trace.Span
	left int // steps to go
}

func newRequests(exp *otlp.Exporter, n int, seed int64) *requests {
	return &requests{
		exp:    exp,
		tracer: exp.TracerProvider().Tracer("github.com/gpuspans/gpuspans/go/cmd/gpuspans/internal/demo"),
		rng:    rand.New(rand.NewSource(seed)),
		live:   make([]request, 0, n),
		links:  make([]trace.SpanContext, 0, n),
	}
}

// step runs on the engine's goroutine just after BeginStep: it admits
// requests up to the batch size, links the step to the batch when the step
// is sampled, and ends the requests that finished.
func (r *requests) step(step uint64) {
	for len(r.live) < cap(r.live) {
		n := minRequestSteps + r.rng.Intn(maxRequestSteps-minRequestSteps+1)
		_, sp := r.tracer.Start(context.Background(), "demo request",
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.Int("gpuspans.demo.request_steps", n)))
		r.live = append(r.live, request{span: sp, left: n})
	}
	if r.exp.Sampled(step) {
		r.links = r.links[:0]
		for _, q := range r.live {
			r.links = append(r.links, q.span.SpanContext())
		}
		r.exp.LinkStep(step, r.links)
	}
	kept := r.live[:0]
	for _, q := range r.live {
		if q.left--; q.left > 0 {
			kept = append(kept, q)
			continue
		}
		q.span.End()
		r.served++
	}
	clear(r.live[len(kept):])
	r.live = kept
}

// end ends the requests still in flight, at the end of the run.
func (r *requests) end() {
	now := time.Now()
	for _, q := range r.live {
		q.span.End(trace.WithTimestamp(now))
	}
	r.live = r.live[:0]
}

package demo

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/gpuspans/gpuspans/go/export/otlp"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Bounds of the demo's simulated requests.
const (
	// DefaultRequests is how many requests the demo engine serves at once,
	// each in every step's batch until it finishes.
	DefaultRequests = 8
	MaxRequests     = otlp.MaxLinks
	// MaxTenants bounds Config.Tenants.
	MaxTenants = 64
	// Each request lasts a random number of steps in this range: one
	// prefill, then a decode per step.
	minRequestSteps = 4
	maxRequestSteps = 64
)

// The batch's own work, with Config.Tenants: each lane launches one more
// kernel whose time is what its requests bring, as an engine's attention
// and projections grow with its batch: a prompt token costs prefillToken,
// an attention pair prefillPair, a decoded token's context token read
// decodeContext.
const (
	prefillToken  = 40 * time.Nanosecond
	prefillPair   = 0.01 // ns
	decodeContext = 4 * time.Nanosecond
)

// requests simulates the requests a serving engine batches: for the OTLP
// demo each is a span of its own ("demo request", as a router or engine
// front end would make), and every sampled step links its GPU spans to
// the requests in its batch (Exporter.LinkStep); with tenants, each step
// says which requests its lanes serve (Hub.ServeRequests): tenant t1's
// with long prompts and contexts, the others' short, so that whose GPU
// time has something to tell apart.
type requests struct {
	hub     *gpuspans.Hub
	eng     *Engine
	exp     *otlp.Exporter // nil: no OTLP
	tracer  trace.Tracer   // with exp
	classes []gpuspans.RequestClass
	rng     *rand.Rand
	live    []request
	links   []trace.SpanContext       // reused: LinkStep copies it
	work    [2][]gpuspans.RequestWork // by lane: prefill, decode; reused
	next    uint64
	served  uint64 // requests finished
}

type request struct {
	id          uint64
	span        trace.Span // with OTLP
	tenant      int
	prompt, ctx uint32
	steps       int // steps served
	left        int // steps to go
}

// newRequests makes the simulator for eng's hub: n requests at once, from
// tenants tenants (0: none said to the hub), their spans through exp when
// it is not nil.
func newRequests(eng *Engine, exp *otlp.Exporter, n, tenants int, seed int64) (*requests, error) {
	r := &requests{hub: eng.hub, eng: eng, exp: exp, rng: rand.New(rand.NewSource(seed)), live: make([]request, 0, n), links: make([]trace.SpanContext, 0, n)}
	if exp != nil {
		r.tracer = exp.TracerProvider().Tracer("github.com/gpuspans/gpuspans/go/cmd/gpuspans/internal/demo")
	}
	for i := 0; i < tenants; i++ {
		c, err := eng.hub.RequestClass("demo-llm", "", fmt.Sprintf("t%d", i+1))
		if err != nil {
			return nil, fmt.Errorf("demo: tenant %d: %w", i+1, err)
		}
		r.classes = append(r.classes, c)
	}
	for i := range r.work {
		r.work[i] = make([]gpuspans.RequestWork, 0, n)
	}
	return r, nil
}

// step runs on the engine's goroutine just after BeginStep: it admits
// requests up to the batch size, links the step to the batch when the step
// is sampled, says what each lane serves, and ends the requests that
// finished.
func (r *requests) step(step uint64) {
	for len(r.live) < cap(r.live) {
		r.next++
		q := request{id: r.next, left: minRequestSteps + r.rng.Intn(maxRequestSteps-minRequestSteps+1)}
		if len(r.classes) > 0 {
			q.tenant = int(r.next) % len(r.classes)
			q.prompt = uint32(16 + r.rng.Intn(240))
			if q.tenant == 0 {
				q.prompt, q.ctx = uint32(1024+r.rng.Intn(3072)), uint32(r.rng.Intn(4096))
			}
		}
		if r.tracer != nil {
			_, q.span = r.tracer.Start(context.Background(), "demo request",
				trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.Int("gpuspans.demo.request_steps", q.left)))
		}
		r.live = append(r.live, q)
	}
	if r.exp != nil && r.exp.Sampled(step) {
		r.links = r.links[:0]
		for _, q := range r.live {
			r.links = append(r.links, q.span.SpanContext())
		}
		r.exp.LinkStep(step, r.links)
	}
	if len(r.classes) > 0 {
		r.serve()
	}
	kept := r.live[:0]
	for _, q := range r.live {
		q.steps++
		if q.left--; q.left > 0 {
			kept = append(kept, q)
			continue
		}
		if q.span != nil {
			q.span.End()
		}
		if len(r.classes) > 0 {
			_ = r.hub.EndRequest(q.id) // below Kernel the hub holds none: nothing to end
		}
		r.served++
	}
	clear(r.live[len(kept):])
	r.live = kept
}

// serve says which requests each lane serves this step, and sets the
// lanes' batch work from them: a request's first step prefills its prompt,
// each later one decodes a token over its context.
func (r *requests) serve() {
	pre, dec := r.work[0][:0], r.work[1][:0]
	var preNs, decNs float64
	for i := range r.live {
		q := &r.live[i]
		w := gpuspans.RequestWork{ID: q.id, Class: r.classes[q.tenant]}
		if q.span != nil {
			sc := q.span.SpanContext()
			w.TraceID, w.SpanID = sc.TraceID(), sc.SpanID()
		}
		if q.steps == 0 {
			q.ctx += q.prompt
			w.NewTokens, w.Context = q.prompt, q.ctx
			t, c := float64(q.prompt), float64(q.ctx)
			preNs += float64(prefillToken)*t + prefillPair*(t*(c-t)+t*(t+1)/2) // each token attends to those before it
			pre = append(pre, w)
		} else {
			q.ctx++
			w.DecodedTokens, w.Context = 1, q.ctx
			decNs += float64(decodeContext) * float64(q.ctx)
			dec = append(dec, w)
		}
	}
	r.work[0], r.work[1] = pre, dec
	for lane, w := range r.work {
		if len(w) > 0 {
			// Refused only on a bug here, or dropped on a full inbox:
			// the hub counts either, and the demo serves on.
			_ = r.hub.ServeRequests(r.eng.lanes[lane], w)
		}
	}
	r.eng.batch = [2]time.Duration{time.Duration(preNs), time.Duration(decNs)}
}

// end ends the requests still in flight, at the end of the run.
func (r *requests) end() {
	now := time.Now()
	for _, q := range r.live {
		if q.span != nil {
			q.span.End(trace.WithTimestamp(now))
		}
		if len(r.classes) > 0 {
			_ = r.hub.EndRequest(q.id)
		}
	}
	r.live = r.live[:0]
}

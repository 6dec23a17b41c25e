package gpuspans

import (
	"context"
	"errors"
	"math"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans/internal/costmodel"
)

// servedEngine is an engine on a simulated GPU whose lane span costs are
// known: a step costs a + b*tokens + c*context + d*pairs ns over its
// requests (times a noise factor), and each request's true share of a
// step is its own a/n + b*t + c*context + d*pairs of it, scaled by the
// same factor.
type servedEngine struct {
	t          testing.TB
	h          *Hub
	gpu        *sim.GPU
	clock      *sim.Clock
	stream     backend.Stream
	lane       int
	a, b, c, d float64
	noise      float64
	rng        *rand.Rand
	batch      int // requests served at once
	mix        []tenantMix
	live       []liveReq
	next       uint64
	work       []RequestWork
	truth      map[uint64]float64
	started    map[uint64]uint64 // id -> step of its first span
	spans      int64             // lane span time, ns, of the steps that served requests
	ended      int
}

// tenantMix is one tenant's requests: prompts and decodes drawn uniformly
// in [lo, hi].
type tenantMix struct {
	class              RequestClass
	promptLo, promptHi int
	decodeLo, decodeHi int
}

type liveReq struct {
	id          uint64
	class       RequestClass
	prompt, ctx uint32
	left        int
	prefilled   bool
	tenant      int
}

func newServedEngine(t testing.TB, o Options, batch int, seed int64) *servedEngine {
	h, gpu, clock, s := simHub(t, o)
	e := &servedEngine{t: t, h: h, gpu: gpu, clock: clock, stream: s, a: 300e3, b: 40, c: 5, d: 0.02, noise: 0.01,
		rng: rand.New(rand.NewSource(seed)), batch: batch, truth: map[uint64]float64{}, started: map[uint64]uint64{}}
	e.lane, _ = h.LaneIndex("decode")
	return e
}

// tenants registers two tenants: A with long prompts and contexts, B
// with short ones.
func (e *servedEngine) tenants() {
	a, err := e.h.RequestClass("llama", "", "A")
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := e.h.RequestClass("llama", "", "B")
	if err != nil {
		e.t.Fatal(err)
	}
	e.mix = []tenantMix{{a, 1024, 4096, 16, 64}, {b, 16, 256, 8, 32}}
}

func (e *servedEngine) admit() {
	for len(e.live) < e.batch {
		ti := len(e.live) % len(e.mix)
		m := e.mix[ti]
		e.next++
		e.live = append(e.live, liveReq{id: e.next, class: m.class, tenant: ti,
			prompt: uint32(m.promptLo + e.rng.Intn(m.promptHi-m.promptLo+1)),
			left:   m.decodeLo + e.rng.Intn(m.decodeHi-m.decodeLo+1)})
	}
}

// cost is what w costs a step, but for the step's fixed cost.
func (e *servedEngine) cost(w RequestWork) float64 {
	r := costmodel.NewRequest(w.NewTokens+w.DecodedTokens, w.Context)
	return e.b*r[0] + e.c*r[1] + e.d*r[2]
}

// step serves one step of every live request and ends those done.
func (e *servedEngine) step() {
	h := e.h
	h.BeginStep()
	e.admit()
	e.work = e.work[:0]
	model := e.a
	for i := range e.live {
		r := &e.live[i]
		w := RequestWork{ID: r.id, Class: r.class}
		if !r.prefilled {
			w.NewTokens = r.prompt
			r.ctx = r.prompt
			r.prefilled = true
			e.started[r.id] = h.Step()
		} else {
			w.DecodedTokens = 1
			r.ctx++
		}
		w.Context = r.ctx
		model += e.cost(w)
		e.work = append(e.work, w)
	}
	factor := 1 + e.noise*e.rng.NormFloat64()
	dur := time.Duration(model * factor)
	if err := h.ServeRequests(e.lane, e.work); err != nil {
		e.t.Fatal(err)
	}
	h.LaneBegin(e.lane)
	e.gpu.Launch(e.stream, dur)
	h.LaneEnd(e.lane)
	e.clock.Advance(dur + time.Microsecond)
	e.spans += int64(dur)
	n := float64(len(e.live))
	for _, w := range e.work {
		e.truth[w.ID] += (e.a/n + e.cost(w)) * factor
	}
	kept := e.live[:0]
	for _, r := range e.live {
		if r.prefilled && r.left == 0 {
			if err := h.EndRequest(r.id); err != nil {
				e.t.Fatal(err)
			}
			e.ended++
			continue
		}
		if r.prefilled && e.started[r.id] != h.Step() {
			r.left--
		}
		kept = append(kept, r)
	}
	e.live = kept
}

// drain ends every live request and lands everything.
func (e *servedEngine) drain() {
	for _, r := range e.live {
		if err := e.h.EndRequest(r.id); err != nil {
			e.t.Fatal(err)
		}
		e.ended++
	}
	e.live = e.live[:0]
	e.clock.Advance(time.Millisecond)
	e.h.BeginStep()
	e.h.Harvest()
}

func TestAttributionMatchesSimulatedShares(t *testing.T) {
	e := newServedEngine(t, Options{Lanes: []string{"decode"}}, 16, 1)
	e.tenants()
	for i := 0; i < 4000; i++ {
		e.step()
	}
	e.drain()
	recs := e.h.FinishedRequests(0, nil)
	if len(recs) != e.ended {
		t.Fatalf("%d records for %d requests ended", len(recs), e.ended)
	}
	var sum time.Duration
	var tenant [2]struct{ attr, truth, tokens float64 }
	checked, worst := 0, 0.0
	for _, r := range recs {
		sum += r.GPUTime
		want := e.truth[r.ID]
		ti := 0
		if r.Tenant == "B" {
			ti = 1
		}
		tenant[ti].attr += float64(r.GPUTime)
		tenant[ti].truth += want
		tenant[ti].tokens += float64(r.NewTokens + r.DecodedTokens)
		if r.Input+r.Output != r.GPUTime || r.Busy != 0 || r.Unmeasured != 0 {
			t.Fatalf("record %+v: input and output do not add up, or busy or unmeasured without windows or drops", r)
		}
		if e.started[r.ID] < 100 {
			continue // split while the fit was young
		}
		if r.Fallback != 0 {
			t.Fatalf("request %d: %d spans split by tokens after the fit settled", r.ID, r.Fallback)
		}
		checked++
		d := math.Abs(float64(r.GPUTime)-want) / want
		worst = max(worst, d)
		if d > 0.02 {
			t.Errorf("request %d (%s, %d new, %d decoded): %v attributed, %v simulated (%.1f%% off)",
				r.ID, r.Tenant, r.NewTokens, r.DecodedTokens, r.GPUTime, time.Duration(want), 100*d)
		}
	}
	t.Logf("%d requests checked, worst %.2f%% off", checked, 100*worst)
	if checked < 500 {
		t.Fatalf("only %d requests checked", checked)
	}
	if int64(sum) != e.spans {
		t.Fatalf("records add up to %v, the spans to %v", sum, time.Duration(e.spans))
	}
	a := e.h.Attribution()
	if len(a.Lanes) != 1 || a.Lanes[0].Model.Status != "ok" || a.Lanes[0].Time != sum || a.Lanes[0].Spans != 4000 {
		t.Fatalf("lane attribution %+v", a.Lanes)
	}
	m := a.Lanes[0].Model
	if math.Abs(float64(m.Fixed)-e.a) > 0.05*e.a || math.Abs(m.PerContext-e.c) > 0.05*e.c || math.Abs(m.PerPair-e.d) > 0.05*e.d {
		t.Errorf("fitted %+v, simulated a %v, c %v, d %v", m, e.a, e.c, e.d)
	}
	// Tenant A's share as attributed, as simulated, and by tokens.
	share := func(x, y float64) float64 { return x / (x + y) }
	t.Logf("tenant A's share: attributed %.3f, simulated %.3f, by tokens %.3f",
		share(tenant[0].attr, tenant[1].attr), share(tenant[0].truth, tenant[1].truth), share(tenant[0].tokens, tenant[1].tokens))
	if d := math.Abs(share(tenant[0].attr, tenant[1].attr) - share(tenant[0].truth, tenant[1].truth)); d > 0.01 {
		t.Errorf("tenant A's share off by %.3f", d)
	}
	// The classes' totals are the records'.
	var classSum time.Duration
	var finished uint64
	for _, c := range a.Classes {
		for _, l := range c.Lanes {
			classSum += l.GPUTime
		}
		finished += c.Finished
		if c.PerRequest.Count != c.Finished {
			t.Errorf("class %s/%s: %d finished, %d in its histogram", c.Model, c.Tenant, c.Finished, c.PerRequest.Count)
		}
	}
	if classSum != sum || finished != uint64(len(recs)) {
		t.Fatalf("classes: %v over %d requests, records: %v over %d", classSum, finished, sum, len(recs))
	}
}

// The fit's failure case: every step the same batch of requests that
// differ. Nothing can price them apart, and the records say so.
func TestAttributionAllBatchesAlike(t *testing.T) {
	e := newServedEngine(t, Options{Lanes: []string{"decode"}}, 2, 2)
	work := []RequestWork{{ID: 1, DecodedTokens: 1, Context: 8000}, {ID: 2, DecodedTokens: 1, Context: 100}}
	for i := 0; i < 300; i++ {
		e.h.BeginStep()
		if err := e.h.ServeRequests(e.lane, work); err != nil {
			t.Fatal(err)
		}
		e.h.LaneBegin(e.lane)
		e.gpu.Launch(e.stream, time.Millisecond)
		e.h.LaneEnd(e.lane)
		e.clock.Advance(1100 * time.Microsecond)
	}
	for _, id := range []uint64{1, 2} {
		if err := e.h.EndRequest(id); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(time.Millisecond)
	e.h.BeginStep()
	recs := e.h.FinishedRequests(0, nil)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if r.Fallback != r.Steps || r.Steps != 300 {
			t.Errorf("request %d: %d of %d spans split by tokens, want all", r.ID, r.Fallback, r.Steps)
		}
	}
	if recs[0].GPUTime != recs[1].GPUTime {
		t.Errorf("split by tokens reads %v and %v, want equal", recs[0].GPUTime, recs[1].GPUTime)
	}
	if s := e.h.Attribution().Lanes[0].Model.Status; s != "undetermined" {
		t.Fatalf("status %q, want undetermined", s)
	}
}

// Each span's parts add up to it exactly, whatever the weights.
func TestAttributionSpanExact(t *testing.T) {
	e := newServedEngine(t, Options{Lanes: []string{"decode"}}, 3, 3)
	rng := rand.New(rand.NewSource(3))
	for step := 0; step < 50; step++ {
		e.h.BeginStep()
		n := 1 + rng.Intn(5)
		work := make([]RequestWork, n)
		for i := range work {
			work[i] = RequestWork{ID: uint64(step*10 + i + 1), NewTokens: uint32(rng.Intn(3)), DecodedTokens: 1, Context: uint32(rng.Intn(1 << 20))}
		}
		if err := e.h.ServeRequests(e.lane, work); err != nil {
			t.Fatal(err)
		}
		dur := time.Duration(1 + rng.Int63n(int64(time.Millisecond)))
		e.h.LaneBegin(e.lane)
		e.gpu.Launch(e.stream, dur)
		e.h.LaneEnd(e.lane)
		for _, w := range work {
			if err := e.h.EndRequest(w.ID); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(dur + time.Microsecond)
		e.h.BeginStep()
		var sum time.Duration
		recs := e.h.FinishedRequests(uint64(step*0), nil)
		got := 0
		for _, r := range recs {
			if r.ID > uint64(step*10) && r.ID <= uint64(step*10+10) {
				sum += r.GPUTime
				got++
				if r.GPUTime < 0 || r.Input+r.Output != r.GPUTime {
					t.Fatalf("record %+v", r)
				}
			}
		}
		if got != n || sum != dur {
			t.Fatalf("step %d: %d records add up to %v, the span is %v", step, got, sum, dur)
		}
	}
}

// A harvester that falls behind loses no span's time: 1,500 steps' spans
// landing in one harvest are each split among their requests.
func TestAttributionHarvestBehind(t *testing.T) {
	e := newServedEngine(t, Options{Lanes: []string{"decode"}}, 1, 4)
	// A background harvester whose first tick is an hour away: steps
	// only count, and the one harvest is the test's.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.h.RunHarvester(ctx, time.Hour) }()
	defer func() { cancel(); <-done }()
	for !e.h.background.Load() {
		runtime.Gosched()
	}
	const steps = 1500
	var total time.Duration
	for step := 0; step < steps; step++ {
		e.h.BeginStep()
		id := uint64(step + 1)
		if err := e.h.ServeRequests(e.lane, []RequestWork{{ID: id, DecodedTokens: 1, Context: uint32(step)}}); err != nil {
			t.Fatal(err)
		}
		dur := time.Duration(10+step%7) * time.Microsecond
		total += dur
		e.h.LaneBegin(e.lane)
		e.gpu.Launch(e.stream, dur)
		e.h.LaneEnd(e.lane)
		if err := e.h.EndRequest(id); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(dur + time.Microsecond)
	}
	e.h.Harvest()
	recs := e.h.FinishedRequests(0, nil)
	var sum time.Duration
	for _, r := range recs {
		sum += r.GPUTime
	}
	a := e.h.Attribution()
	if len(recs) != steps || sum != total || len(a.Lanes) != 1 || a.Lanes[0].Spans != steps || a.Lanes[0].Unmeasured != 0 {
		t.Fatalf("%d records of %v, lanes %+v: want %d records of %v, every span split", len(recs), sum, a.Lanes, steps, total)
	}
}

func TestAttributionBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 requests")
	}
	e := newServedEngine(t, Options{Lanes: []string{"decode"}, MaxRequests: 256}, 32, 4)
	e.tenants()
	e.mix[0].promptHi, e.mix[0].decodeLo, e.mix[0].decodeHi = 2048, 2, 8
	e.mix[1].decodeLo, e.mix[1].decodeHi = 2, 8
	var recs []RequestRecord
	var seq uint64
	var ms runtime.MemStats
	var base uint64
	read := 0
	for e.ended < 100_000 {
		e.step()
		if e.h.Step()%8 == 0 {
			recs = e.h.FinishedRequests(seq, recs)
			read += len(recs)
			if len(recs) > 0 {
				seq = recs[len(recs)-1].Seq
			}
			for _, r := range recs {
				delete(e.truth, r.ID)
				delete(e.started, r.ID)
			}
			if a := e.h.Attribution(); a.InFlight > 256 {
				t.Fatalf("%d requests held, more than MaxRequests", a.InFlight)
			}
		}
		if e.ended >= 10_000 && base == 0 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			base = ms.HeapInuse
		}
	}
	e.drain()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	grown := int64(ms.HeapInuse) - int64(base)
	t.Logf("heap in use after 10,000 requests %d KiB, after %d: %+d KiB", base>>10, e.ended, grown>>10)
	if grown > 256<<10 {
		t.Fatalf("heap grew %d KiB over %d requests", grown>>10, e.ended-10_000)
	}
	if a := e.h.Attribution(); a.Counters.RecordsOverwritten != 0 || a.Finished != uint64(e.ended) {
		t.Fatalf("counters %+v, finished %d of %d", a.Counters, a.Finished, e.ended)
	}
}

func TestServeRequestsRefusals(t *testing.T) {
	h, _, _, _ := simHub(t, Options{Lanes: []string{"prefill", "decode"}, MaxRequests: 4})
	ok := RequestWork{ID: 1, DecodedTokens: 1, Context: 10}
	for _, c := range []struct {
		name string
		lane int
		reqs []RequestWork
		want string
	}{
		{"unknown lane", 2, []RequestWork{ok}, "no such lane"},
		{"negative lane", -1, []RequestWork{ok}, "no such lane"},
		{"zero id", 0, []RequestWork{{DecodedTokens: 1}}, "id 0"},
		{"no tokens", 0, []RequestWork{{ID: 5}}, "no tokens"},
		{"absurd tokens", 0, []RequestWork{{ID: 5, NewTokens: MaxRequestTokens, DecodedTokens: 1}}, "more than"},
		{"absurd context", 0, []RequestWork{{ID: 5, DecodedTokens: 1, Context: MaxRequestContext + 1}}, "context"},
		{"unregistered class", 0, []RequestWork{{ID: 5, DecodedTokens: 1, Class: 7}}, "never returned"},
		{"repeated new id", 0, []RequestWork{{ID: 5, DecodedTokens: 1}, {ID: 6, DecodedTokens: 1}, {ID: 5, DecodedTokens: 1}}, "twice in one call"},
		{"too many", 0, []RequestWork{{ID: 11, DecodedTokens: 1}, {ID: 12, DecodedTokens: 1}, {ID: 13, DecodedTokens: 1}, {ID: 14, DecodedTokens: 1}, {ID: 15, DecodedTokens: 1}}, "more than Options.MaxRequests"},
	} {
		err := h.ServeRequests(c.lane, c.reqs)
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a *RequestError saying %q", c.name, err, c.want)
		}
	}
	if a := h.Attribution(); a.InFlight != 0 {
		t.Fatalf("refused calls left %d requests held", a.InFlight)
	}
	// Repeated ids of requests in flight: in one call, and across calls
	// of one span.
	if err := h.ServeRequests(1, []RequestWork{ok, {ID: 2, DecodedTokens: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := h.ServeRequests(1, []RequestWork{{ID: 3, DecodedTokens: 1}, {ID: 2, DecodedTokens: 1}}); err == nil || !strings.Contains(err.Error(), "served twice") {
		t.Fatalf("an id served twice in a span: %v", err)
	}
	if err := h.ServeRequests(0, []RequestWork{{ID: 2, DecodedTokens: 1}, {ID: 2, DecodedTokens: 1}}); err == nil || !strings.Contains(err.Error(), "twice in one call") {
		t.Fatalf("an id in flight named twice: %v", err)
	}
	// The other lane may serve it in the same step, and the next step again.
	if err := h.ServeRequests(0, []RequestWork{{ID: 2, DecodedTokens: 1}}); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if err := h.ServeRequests(1, []RequestWork{ok}); err != nil {
		t.Fatal(err)
	}
	if a := h.Attribution(); a.InFlight != 2 || a.Counters.Refused != 11 {
		t.Fatalf("held %d, refused %d; want 2 and 11", a.InFlight, a.Counters.Refused)
	}
	if err := h.EndRequest(99); err != ErrUnknownRequest {
		t.Fatalf("ending an unknown id: %v", err)
	}
	if err := h.EndRequest(1); err != nil {
		t.Fatal(err)
	}
	if err := h.EndRequest(1); err != ErrUnknownRequest {
		t.Fatalf("ending an id twice: %v", err)
	}
	if err := h.LaneWork(0, math.NaN(), 0); err == nil {
		t.Fatal("NaN flops accepted")
	}
	if err := h.LaneWork(0, -1, 0); err == nil {
		t.Fatal("negative flops accepted")
	}
	if err := h.LaneWork(5, 1, 1); err == nil {
		t.Fatal("LaneWork of an unknown lane accepted")
	}
	if _, err := h.RequestClass("bad\x01name", "", ""); err == nil {
		t.Fatal("an unprintable model name accepted")
	}
}

func TestRequestClassBudget(t *testing.T) {
	h := newHub(t, Options{})
	seen := map[RequestClass]bool{}
	for i := 0; i < MaxRequestClasses-2; i++ {
		c, err := h.RequestClass("m", "", "t"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+itoa(i))
		if err != nil || seen[c] || c <= RequestClassOther {
			t.Fatalf("class %d: %v, %v", i, c, err)
		}
		seen[c] = true
	}
	again, err := h.RequestClass("m", "", "t"+string(rune('a'))+itoa(0))
	if err != nil || !seen[again] {
		t.Fatalf("registering a class again: %v, %v", again, err)
	}
	c, err := h.RequestClass("m", "", "one too many")
	if c != RequestClassOther || err == nil {
		t.Fatalf("past the budget: %v, %v; want other and an error", c, err)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// A request ServeRequests named whose span never came is unmeasured; one
// the engine never ends is ended after RequestIdle and marked abandoned.
func TestAttributionUnmeasuredAndAbandoned(t *testing.T) {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	s := gpu.NewStream()
	h := newHub(t, Options{Lanes: []string{"decode"}, Level: LevelKernel, Now: clock.Now})
	if err := h.Install(0, s, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	if err := h.ServeRequests(0, []RequestWork{{ID: 1, DecodedTokens: 1}, {ID: 2, DecodedTokens: 1}}); err != nil {
		t.Fatal(err)
	}
	// No lane span this step; the next step's lands.
	h.BeginStep()
	if err := h.ServeRequests(0, []RequestWork{{ID: 1, DecodedTokens: 1}}); err != nil {
		t.Fatal(err)
	}
	h.LaneBegin(0)
	gpu.Launch(s, time.Millisecond)
	h.LaneEnd(0)
	if err := h.EndRequest(1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Millisecond)
	h.BeginStep()
	recs := h.FinishedRequests(0, nil)
	if len(recs) != 1 || recs[0].ID != 1 || recs[0].Steps != 2 || recs[0].Unmeasured != 1 || recs[0].GPUTime != time.Millisecond {
		t.Fatalf("records %+v", recs)
	}
	clock.Advance(RequestIdle + time.Second)
	h.BeginStep()
	recs = h.FinishedRequests(recs[0].Seq, recs)
	if len(recs) != 1 || recs[0].ID != 2 || !recs[0].Abandoned || recs[0].Unmeasured != 1 {
		t.Fatalf("after RequestIdle: %+v", recs)
	}
	if err := h.EndRequest(2); err != ErrUnknownRequest {
		t.Fatalf("ending an abandoned request: %v", err)
	}
	if a := h.Attribution(); a.Counters.Abandoned != 1 || a.Lanes[0].Unmeasured != 1 || a.InFlight != 0 {
		t.Fatalf("counters %+v, lanes %+v", a.Counters, a.Lanes)
	}
}

func TestRequestsAllocateNothing(t *testing.T) {
	h, gpu, clock, s := simHub(t, Options{Lanes: []string{"decode"}})
	work := make([]RequestWork, 64)
	id := uint64(0)
	var recs []RequestRecord
	var seq uint64
	step := func() {
		h.BeginStep()
		for i := range work {
			id++
			work[i] = RequestWork{ID: id, NewTokens: 7, Context: 100}
		}
		_ = h.ServeRequests(0, work)
		_ = h.LaneWork(0, 1e9, 1e6)
		h.LaneBegin(0)
		gpu.Launch(s, time.Millisecond)
		h.LaneEnd(0)
		for i := range work {
			_ = h.EndRequest(work[i].ID)
		}
		clock.Advance(2 * time.Millisecond)
		recs = h.FinishedRequests(seq, recs)
		if n := len(recs); n > 0 {
			seq = recs[n-1].Seq
		}
	}
	for i := 0; i < 100; i++ {
		step() // grows every buffer to its size
	}
	if n := testing.AllocsPerRun(200, step); n != 0 {
		t.Fatalf("%v allocations a step of 64 requests, harvest and poll included", n)
	}
	h.SetLevel(LevelOff)
	if n := testing.AllocsPerRun(100, func() {
		_ = h.ServeRequests(0, work)
		_ = h.LaneWork(0, 1, 1)
	}); n != 0 {
		t.Fatalf("%v allocations while off", n)
	}
}

func BenchmarkServeRequests(b *testing.B) {
	for _, n := range []int{8, 256} {
		b.Run("requests="+itoa(n), func(b *testing.B) {
			h, gpu, clock, s := simHub(b, Options{Lanes: []string{"decode"}, MaxRequests: 1024})
			work := make([]RequestWork, n)
			for i := range work {
				work[i] = RequestWork{ID: uint64(i + 1), DecodedTokens: 1, Context: uint32(100 + i)}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.BeginStep()
				_ = h.ServeRequests(0, work)
				h.LaneBegin(0)
				gpu.Launch(s, time.Millisecond)
				h.LaneEnd(0)
				clock.Advance(2 * time.Millisecond)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/request")
		})
	}
}

// Lane spans no request was said for are counted, with their time: no
// request pays them.
func TestAttributionUnattributed(t *testing.T) {
	h, gpu, clock, s := simHub(t, Options{Lanes: []string{"decode"}})
	id := uint64(0)
	for step := 1; step <= 300; step++ {
		h.BeginStep()
		if step > 200 || step%2 == 0 {
			id++
			if err := h.ServeRequests(0, []RequestWork{{ID: id, DecodedTokens: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		h.LaneBegin(0)
		gpu.Launch(s, 100*time.Microsecond)
		h.LaneEnd(0)
		if step > 200 || step%2 == 0 {
			if err := h.EndRequest(id); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(200 * time.Microsecond)
	}
	h.BeginStep()
	// Step 1's span landed before the first request was said: the hub
	// counts from then on.
	l := h.Attribution().Lanes[0]
	if l.Unattributed != 99 || l.UnattributedTime != 99*100*time.Microsecond || l.Spans != 200 {
		t.Fatalf("%d spans split, %d unattributed (%v), want 200 and 99 (9.9ms)", l.Spans, l.Unattributed, l.UnattributedTime)
	}
}

// Engines' threads say requests and end them while a harvester lands and
// splits, and readers poll: every request ends up in one record, once.
func TestRequestsConcurrent(t *testing.T) {
	h, gpu, clock, s := simHub(t, Options{Lanes: []string{"prefill", "decode"}, MaxRequests: 64})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.RunHarvester(ctx, 100*time.Microsecond) }()
	const writers, per = 3, 300
	var wg sync.WaitGroup
	var running atomic.Int32
	running.Store(writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			defer running.Add(-1)
			work := make([]RequestWork, 4)
			for i := 0; i < per; i += len(work) {
				for j := range work {
					work[j] = RequestWork{ID: uint64(w*per + i + j + 1), DecodedTokens: 1, Context: uint32(j * 100)}
				}
				// A full table waits for ended requests' spans to land, as
				// an engine admits no more requests than it holds.
				for {
					err := h.ServeRequests(w%2, work)
					if err == nil {
						break
					}
					var re *RequestError
					if !errors.Is(err, ErrRequestsBacklog) && (!errors.As(err, &re) || !strings.Contains(re.Why, "Options.MaxRequests")) {
						t.Error(err)
						return
					}
					time.Sleep(50 * time.Microsecond)
				}
				for j := range work {
					if err := h.EndRequest(work[j].ID); err != nil {
						t.Error(err)
					}
				}
			}
		}(w)
	}
	var recs []RequestRecord
	seen := map[uint64]int{}
	var seq uint64
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			recs = h.FinishedRequests(seq, recs)
			for _, r := range recs {
				seen[r.ID]++
				seq = r.Seq
			}
			_ = h.Snapshot()
			time.Sleep(100 * time.Microsecond) // a poller that never let go of the lock would starve the harvests
		}
	}()
	// The stepping thread: steps with lane spans while the writers say
	// their requests, and a few after (a request said after a step's
	// lane spans waits for the next step's).
	for i, after := 0, 0; after < 5 || i < 100; i++ {
		if running.Load() == 0 {
			after++
		}
		h.BeginStep()
		for lane := 0; lane < 2; lane++ {
			h.LaneBegin(lane)
			gpu.Launch(s, 50*time.Microsecond)
			h.LaneEnd(lane)
		}
		clock.Advance(200 * time.Microsecond)
		time.Sleep(20 * time.Microsecond)
	}
	wg.Wait()
	for i := 0; i < 3; i++ {
		h.BeginStep()
		time.Sleep(time.Millisecond)
	}
	close(stop)
	readers.Wait()
	cancel()
	<-done
	h.Harvest() // what the harvester's last ticks may have skipped
	recs = h.FinishedRequests(seq, recs)
	for _, r := range recs {
		seen[r.ID]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("request %d: %d records", id, n)
		}
	}
	// Records a slow reader missed are counted, not lost unsaid.
	a := h.Attribution()
	if a.Finished != writers*per || uint64(len(seen))+a.Counters.RecordsOverwritten != writers*per {
		t.Errorf("%d requests finished, %d read and %d overwritten unread, %d ended", a.Finished, len(seen), a.Counters.RecordsOverwritten, writers*per)
	}
	if a.InFlight != 0 {
		t.Errorf("%d requests still held", a.InFlight)
	}
}

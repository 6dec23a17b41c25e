package otlp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// discard is a collector that reads and throws away what it gets, so that
// the benchmarks measure the sending side (and the loopback).
func discard(tb testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// loop is a serving loop on one simulated GPU: every step two lanes of
// three kernels, kernel spans on every step: 8 spans a step.
type loop struct {
	h     *gpuspans.Hub
	g     *sim.GPU
	clock *sim.Clock
}

const spansPerStep = 8

func newLoop(tb testing.TB) *loop {
	clock := sim.NewClock(start)
	h, err := gpuspans.New(gpuspans.Options{
		Level: gpuspans.LevelKernel, KernelSpanEvery: 1, RecentSpans: 1 << 16,
		Now: clock.Now, Logf: func(string, ...interface{}) {},
	})
	if err != nil {
		tb.Fatal(err)
	}
	g := sim.New(sim.Options{Device: 0, Now: clock.Now})
	if err := h.Install(0, laneStream[0], g.Opener()); err != nil {
		tb.Fatal(err)
	}
	return &loop{h: h, g: g, clock: clock}
}

func (l *loop) step() {
	l.h.BeginStep()
	for lane := 0; lane < 2; lane++ {
		l.h.LaneBegin(lane)
		for k := uint64(1); k <= 3; k++ {
			ks := l.h.KernelBegin(k, laneStream[0])
			l.g.Launch(laneStream[0], 10*time.Microsecond)
			l.h.KernelEnd(ks)
		}
		l.h.LaneEnd(lane)
	}
	l.clock.Advance(time.Millisecond)
}

// BenchmarkExport is the exporter's host time per span it exports, all
// sampled: reading the hub, building the OTel spans and their step roots,
// queueing, encoding and posting them over OTLP/HTTP (to a loopback
// collector that discards them; its share of the CPU is counted too).
func BenchmarkExport(b *testing.B) {
	l := newLoop(b)
	const steps = 512
	for i := 0; i < steps; i++ {
		l.step()
	}
	l.h.Harvest()
	srv := discard(b)
	e, err := New(context.Background(), l.h, Options{LookupEnv: noEnv, Endpoint: srv.URL, SampleEvery: 1, PollEvery: time.Hour, QueueSpans: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	perRound := uint64(steps * (spansPerStep + 1)) // spans and roots
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Read the same spans again, as new: the poller's state only.
		e.asm.last = 0
		clear(e.asm.rootSent)
		want := e.Stats().Exported + perRound
		e.asm.poll(true)
		for e.Stats().Exported < want {
			if e.Stats().ExportFailed+e.Stats().QueueFull > 0 {
				b.Fatalf("spans dropped: %+v", e.Stats())
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(uint64(b.N)*perRound), "ns/span")
}

// pace is the untimed wait between steps of the paced loop, standing in
// for the GPU: 5,000 steps a second at most, still faster than engines step.
const pace = 200 * time.Microsecond

// withExporter starts an exporter of one step in sampleEvery (0: none) on
// l's hub, reading it every millisecond, far more often than the default,
// to make the most of any contention on the hub's lock.
func withExporter(tb testing.TB, l *loop, sampleEvery int) func() {
	if sampleEvery == 0 {
		return func() {}
	}
	srv := discard(tb)
	e, err := New(context.Background(), l.h, Options{LookupEnv: noEnv, Endpoint: srv.URL, SampleEvery: sampleEvery, PollEvery: time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	return func() { _ = e.Close(context.Background()) }
}

// timedSteps runs n paced steps and returns the host time spent in them.
func timedSteps(l *loop, n int) time.Duration {
	var in time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		l.step()
		in += time.Since(t0)
		time.Sleep(pace)
	}
	return in
}

// servingLoop measures the serving loop's host time per span (the span
// calls, the simulated launches and BeginStep's harvest), paced like an
// engine waiting for its GPU, with an exporter of one step in sampleEvery
// running (0: none). ns/span is the metric; ns/op includes the pause.
// Allocations are not reported: ReportAllocs would count the exporter's
// goroutines, and the span paths allocate nothing (package gpuspans tests).
func servingLoop(sampleEvery int) func(*testing.B) {
	return func(b *testing.B) {
		l := newLoop(b)
		defer withExporter(b, l, sampleEvery)()
		b.ResetTimer()
		in := timedSteps(l, b.N)
		b.ReportMetric(float64(in.Nanoseconds())/float64(b.N*spansPerStep), "ns/span")
	}
}

func BenchmarkServingLoop(b *testing.B) {
	b.Run("exporter=off", servingLoop(0))
	b.Run("exporter=on/sample=16", servingLoop(DefaultSampleEvery))
	b.Run("exporter=on/sample=1", servingLoop(1))
}

// BenchmarkServingLoopRatio runs the pair off and on (default sampling) in
// one run, interleaved in seven rounds of 2,000 paced steps each, and
// reports the median of the ratios on/off of the time per span, and their
// range: 1 means the exporter costs the serving loop nothing.
func BenchmarkServingLoopRatio(b *testing.B) {
	const rounds, steps = 7, 2000
	for n := 0; n < b.N; n++ {
		var ratios []float64
		for r := 0; r < rounds; r++ {
			off := newLoop(b)
			tOff := timedSteps(off, steps)
			on := newLoop(b)
			stop := withExporter(b, on, DefaultSampleEvery)
			tOn := timedSteps(on, steps)
			stop()
			ratios = append(ratios, float64(tOn)/float64(tOff))
		}
		sort.Float64s(ratios)
		b.ReportMetric(ratios[rounds/2], "on/off")
		b.ReportMetric(ratios[0], "min")
		b.ReportMetric(ratios[rounds-1], "max")
	}
}

package prom

import (
	"math"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// nativeBuckets decodes a native histogram's positive buckets by key.
func nativeBuckets(t *testing.T, h *dto.Histogram) map[int]uint64 {
	t.Helper()
	out := map[int]uint64{}
	key, d, v := 0, 0, int64(0)
	for i, sp := range h.GetPositiveSpan() {
		if i == 0 {
			key = int(sp.GetOffset())
		} else {
			key += int(sp.GetOffset())
		}
		for n := uint32(0); n < sp.GetLength(); n++ {
			v += h.GetPositiveDelta()[d]
			d++
			if v < 0 {
				t.Fatalf("negative count %d at key %d", v, key)
			}
			if v > 0 {
				out[key] = uint64(v)
			}
			key++
		}
	}
	if d != len(h.GetPositiveDelta()) {
		t.Fatalf("%d deltas, spans cover %d", len(h.GetPositiveDelta()), d)
	}
	return out
}

// TestNativeMatchesClientGolang observes the same durations into a hub
// aggregate and into a client_golang native histogram of schema 5: every
// span must land in the same bucket, edges included.
func TestNativeMatchesClientGolang(t *testing.T) {
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:                            "ref",
		Help:                            "reference",
		NativeHistogramBucketFactor:     1.0219, // just above 2^(1/32): schema 5
		NativeHistogramZeroThreshold:    gpuspans.ZeroThreshold,
		NativeHistogramMaxBucketNumber:  0,
		NativeHistogramMinResetDuration: time.Hour,
	})
	var a gpuspans.Aggregate
	observe := func(d time.Duration) {
		a.Observe(d)
		ref.Observe(float64(d) / 1e9)
	}
	rng := rand.New(rand.NewSource(2))
	for i := 0; i < 20000; i++ { // 100 ns .. 100 s
		observe(time.Duration(math.Pow(10, 2+9*rng.Float64())))
	}
	for i := 0; i < gpuspans.NumBuckets; i++ { // both sides of every edge
		ub := gpuspans.BucketUpperBound(i) * 1e9
		observe(time.Duration(math.Floor(ub)))
		observe(time.Duration(math.Floor(ub)) + 1)
	}
	observe(0)
	observe(59)

	var m dto.Metric
	if err := ref.Write(&m); err != nil {
		t.Fatal(err)
	}
	want := m.GetHistogram()
	if want.GetSchema() != gpuspans.Schema {
		t.Fatalf("reference schema %d", want.GetSchema())
	}
	var got dto.Histogram
	writeNative(&got, &a)
	if got.GetZeroCount() != want.GetZeroCount() || got.GetZeroThreshold() != want.GetZeroThreshold() {
		t.Errorf("zero bucket %d <= %g, client_golang %d <= %g", got.GetZeroCount(), got.GetZeroThreshold(), want.GetZeroCount(), want.GetZeroThreshold())
	}
	g, w := nativeBuckets(t, &got), nativeBuckets(t, want)
	// client_golang keeps what we clamp: fold its keys above ours.
	for k, c := range w {
		if k > gpuspans.MaxBucketKey {
			w[gpuspans.MaxBucketKey] += c
			delete(w, k)
		}
	}
	if len(g) != len(w) {
		t.Errorf("%d buckets, client_golang %d", len(g), len(w))
	}
	for k, c := range w {
		if g[k] != c {
			t.Errorf("key %d: %d spans, client_golang %d", k, g[k], c)
		}
	}
}

// TestNativeSpans: gaps of up to maxGap empty buckets stay inside a span,
// longer ones start a new one.
func TestNativeSpans(t *testing.T) {
	var a gpuspans.Aggregate
	base := gpuspans.BucketIndex(100 * time.Microsecond)
	at := func(i int) time.Duration { return time.Duration(gpuspans.BucketUpperBound(i) * 1e9) }
	for _, i := range []int{base, base, base + 1, base + 4, base + 9, base + 9, base + 9} {
		a.Observe(at(i))
	}
	var h dto.Histogram
	writeNative(&h, &a)
	var spans []string
	for _, sp := range h.GetPositiveSpan() {
		spans = append(spans, strings.TrimSpace(sp.String()))
	}
	k := gpuspans.BucketKey(base)
	want := []int32{int32(k), 5, 4, 1} // offset, length, offset, length
	if len(h.GetPositiveSpan()) != 2 ||
		h.PositiveSpan[0].GetOffset() != want[0] || h.PositiveSpan[0].GetLength() != uint32(want[1]) ||
		h.PositiveSpan[1].GetOffset() != want[2] || h.PositiveSpan[1].GetLength() != uint32(want[3]) {
		t.Errorf("spans %v, want offset %d length %d, offset %d length %d", spans, want[0], want[1], want[2], want[3])
	}
	if d := h.GetPositiveDelta(); len(d) != 6 || d[0] != 2 || d[1] != -1 || d[2] != -1 || d[3] != 0 || d[4] != 1 || d[5] != 2 {
		t.Errorf("deltas %v", d)
	}
	var empty dto.Histogram
	writeNative(&empty, &gpuspans.Aggregate{})
	if len(empty.GetPositiveSpan()) != 1 || len(empty.GetPositiveDelta()) != 0 {
		t.Errorf("empty: spans %v deltas %v", empty.GetPositiveSpan(), empty.GetPositiveDelta())
	}
}

// TestNativeCollect: the served hub's histograms carry native buckets
// that match the hub's aggregates exactly, and none with
// WithoutNativeHistograms.
func TestNativeCollect(t *testing.T) {
	h := servedHub(t)
	s := h.Snapshot()
	for _, classicOnly := range []bool{false, true} {
		var opts []Option
		if classicOnly {
			opts = append(opts, WithoutNativeHistograms())
		}
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(NewCollector(h, opts...))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, mf := range mfs {
			if mf.GetType() != dto.MetricType_HISTOGRAM {
				continue
			}
			for _, m := range mf.GetMetric() {
				n++
				hist := m.GetHistogram()
				if classicOnly {
					if hist.Schema != nil || len(hist.GetPositiveSpan()) != 0 {
						t.Errorf("%s %v: native part without native histograms", mf.GetName(), m.GetLabel())
					}
					continue
				}
				if hist.GetSchema() != gpuspans.Schema || hist.GetZeroThreshold() != gpuspans.ZeroThreshold {
					t.Errorf("%s %v: schema %d, zero threshold %g", mf.GetName(), m.GetLabel(), hist.GetSchema(), hist.GetZeroThreshold())
				}
				var a *gpuspans.Aggregate
				for _, aggs := range [][]gpuspans.Aggregate{s.Lanes, s.Kernels} {
					for i := range aggs {
						if labelsOf(m)["device"] == strconv.Itoa(aggs[i].Device) && (labelsOf(m)["lane"] == aggs[i].Name || labelsOf(m)["kernel"] == aggs[i].Name) {
							a = &aggs[i]
						}
					}
				}
				if a == nil {
					t.Fatalf("%s %v: no aggregate", mf.GetName(), m.GetLabel())
				}
				got := nativeBuckets(t, hist)
				var total uint64
				for i, c := range a.Buckets {
					total += c
					if got[gpuspans.BucketKey(i)] != c {
						t.Errorf("%s %v: bucket %d: %d, hub %d", mf.GetName(), m.GetLabel(), i, got[gpuspans.BucketKey(i)], c)
					}
				}
				if total+hist.GetZeroCount() != hist.GetSampleCount() {
					t.Errorf("%s %v: %d in buckets, count %d", mf.GetName(), m.GetLabel(), total, hist.GetSampleCount())
				}
			}
		}
		if n != 12 {
			t.Errorf("%d histogram series, want 12 (2 lanes and 2 kernels on 3 devices)", n)
		}
	}
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestSeriesBudget counts every series the collector exports for the
// default configuration (2 lanes, 64 registered kernels and "other", one
// device), from a real Collect, as Prometheus stores them when it keeps
// both forms: each classic histogram's _bucket series (+Inf included),
// _sum and _count, one native series per histogram, and every other
// sample.
func TestSeriesBudget(t *testing.T) {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, Now: clock.Now, Logf: func(string, ...interface{}) {}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, stream, sim.New(sim.Options{Now: clock.Now}).Opener()); err != nil {
		t.Fatal(err)
	}
	for k := 0; k < 64; k++ {
		if err := h.RegisterKernel(uint64(k+1), "kernel_"+strings.Repeat("x", k%3)+string(rune('a'+k%26))+string(rune('a'+k/26))); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(h))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	classic, histograms := 0, 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if h := m.GetHistogram(); mf.GetType() == dto.MetricType_HISTOGRAM {
				// The exposition's _bucket lines, +Inf included, _sum and _count.
				classic += len(h.GetBucket()) + 3
				histograms++
			} else {
				classic++
			}
		}
	}
	bl, bk := len(laneLayout.bounds), len(kernelLayout.bounds)
	if formula := 2*(bl+3) + 65*(bk+3) + 30; classic != formula || bl != 169 || bk != 35 {
		t.Errorf("%d classic series, formula (Bl %d, Bk %d) says %d", classic, bl, bk, formula)
	}
	total := classic + histograms
	t.Logf("%d classic series + %d native = %d per device", classic, histograms, total)
	if histograms != 67 || total >= 3000 {
		t.Errorf("%d series (%d histograms): over the budget of 3,000", total, histograms)
	}
	if n := testutil.CollectAndCount(NewCollector(h)); n != 2+65+27+3 {
		t.Errorf("%d metrics collected", n)
	}
}

// histogramQuantile is PromQL's histogram_quantile over classic buckets:
// linear interpolation within the bucket holding rank q*count, the first
// bucket starting at 0.
func histogramQuantile(q float64, h *dto.Histogram) float64 {
	rank := q * float64(h.GetSampleCount())
	prevUB, prevCum := 0.0, 0.0
	for _, b := range h.GetBucket() {
		cum := float64(b.GetCumulativeCount())
		if cum >= rank {
			if cum == prevCum {
				return b.GetUpperBound()
			}
			return prevUB + (b.GetUpperBound()-prevUB)*(rank-prevCum)/(cum-prevCum)
		}
		prevUB, prevCum = b.GetUpperBound(), cum
	}
	return prevUB
}

// TestClassicLaneQuantiles: histogram_quantile over the classic lane
// buckets is within 10% of the exact quantiles of lane-like durations.
func TestClassicLaneQuantiles(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for _, c := range []struct {
		name    string
		median  time.Duration
		sigma   float64
		tailPct float64 // share of spans 3x slower
	}{
		{"decode", 260 * time.Microsecond, 0.08, 0.02},
		{"prefill", time.Millisecond, 0.25, 0.01},
		{"tight", 40 * time.Microsecond, 0.01, 0},
		{"wide", 20 * time.Millisecond, 1, 0.05},
	} {
		var a gpuspans.Aggregate
		ds := make([]float64, 20000)
		for i := range ds {
			d := float64(c.median) * math.Exp(c.sigma*rng.NormFloat64())
			if rng.Float64() < c.tailPct {
				d *= 3
			}
			ds[i] = math.Round(d)
			a.Observe(time.Duration(ds[i]))
		}
		sort.Float64s(ds)
		hist := laneLayout.histogram(&a, false)
		worst := 0.0
		for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
			exact := ds[int(math.Ceil(q*float64(len(ds))))-1] / 1e9
			got := histogramQuantile(q, hist)
			e := math.Abs(got-exact) / exact
			worst = math.Max(worst, e)
			if e > 0.10 {
				t.Errorf("%s: histogram_quantile(%v) = %.4g s, exact %.4g s: %.1f%% off", c.name, q, got, exact, 100*e)
			}
		}
		t.Logf("%s: worst classic error %.2f%%", c.name, 100*worst)
	}
}

package prom

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

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
// Options.NoNativeHistograms.
func TestNativeCollect(t *testing.T) {
	h := servedHub(t)
	s := h.Snapshot()
	for _, classicOnly := range []bool{false, true} {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(NewCollector(h, Options{KernelHistograms: true, NoNativeHistograms: classicOnly}))
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
		if n != 4 {
			t.Errorf("%d histogram series, want 4 (2 lanes and 2 kernels on the one device with spans)", n)
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

// histogramQuantile is PromQL's histogram_quantile over classic buckets:
// linear interpolation within the bucket holding rank q*count, the first
// bucket starting at 0, and the top bound for a rank in +Inf.
func histogramQuantile(q float64, h *dto.Histogram) float64 {
	rank := q * float64(h.GetSampleCount())
	prevUB, prevCum := 0.0, 0.0
	for _, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			break
		}
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

// TestClassicLayouts: every layout runs from 2^-20 s to 2^4 s on hub
// bucket edges, perDoubling bounds to a doubling.
func TestClassicLayouts(t *testing.T) {
	for n, l := range layouts {
		if len(l.bounds) != 24*n+1 || l.bounds[0] != math.Ldexp(1, -20) || l.bounds[len(l.bounds)-1] != 16 {
			t.Errorf("%d per doubling: %d bounds, %g .. %g", n, len(l.bounds), l.bounds[0], l.bounds[len(l.bounds)-1])
		}
		r := math.Pow(2, 1/float64(n))
		for j, b := range l.bounds {
			if b != gpuspans.BucketUpperBound(l.last[j]) {
				t.Errorf("%d per doubling: bound %g is not a hub bucket edge", n, b)
			}
			if j > 0 && math.Abs(b/l.bounds[j-1]/r-1) > 1e-12 {
				t.Errorf("%d per doubling: %g after %g, want %g apart", n, b, l.bounds[j-1], r)
			}
		}
		if err := CheckClassicBuckets(n); err != nil {
			t.Error(err)
		}
	}
	for _, n := range []int{0, -1, 3, 16, 32} {
		if err := CheckClassicBuckets(n); err == nil || !strings.Contains(err.Error(), fmt.Sprint(n)) {
			t.Errorf("CheckClassicBuckets(%d) = %v, want an error naming it", n, err)
		}
	}
	// The zero Options takes the default layout, though CheckClassicBuckets
	// refuses 0 from a user.
	if c := NewCollector(busyHub(t), Options{}); c.layout != layouts[DefaultClassicBuckets] {
		t.Errorf("Options{} has %d classic bounds, want DefaultClassicBuckets' %d", len(c.layout.bounds), len(layouts[DefaultClassicBuckets].bounds))
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "3 classic buckets per doubling") {
			t.Errorf("NewCollector with 3 per doubling: recovered %v", r)
		}
	}()
	NewCollector(busyHub(t), Options{ClassicBuckets: 3})
}

// TestClassicQuantileBound: histogram_quantile over each classic layout is
// within its stated bound (a factor of 2^(1/perDoubling) either way) of
// the exact quantile, for spread-out durations from 1 us to 10 s and for
// point masses, a 150 ms and a 5 s span among them: nothing is clipped
// below 16 s.
func TestClassicQuantileBound(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	type dist struct {
		name string
		ns   []float64
	}
	var dists []dist
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
		{"microseconds", 2 * time.Microsecond, 0.3, 0},
		{"seconds", 3 * time.Second, 0.4, 0},
	} {
		ds := make([]float64, 20000)
		for i := range ds {
			d := float64(c.median) * math.Exp(c.sigma*rng.NormFloat64())
			if rng.Float64() < c.tailPct {
				d *= 3
			}
			ds[i] = math.Round(d)
		}
		dists = append(dists, dist{c.name, ds})
	}
	for _, d := range []time.Duration{time.Microsecond, 150 * time.Millisecond, 5 * time.Second, 10 * time.Second, 125 * time.Millisecond} {
		dists = append(dists, dist{"only " + d.String(), []float64{float64(d)}})
	}
	for n, l := range layouts {
		r := math.Pow(2, 1/float64(n))
		for _, d := range dists {
			var a gpuspans.Aggregate
			for _, ns := range d.ns {
				a.Observe(time.Duration(ns))
			}
			sorted := append([]float64(nil), d.ns...)
			sort.Float64s(sorted)
			hist := l.histogram(&a, false)
			worst := 0.0
			for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
				exact := sorted[max(int(math.Ceil(q*float64(len(sorted))))-1, 0)] / 1e9
				got := histogramQuantile(q, hist)
				worst = math.Max(worst, math.Abs(got-exact)/exact)
				if got > exact*r*(1+1e-12) || got < exact/r*(1-1e-12) {
					t.Errorf("%d per doubling, %s: histogram_quantile(%v) = %.4g s, exact %.4g s: beyond a factor %.3f", n, d.name, q, got, exact, r)
				}
			}
			if d.name == "only 150ms" && n == DefaultClassicBuckets {
				if got := histogramQuantile(0.99, hist); got <= 0.125 {
					t.Errorf("a 150 ms span reads %g s", got)
				}
			}
			t.Logf("%d per doubling, %s: worst error %.1f%% (bound %.1f%%)", n, d.name, 100*worst, 100*(r-1))
		}
	}
}

// TestAboveTopBound: a span over 16 s counts in le="+Inf" only, where
// histogram_quantile reads the top bound, and the native histogram keeps
// it in the hub's last bucket.
func TestAboveTopBound(t *testing.T) {
	var a gpuspans.Aggregate
	a.Observe(5 * time.Second)
	a.Observe(20 * time.Second)
	hist := layouts[DefaultClassicBuckets].histogram(&a, true)
	b := hist.GetBucket()
	if top := b[len(b)-1]; top.GetUpperBound() != 16 || top.GetCumulativeCount() != 1 || hist.GetSampleCount() != 2 {
		t.Errorf("le=%g holds %d of %d", top.GetUpperBound(), top.GetCumulativeCount(), hist.GetSampleCount())
	}
	if got := histogramQuantile(0.99, hist); got != 16 {
		t.Errorf("p99 with a 20 s span reads %g s, want the top bound 16", got)
	}
	if got := nativeBuckets(t, hist); got[gpuspans.BucketKey(gpuspans.BucketIndex(20*time.Second))] != 1 {
		t.Errorf("native buckets %v", got)
	}
}

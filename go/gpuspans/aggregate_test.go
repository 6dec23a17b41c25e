package gpuspans

import (
	"math"
	"math/rand"
	"sort"
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	if NumBuckets != 992 || BucketLowerBound(0) != ZeroThreshold || BucketUpperBound(NumBuckets-1) != MaxBucketed.Seconds() {
		t.Fatalf("%d buckets over (%g, %g]", NumBuckets, BucketLowerBound(0), BucketUpperBound(NumBuckets-1))
	}
	for i := 0; i < NumBuckets; i++ {
		lo, hi := BucketLowerBound(i), BucketUpperBound(i)
		if r := hi / lo; math.Abs(r-math.Exp2(1.0/32)) > 1e-12 {
			t.Fatalf("bucket %d: (%g, %g], ratio %v", i, lo, hi, r)
		}
		if BucketKey(i)%32 == 0 && hi != math.Exp2(float64(BucketKey(i)/32)) {
			t.Errorf("bucket %d: upper bound %g not a power of two", i, hi)
		}
	}
}

func TestBucketIndex(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{
		{0, -1}, {59, -1}, // at most 2^-24 s: the zero bucket
		{60, 0},
		{time.Second, -MinBucketKey},         // 2^0 is the upper bound of key 0
		{time.Second + 1, -MinBucketKey + 1}, // just above it
		{2 * time.Second, -MinBucketKey + 32},
		{MaxBucketed, NumBuckets - 1},
		{time.Hour, NumBuckets - 1}, // clamped
	} {
		if got := BucketIndex(c.d); got != c.want {
			t.Errorf("BucketIndex(%v) = %d, want %d", c.d, got, c.want)
		}
	}
	// Every bucket holds exactly the durations within its bounds.
	for i := 0; i < NumBuckets; i++ {
		lo, hi := BucketLowerBound(i)*1e9, BucketUpperBound(i)*1e9
		for _, ns := range []float64{math.Floor(lo) + 1, math.Floor(hi)} {
			if ns <= lo || ns > hi {
				continue // a bucket narrower than a nanosecond
			}
			if got := bucketIndex(int64(ns)); got != i {
				t.Fatalf("%vns in bucket %d, want %d (%g, %g]", ns, got, i, lo, hi)
			}
		}
	}
}

func TestAggregateObserve(t *testing.T) {
	var a Aggregate
	for _, d := range []time.Duration{
		0, 50, -5, // the zero bucket (negative clamps to 0)
		time.Second, time.Second, // key 0
		7 * time.Millisecond,
		time.Hour, // the last bucket
	} {
		a.observe(int64(d))
	}
	want := map[int]uint64{-MinBucketKey: 2, BucketIndex(7 * time.Millisecond): 1, NumBuckets - 1: 1}
	for i, c := range a.Buckets {
		if c != want[i] {
			t.Errorf("bucket %d = %d; want %d", i, c, want[i])
		}
	}
	if a.ZeroCount != 3 || a.Count != 7 || a.Min != 0 || a.Max != time.Hour {
		t.Errorf("aggregate zero %d count %d min %v max %v", a.ZeroCount, a.Count, a.Min, a.Max)
	}
	if a.Sum != time.Hour+2*time.Second+7*time.Millisecond+50 {
		t.Errorf("sum %v", a.Sum)
	}
	if got := a.Quantile(0.99); got < 120*time.Second || got > time.Hour {
		t.Errorf("p99 %v: the last bucket reaches up to Max", got)
	}
}

// exactQuantile is the nearest-rank quantile of sorted: the span of rank
// ceil(q*n), as Quantile ranks.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	r := int(math.Ceil(q * float64(len(sorted))))
	if r < 1 {
		r = 1
	}
	return sorted[r-1]
}

// checkQuantiles observes ds and requires every quantile within 2% of the
// exact one (the bound is 1.1%; 2% is what the docs promise).
func checkQuantiles(t *testing.T, name string, ds []time.Duration) (worst float64) {
	t.Helper()
	var a Aggregate
	for _, d := range ds {
		a.Observe(d)
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for _, q := range []float64{0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999} {
		want, got := exactQuantile(sorted, q), a.Quantile(q)
		e := math.Abs(float64(got-want)) / float64(want)
		if e > worst {
			worst = e
		}
		if e > 0.02 {
			t.Errorf("%s: Quantile(%v) = %v, exact %v: error %.2f%%", name, q, got, want, 100*e)
		}
	}
	return worst
}

func TestQuantileError(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	logUniform := make([]time.Duration, 100000)
	for i := range logUniform { // 100ns .. 100s
		logUniform[i] = time.Duration(math.Pow(10, 2+9*rng.Float64()))
	}
	worst := checkQuantiles(t, "log-uniform", logUniform)

	// Adversarial: spans piled on bucket edges, just above a lower bound
	// and exactly at an upper one, in a bimodal mix with a far tail.
	var edges []time.Duration
	for i := 0; i < 5000; i++ {
		b := BucketIndex(200*time.Microsecond) + rng.Intn(8)
		lo, hi := BucketLowerBound(b)*1e9, BucketUpperBound(b)*1e9
		edges = append(edges, time.Duration(math.Floor(lo)+1), time.Duration(math.Floor(hi)))
	}
	for i := 0; i < 100; i++ {
		edges = append(edges, 40*time.Millisecond+time.Duration(i))
	}
	if w := checkQuantiles(t, "bucket edges", edges); w > worst {
		worst = w
	}
	t.Logf("worst relative error %.3f%%", 100*worst)

	var empty Aggregate
	if empty.Quantile(0.5) != 0 {
		t.Error("empty aggregate quantile not 0")
	}
	var one Aggregate
	one.observe(int64(3 * time.Millisecond))
	for _, q := range []float64{0, 0.5, 0.99, 1, 2, math.NaN()} {
		if got := one.Quantile(q); got != 3*time.Millisecond {
			t.Errorf("one span: Quantile(%v) = %v", q, got)
		}
	}
}

// TestBucketIndexTable: the table lookup keys every duration as the binary
// search over the 32 bounds does (client_golang's way), on bounds, next to
// them and at random.
func TestBucketIndexTable(t *testing.T) {
	search := func(ns int64) int {
		v := float64(ns) / 1e9
		if v <= ZeroThreshold {
			return -1
		}
		frac, exp := math.Frexp(v)
		j := sort.SearchFloat64s(halfBounds[:], frac)
		return min(j+(exp-1)<<Schema-MinBucketKey, NumBuckets-1)
	}
	check := func(ns int64) {
		if got, want := bucketIndex(ns), search(ns); got != want {
			t.Fatalf("bucketIndex(%d) = %d, the search says %d", ns, got, want)
		}
	}
	for i := 0; i <= NumBuckets; i++ {
		edge := int64(BucketUpperBound(i) * 1e9)
		for d := int64(-2); d <= 2; d++ {
			check(edge + d)
		}
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 1_000_000; i++ {
		check(int64(math.Exp(rng.Float64() * 30))) // 1 ns to 10 s, log-uniform
	}
	for ns := int64(0); ns < 100_000; ns++ {
		check(ns)
	}
}

package gpuspans

import (
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	b := BucketBounds()
	if len(b) != NumBuckets-1 || b[0] != time.Microsecond || b[len(b)-1] != 10*time.Second {
		t.Fatalf("bounds %v", b)
	}
	for i := 1; i < len(b); i++ {
		if r := float64(b[i]) / float64(b[i-1]); r < 2 || r > 2.5 {
			t.Errorf("bound %v follows %v: not a 1-2-5 step", b[i], b[i-1])
		}
	}
	b[0] = 0
	if BucketBounds()[0] != time.Microsecond {
		t.Error("BucketBounds shares its slice")
	}
}

func TestAggregateObserve(t *testing.T) {
	var a Aggregate
	for _, d := range []time.Duration{
		0, time.Microsecond, // both in the first bucket (<= 1us)
		time.Microsecond + 1, 2 * time.Microsecond, // (1us, 2us]
		7 * time.Millisecond,                   // (5ms, 10ms]
		10 * time.Second, 11 * time.Second, -5, // last bound; above it; negative clamps to 0
	} {
		a.observe(int64(d))
	}
	want := map[int]uint64{0: 3, 1: 2, 12: 1, 21: 1, 22: 1}
	for i, c := range a.Buckets {
		if c != want[i] {
			t.Errorf("bucket %d = %d; want %d", i, c, want[i])
		}
	}
	if a.Count != 8 || a.Min != 0 || a.Max != 11*time.Second {
		t.Errorf("aggregate %+v", a)
	}
	if a.Sum != 21*time.Second+7*time.Millisecond+4*time.Microsecond+1 {
		t.Errorf("sum %v", a.Sum)
	}
}

func TestQuantile(t *testing.T) {
	var empty Aggregate
	if empty.Quantile(0.5) != 0 {
		t.Error("empty aggregate quantile not 0")
	}
	var one Aggregate
	one.observe(int64(3 * time.Millisecond))
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if got := one.Quantile(q); got != 3*time.Millisecond {
			t.Errorf("one span: Quantile(%v) = %v", q, got)
		}
	}
	// 100 spans spread evenly over (10us, 20us]: interpolation should be
	// close to the true quantiles.
	var a Aggregate
	for i := 1; i <= 100; i++ {
		a.observe(int64(10*time.Microsecond + time.Duration(i)*100))
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 15 * time.Microsecond}, {0.9, 19 * time.Microsecond}, {0.01, 10100}} {
		got := a.Quantile(c.q)
		if diff := got - c.want; diff < -200 || diff > 200 {
			t.Errorf("Quantile(%v) = %v; want about %v", c.q, got, c.want)
		}
	}
	// Two buckets: 90 fast, 10 slow; p95 falls in the slow one.
	var b Aggregate
	for i := 0; i < 90; i++ {
		b.observe(int64(3 * time.Microsecond))
	}
	for i := 0; i < 10; i++ {
		b.observe(int64(40 * time.Millisecond))
	}
	if got := b.Quantile(0.5); got < 3*time.Microsecond || got > 5*time.Microsecond {
		t.Errorf("p50 %v; want within [Min, 5us]", got)
	}
	if got := b.Quantile(0.95); got < 20*time.Millisecond || got > 40*time.Millisecond {
		t.Errorf("p95 %v; want within (20ms, 40ms]", got)
	}
	if got := b.Quantile(2); got != b.Max {
		t.Errorf("Quantile(2) = %v", got)
	}
}

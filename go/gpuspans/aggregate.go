package gpuspans

import "time"

// NumBuckets is the number of histogram buckets in an Aggregate: one per
// bound of the 1-2-5 series from 1 us to 10 s, plus one above 10 s.
const NumBuckets = len(bucketBounds) + 1

// bucketBounds are the buckets' inclusive upper bounds in nanoseconds. A 1-2-5
// series keeps the relative error of a bucket under 2.5x across seven decades:
// from a launch-bound microsecond kernel to a ten-second prefill.
var bucketBounds = [...]int64{
	1e3, 2e3, 5e3,
	1e4, 2e4, 5e4,
	1e5, 2e5, 5e5,
	1e6, 2e6, 5e6,
	1e7, 2e7, 5e7,
	1e8, 2e8, 5e8,
	1e9, 2e9, 5e9,
	1e10,
}

// BucketBounds returns the inclusive upper bounds of Aggregate.Buckets, in
// order; the last bucket, not listed, holds everything above the last bound.
// It returns a new slice each call (exporters call it once, when they build
// their descriptors). Safe from any goroutine.
func BucketBounds() []time.Duration {
	out := make([]time.Duration, len(bucketBounds))
	for i, b := range bucketBounds {
		out[i] = time.Duration(b)
	}
	return out
}

// Aggregate summarises the spans of one lane or one kernel on one device:
// count, sum, min, max and a histogram over BucketBounds. An Aggregate is a
// value copied out of a Snapshot; its methods only read it.
type Aggregate struct {
	Device int    // the device ordinal
	Name   string // the lane's or the kernel's name ("other" for unregistered kernels)
	Count  uint64
	Sum    time.Duration
	Min    time.Duration // 0 when Count is 0
	Max    time.Duration
	// Buckets[i] counts spans in (BucketBounds()[i-1], BucketBounds()[i]];
	// the last one counts spans above the last bound. Not cumulative.
	Buckets [NumBuckets]uint64
}

// Observe adds one span of d, bucket for bucket as the hub does, so that
// aggregates built elsewhere (from a span file, say) match the hub's. The
// hub's own aggregates are updated under its harvest lock and handed out as
// copies; an Aggregate is not safe for concurrent use.
func (a *Aggregate) Observe(d time.Duration) { a.observe(int64(d)) }

// observe adds one span of ns nanoseconds.
func (a *Aggregate) observe(ns int64) {
	if ns < 0 {
		ns = 0 // a clock step cannot make a span negative; clamp rather than corrupt Min
	}
	d := time.Duration(ns)
	if a.Count == 0 || d < a.Min {
		a.Min = d
	}
	if d > a.Max {
		a.Max = d
	}
	a.Count++
	a.Sum += d
	i := 0
	for i < len(bucketBounds) && ns > bucketBounds[i] {
		i++
	}
	a.Buckets[i]++
}

// Quantile estimates the q-quantile (0 <= q <= 1) by linear interpolation
// within the bucket that holds it, with the bucket's edges narrowed to Min
// and Max (so a single span, or spans all in one bucket, give exact ends).
// q <= 0 gives Min, q >= 1 gives Max, and an empty aggregate gives 0. The
// estimate is within the bucket's width of the true value.
func (a *Aggregate) Quantile(q float64) time.Duration {
	if a.Count == 0 {
		return 0
	}
	if q <= 0 {
		return a.Min
	}
	if !(q < 1) { // also catches NaN
		return a.Max
	}
	rank := q * float64(a.Count)
	var below float64
	for i, c := range a.Buckets {
		if c == 0 {
			continue
		}
		if below+float64(c) < rank {
			below += float64(c)
			continue
		}
		lo, hi := a.Min, a.Max
		if i > 0 && time.Duration(bucketBounds[i-1]) > lo {
			lo = time.Duration(bucketBounds[i-1])
		}
		if i < len(bucketBounds) && time.Duration(bucketBounds[i]) < hi {
			hi = time.Duration(bucketBounds[i])
		}
		frac := (rank - below) / float64(c)
		return lo + time.Duration(frac*float64(hi-lo))
	}
	return a.Max
}

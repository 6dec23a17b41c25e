package gpuspans

import (
	"math"
	"time"
)

// Aggregates bucket durations log-linearly, exactly as a Prometheus native
// histogram of schema 5 does: bucket key k holds durations in
// (2^((k-1)/32), 2^(k/32)] seconds, 32 buckets to a doubling, each about
// 2.2% wide. An estimate at a bucket's geometric middle is within 1.1% of
// any duration in it, and exporters can send the buckets to Prometheus as
// they are.
const (
	// Schema is the native-histogram schema of Aggregate.Buckets.
	Schema = 5
	// MinBucketKey is the key of Buckets[0], which holds durations just
	// above ZeroThreshold.
	MinBucketKey = -24<<Schema + 1
	// MaxBucketKey is the key of the last bucket, whose upper bound is
	// MaxBucketed; it also holds every longer duration.
	MaxBucketKey = 7 << Schema
	// NumBuckets is the length of Aggregate.Buckets: 31 doublings, 60 ns to
	// 128 s, in 7,936 bytes per Aggregate.
	NumBuckets = MaxBucketKey - MinBucketKey + 1
	// ZeroThreshold is the upper edge of the zero bucket in seconds, 2^-24
	// (about 59.6 ns): far below any GPU span, so the zero bucket only
	// holds spans a clock step clamped to 0.
	ZeroThreshold = 1.0 / (1 << 24)
	// MaxBucketed is the upper bound of the last bucket: 2^7 s.
	MaxBucketed = 128 * time.Second

	zeroNs time.Duration = 59 // the longest whole-nanosecond span in the zero bucket
)

// halfBounds[j] is 2^(j/32)/2, the lower edge of the mantissa range that
// math.Frexp gives for bucket offsets j within a doubling. The literals are
// client_golang's (prometheus.nativeHistogramBounds for schema 5), so both
// put any float64 into the same bucket; a test in go/export/prom checks it.
var halfBounds = [1 << Schema]float64{
	0.5, 0.5109485743270583, 0.5221368912137069, 0.5335702003384117,
	0.5452538663326288, 0.5571933712979462, 0.5693943173783458, 0.5818624293887887,
	0.5946035575013605, 0.6076236799902344, 0.620928906036742, 0.6345254785958666,
	0.6484197773255048, 0.6626183215798706, 0.6771277734684463, 0.6919549409819159,
	0.7071067811865475, 0.7225904034885232, 0.7384130729697496, 0.7545822137967112,
	0.7711054127039704, 0.7879904225539431, 0.805245165974627, 0.8228777390769823,
	0.8408964152537144, 0.8593096490612387, 0.8781260801866495, 0.8973545375015533,
	0.9170040432046711, 0.9370838170551498, 0.9576032806985735, 0.9785720620876999,
}

// BucketKey returns the native-histogram key of Buckets[i].
func BucketKey(i int) int { return MinBucketKey + i }

// KeyUpperBound returns the upper bound of the bucket with the given key,
// 2^(key/32) seconds, as Prometheus computes it.
func KeyUpperBound(key int) float64 {
	e, j := key>>Schema, key&(1<<Schema-1) // floor division, for negative keys too
	return math.Ldexp(halfBounds[j], e+1)
}

// BucketUpperBound returns the upper bound of Buckets[i] in seconds.
func BucketUpperBound(i int) float64 { return KeyUpperBound(MinBucketKey + i) }

// BucketLowerBound returns the lower bound (exclusive) of Buckets[i] in
// seconds: ZeroThreshold for Buckets[0].
func BucketLowerBound(i int) float64 { return KeyUpperBound(MinBucketKey + i - 1) }

// BucketIndex returns the index into Aggregate.Buckets that a span of d
// falls in, or -1 for the zero bucket (d <= ZeroThreshold). Durations above
// MaxBucketed fall in the last bucket.
func BucketIndex(d time.Duration) int { return bucketIndex(int64(d)) }

// bucketIndex keys a span as client_golang keys native buckets (math.Frexp,
// then the first of the 32 mantissa bounds at or above the fraction), with
// the binary search replaced by a table: the top 8 bits of the mantissa
// name a slice of at most one bound (slices are 0.4% wide, buckets 2.2%),
// so one comparison finishes it. No allocation, no logarithm.
func bucketIndex(ns int64) int {
	v := float64(ns) / 1e9
	if v <= ZeroThreshold {
		return -1
	}
	b := math.Float64bits(v)
	exp := int(b>>52&0x7ff) - 1022 // math.Frexp's exponent: v is normal
	frac := math.Float64frombits(b&^(0x7ff<<52) | 1022<<52)
	j := int(boundSlice[b>>44&0xff])
	if frac > halfBoundsUp[j] {
		j++
	}
	i := j + (exp-1)<<Schema - MinBucketKey
	if i >= NumBuckets {
		i = NumBuckets - 1
	}
	return i
}

// halfBoundsUp is halfBounds with 1 appended: above every fraction.
var halfBoundsUp = func() (u [len(halfBounds) + 1]float64) {
	copy(u[:], halfBounds[:])
	u[len(halfBounds)] = 1
	return u
}()

// boundSlice[t] is the first j with halfBounds[j] >= the smallest fraction
// whose mantissa's top 8 bits are t.
var boundSlice = func() (s [256]uint8) {
	for t := range s {
		lo := math.Float64frombits(uint64(t)<<44 | 1022<<52)
		j := 0
		for j < len(halfBounds) && halfBounds[j] < lo {
			j++
		}
		s[t] = uint8(j)
	}
	return s
}()

// Aggregate summarises the spans of one lane or one kernel on one device:
// count, sum, min, max and a log-linear histogram (see Schema). An
// Aggregate is a value copied out of a Snapshot; its methods only read it.
// Its size is fixed, about 8 KiB, whatever it holds.
type Aggregate struct {
	Device int    // the device ordinal
	Name   string // the lane's or the kernel's name ("other" for unregistered kernels)
	Count  uint64
	Sum    time.Duration
	Min    time.Duration // 0 when Count is 0
	Max    time.Duration
	// ZeroCount counts spans of at most ZeroThreshold.
	ZeroCount uint64
	// Buckets[i] counts spans in (BucketLowerBound(i), BucketUpperBound(i)]
	// seconds; the last one also counts spans above MaxBucketed. Not
	// cumulative.
	Buckets [NumBuckets]uint64
}

// Observe adds one span of d, bucket for bucket as the hub does, so that
// aggregates built elsewhere (from a span file, say) match the hub's. The
// hub's own aggregates are updated under its harvest lock and handed out as
// copies; an Aggregate is not safe for concurrent use.
func (a *Aggregate) Observe(d time.Duration) { a.observe(int64(d)) }

// observe adds one span of ns nanoseconds and returns its bucket index
// (-1: the zero bucket).
func (a *Aggregate) observe(ns int64) int {
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
	i := bucketIndex(ns)
	if i >= 0 {
		a.Buckets[i]++
	} else {
		a.ZeroCount++
	}
	return i
}

// Quantile estimates the q-quantile (0 <= q <= 1): the geometric middle of
// the bucket holding the span of rank ceil(q*Count), with the bucket's
// edges narrowed to Min and Max (so a single span, or spans all alike, give
// exact values). The estimate is within 1.1% of that span's duration, or
// within ZeroThreshold for a span in the zero bucket; above MaxBucketed the
// last bucket reaches up to Max. q <= 0 gives Min, q >= 1 gives Max, and an
// empty aggregate gives 0.
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
	rank := uint64(math.Ceil(q * float64(a.Count)))
	if rank < 1 {
		rank = 1
	}
	cum := a.ZeroCount
	if cum >= rank {
		hi := a.Max
		if zeroNs < hi {
			hi = zeroNs
		}
		return a.Min + (hi-a.Min)/2
	}
	for i, c := range a.Buckets {
		if cum += c; cum < rank {
			continue
		}
		lo, hi := BucketLowerBound(i)*1e9, BucketUpperBound(i)*1e9
		if i == NumBuckets-1 {
			hi = math.Inf(1)
		}
		lo, hi = math.Max(lo, float64(a.Min)), math.Min(hi, float64(a.Max))
		if lo >= hi {
			return time.Duration(hi)
		}
		return time.Duration(math.Sqrt(lo * hi))
	}
	return a.Max
}

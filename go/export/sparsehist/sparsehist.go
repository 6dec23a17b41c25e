// Package sparsehist lists an aggregate's histogram as the schema keeps it
// (proto/gpuspans/v1 Aggregate.bucket_upper_ns and bucket_counts): the
// span file and the live page's JSON share it, and the live page must not
// link the span-file code (and protobuf).
package sparsehist

import (
	"math"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// ZeroNs names the zero bucket among the bounds: the longest
// whole-nanosecond span at or below gpuspans.ZeroThreshold.
const ZeroNs = 59

// UpperNs is the upper bound of gpuspans.Aggregate.Buckets[i] rounded down
// to whole nanoseconds: spans are whole nanoseconds, so it names the bucket
// exactly (every bucket is over a nanosecond wide).
func UpperNs(i int) int64 { return int64(math.Floor(gpuspans.BucketUpperBound(i) * 1e9)) }

// Of lists a's non-empty buckets, the zero bucket first, in increasing
// order: bounds[j] (ZeroNs or an UpperNs) holds counts[j] spans. Most of an
// aggregate's buckets are empty. Both are nil when a has no span.
func Of(a *gpuspans.Aggregate) (bounds []int64, counts []uint64) {
	if a.ZeroCount > 0 {
		bounds, counts = append(bounds, ZeroNs), append(counts, a.ZeroCount)
	}
	for i, c := range a.Buckets {
		if c > 0 {
			bounds, counts = append(bounds, UpperNs(i)), append(counts, c)
		}
	}
	return bounds, counts
}

package sparsehist

import (
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

func TestOf(t *testing.T) {
	var a gpuspans.Aggregate
	if b, c := Of(&a); b != nil || c != nil {
		t.Errorf("empty: %v %v", b, c)
	}
	a.ZeroCount = 2
	i := gpuspans.BucketIndex(time.Microsecond)
	a.Buckets[i] = 3
	b, c := Of(&a)
	if len(b) != 2 || b[0] != ZeroNs || b[1] != UpperNs(i) || c[0] != 2 || c[1] != 3 {
		t.Errorf("Of = %v %v", b, c)
	}
	// The bound names its bucket: a span of that many nanoseconds lands in it.
	if got := gpuspans.BucketIndex(time.Duration(UpperNs(i))); got != i {
		t.Errorf("BucketIndex(UpperNs(%d)) = %d", i, got)
	}
	if ZeroNs > gpuspans.ZeroThreshold*1e9 || ZeroNs+1 <= gpuspans.ZeroThreshold*1e9 {
		t.Errorf("ZeroNs %d is not the longest whole-nanosecond span in the zero bucket (%g ns)", ZeroNs, gpuspans.ZeroThreshold*1e9)
	}
}

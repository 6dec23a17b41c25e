package prom

import (
	"encoding/hex"
	"math"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Classic bucket layouts, by buckets per doubling (Options.ClassicBuckets).
// Each bound is an upper bound of the hub's own buckets (every step-th key
// of schema 5) from 2^-20 s (0.95 us) to 2^4 s (16 s), so a classic count
// is an exact sum of the hub's and Prometheus's histogram_quantile,
// interpolating linearly within the classic bucket that holds the true
// quantile, is off by at most that bucket's width: a factor of
// 2^(1/perDoubling).
var layouts = func() map[int]*layout {
	m := make(map[int]*layout)
	for _, n := range []int{1, 2, 4, 8} {
		l := newLayout(classicFromKey, classicToKey, 1<<gpuspans.Schema/n)
		m[n] = &l
	}
	return m
}()

// The classic buckets' range, as keys of schema 5: 2^-20 s to 2^4 s.
const (
	classicFromKey = -20 << gpuspans.Schema
	classicToKey   = 4 << gpuspans.Schema
)

// layout is a classic bucket layout: upper bounds in seconds, and for each
// the index into gpuspans.Aggregate.Buckets of the hub bucket it closes.
type layout struct {
	bounds []float64
	last   []int
}

func newLayout(fromKey, toKey, step int) layout {
	var l layout
	for k := fromKey; k <= toKey; k += step {
		l.bounds = append(l.bounds, gpuspans.KeyUpperBound(k))
		l.last = append(l.last, k-gpuspans.MinBucketKey)
	}
	return l
}

// histogram is a const histogram metric built from a hub aggregate.
// client_golang's const histograms take maps and cannot carry both the
// classic and the native form from precomputed buckets.
type histogram struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	hist   *dto.Histogram
}

func (h *histogram) Desc() *prometheus.Desc { return h.desc }

func (h *histogram) Write(out *dto.Metric) error {
	out.Label = h.labels
	out.Histogram = h.hist
	return nil
}

// histogram returns a's counts as classic cumulative buckets over l, and
// with native the hub's schema 5 buckets as they are.
func (l *layout) histogram(a *gpuspans.Aggregate, native bool) *dto.Histogram {
	hist := &dto.Histogram{
		SampleCount: proto.Uint64(a.Count),
		SampleSum:   proto.Float64(a.Sum.Seconds()),
		Bucket:      make([]*dto.Bucket, len(l.bounds)),
	}
	// One allocation each for the buckets and their fields, not three a
	// bucket: a scrape builds thousands.
	buckets := make([]dto.Bucket, len(l.bounds))
	counts := make([]uint64, len(l.bounds))
	bounds := append([]float64(nil), l.bounds...) // the metric's own, as a receiver may keep it
	cum, i := a.ZeroCount, 0
	for j := range l.bounds {
		for ; i <= l.last[j]; i++ {
			cum += a.Buckets[i]
		}
		counts[j] = cum
		buckets[j].CumulativeCount = &counts[j]
		buckets[j].UpperBound = &bounds[j]
		hist.Bucket[j] = &buckets[j]
	}
	if native {
		writeNative(hist, a)
	}
	return hist
}

// maxGap is the longest run of empty buckets kept inside a span rather
// than starting a new one, as client_golang does: two zero deltas cost
// less than a span.
const maxGap = 2

// writeNative adds a's buckets as a native histogram of schema 5: exact,
// since they are the hub's own.
func writeNative(hist *dto.Histogram, a *gpuspans.Aggregate) {
	hist.Schema = proto.Int32(gpuspans.Schema)
	hist.ZeroThreshold = proto.Float64(gpuspans.ZeroThreshold)
	hist.ZeroCount = proto.Uint64(a.ZeroCount)
	type span struct {
		offset int32
		length uint32
	}
	var (
		spans  []span
		deltas []int64
		prev   int64 // the last count sent
		end    = -1  // index after the last bucket sent, -1 before the first
	)
	for i, c := range a.Buckets {
		if c == 0 {
			continue
		}
		switch gap := i - end; {
		case end < 0:
			spans = append(spans, span{int32(gpuspans.BucketKey(i)), 1})
		case gap > maxGap:
			spans = append(spans, span{int32(gap), 1})
		default:
			for ; end < i; end++ {
				deltas = append(deltas, -prev)
				prev = 0
			}
			spans[len(spans)-1].length += uint32(gap) + 1
		}
		deltas = append(deltas, int64(c)-prev)
		prev = int64(c)
		end = i + 1
	}
	if len(spans) == 0 {
		// An empty native histogram still carries a span, as
		// client_golang's do, so that it reads as native.
		spans = append(spans, span{0, 0})
	}
	hist.PositiveSpan = make([]*dto.BucketSpan, len(spans))
	for i, sp := range spans {
		hist.PositiveSpan[i] = &dto.BucketSpan{Offset: proto.Int32(sp.offset), Length: proto.Uint32(sp.length)}
	}
	hist.PositiveDelta = deltas
}

// attach adds ex to hist (built over l from a): on the classic bucket that
// holds its duration (le="+Inf", sent explicitly, above the top bound) and,
// when hist is native, as its native exemplar.
func (l *layout) attach(hist *dto.Histogram, a *gpuspans.Aggregate, ex *Exemplar) {
	v := float64(ex.Duration) / 1e9 // as the hub buckets it
	e := &dto.Exemplar{
		Label: []*dto.LabelPair{
			{Name: proto.String("trace_id"), Value: proto.String(hex.EncodeToString(ex.TraceID[:]))},
			{Name: proto.String("span_id"), Value: proto.String(hex.EncodeToString(ex.SpanID[:]))},
		},
		Value: proto.Float64(v),
	}
	if !ex.Time.IsZero() {
		e.Timestamp = timestamppb.New(ex.Time)
	}
	j := 0
	for j < len(l.bounds) && v > l.bounds[j] {
		j++
	}
	if j < len(hist.Bucket) {
		hist.Bucket[j].Exemplar = e
	} else {
		hist.Bucket = append(hist.Bucket, &dto.Bucket{
			CumulativeCount: proto.Uint64(a.Count),
			UpperBound:      proto.Float64(math.Inf(1)),
			Exemplar:        e,
		})
	}
	if hist.Schema != nil {
		hist.Exemplars = []*dto.Exemplar{e}
	}
}

package spanfile

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// maxAllocFactor is what the tests allow a Reader to allocate per input
// byte, whatever the input: the decode bound plus the record buffer and
// the slack of the estimate.
const maxAllocFactor = maxDecodeFactor + 4

// allocated returns the bytes allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// readAllErr reads data to its end or first error.
func readAllErr(data []byte) (int, error) {
	r := NewReader(bytes.NewReader(data), Options{})
	for n := 0; ; n++ {
		if _, err := r.Next(); err != nil {
			if err == io.EOF {
				return n, nil
			}
			return n, err
		}
	}
}

// rawRecord frames body (a serialized Record) as a record.
func rawRecord(body []byte) []byte {
	return append(protowire.AppendVarint(nil, uint64(len(body))), body...)
}

// repeatedField returns a serialized Record whose message field outer holds
// field num, elem (its value as encoded after the tag) n times over.
func repeatedField(outer, num protowire.Number, elem []byte, typ protowire.Type, n int) []byte {
	var inner []byte
	for i := 0; i < n; i++ {
		inner = protowire.AppendTag(inner, num, typ)
		inner = append(inner, elem...)
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, outer, protowire.BytesType), inner)
}

func TestReaderAllocationIsBounded(t *testing.T) {
	const mib = 1 << 20
	emptySpan := []byte{0}                         // a zero-length Span
	seqSpan := []byte{2, 0x08, 0x01}               // Span{seq: 1}
	spanBatch := func(elem []byte, n int) []byte { // Record.spans = 2, SpanBatch.spans = 3
		return repeatedField(2, 3, elem, protowire.BytesType, n)
	}
	_ = spanBatch
	var real bytes.Buffer
	_, spans := hubSnapshot(t)
	w := NewWriter(&real, Options{})
	for real.Len() < mib {
		if err := w.WriteSpans("real", spans); err != nil {
			t.Fatal(err)
		}
	}
	// An Aggregate (Snapshot.aggregates = 8, in Record.snapshot = 2) with a
	// packed list of zeros, one byte each.
	packed := protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), make([]byte, mib))
	agg := protowire.AppendBytes(protowire.AppendTag(nil, 8, protowire.BytesType), packed)
	snapshot := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), agg)

	for _, c := range []struct {
		name   string
		data   []byte
		refuse bool
	}{
		{"empty spans", append(header(Schema), rawRecord(repeatedField(1, 3, emptySpan, protowire.BytesType, mib/2))...), true},
		{"spans with only a seq", append(header(Schema), rawRecord(repeatedField(1, 3, seqSpan, protowire.BytesType, mib/4))...), true},
		{"packed zeros", append(header(Schema), rawRecord(snapshot)...), false},
		{"a real file", real.Bytes(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n int
			var err error
			alloc := allocated(func() { n, err = readAllErr(c.data) })
			ratio := float64(alloc) / float64(len(c.data))
			t.Logf("%d bytes: %d records, allocated %d bytes (%.1fx), %v", len(c.data), n, alloc, ratio, err)
			if ratio > maxAllocFactor {
				t.Errorf("allocated %.1f times the input", ratio)
			}
			var fe *FormatError
			switch {
			case c.refuse && (!errors.As(err, &fe) || fe.Offset != int64(len(header(Schema))) || !strings.Contains(err.Error(), "would decode")):
				t.Errorf("error %v: want a *FormatError at offset %d", err, len(header(Schema)))
			case !c.refuse && err != nil:
				t.Errorf("refused: %v", err)
			}
		})
	}
}

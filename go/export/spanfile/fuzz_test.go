package spanfile

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/golden"
	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
)

// FuzzReader feeds the Reader arbitrary bytes. It must never panic nor
// allocate more than a small multiple of its input; every
// error must be a *FormatError at an offset inside the input; and a file it
// reads to the end must read back the same after being written again, with
// the conversions agreeing with themselves. The committed corpus is in
// testdata/fuzz/FuzzReader; run with
//
//	go test -run='^$' -fuzz=FuzzReader -fuzztime=3m ./go/export/spanfile/
func FuzzReader(f *testing.F) {
	snap, spans := hubSnapshot(f)
	hand := golden.HandSnapshot()
	var buf bytes.Buffer
	w := NewWriter(&buf, Options{Now: fixedClock})
	_ = w.WriteSpans("seed", spans)
	_ = w.WriteSnapshot(&snap)
	_ = w.WriteSnapshot(&hand)
	f.Add(buf.Bytes())
	f.Add(append(header(Schema), buf.Bytes()...))
	f.Add(header(Schema))

	// A small cap so the fuzzer also reaches the limit.
	const maxRecord = 4 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), Options{MaxRecordSize: maxRecord})
		var recs []*gpuspansv1.Record
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		for {
			rec, err := r.Next()
			// Whatever the content, reading allocates a bounded multiple of
			// the input (plus the reader's buffers).
			var now runtime.MemStats
			runtime.ReadMemStats(&now)
			if alloc := now.TotalAlloc - before.TotalAlloc; alloc > uint64(maxAllocFactor*len(data)+64<<10) {
				t.Fatalf("reading %d bytes allocated %d", len(data), alloc)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				var fe *FormatError
				if !errors.As(err, &fe) || fe.Offset < 0 || fe.Offset >= int64(len(data)) ||
					!strings.HasPrefix(err.Error(), "spanfile: offset ") {
					t.Fatalf("error %v: want a *FormatError inside the %d-byte input", err, len(data))
				}
				return
			}
			recs = append(recs, rec)
		}
		if r.Offset() != int64(len(data)) {
			t.Fatalf("io.EOF at offset %d of %d", r.Offset(), len(data))
		}
		for _, rec := range recs {
			checkConversions(t, rec)
		}

		// Written back without the small cap: re-encoding may grow a record
		// (a negative int32 sent in 5 bytes goes out in 10).
		var out bytes.Buffer
		w := NewWriter(&out, Options{})
		for _, rec := range recs {
			if err := w.WriteRecord(rec); err != nil {
				t.Fatalf("writing back %v: %v", rec, err)
			}
		}
		again, err := readAll(t, out.Bytes(), Options{})
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		if len(recs) > 0 {
			again = again[1:] // the writer's own header
		}
		if len(again) != len(recs) {
			t.Fatalf("read back %d records, want %d", len(again), len(recs))
		}
		for i := range recs {
			if !proto.Equal(again[i], recs[i]) {
				t.Fatalf("record %d read back as %v, want %v", i, again[i], recs[i])
			}
		}
	})
}

// checkConversions converts what converts, and checks that converting back
// and forth again is stable.
func checkConversions(t *testing.T, rec *gpuspansv1.Record) {
	for _, p := range rec.GetSpans().GetSpans() {
		s, err := SpanFromProto(p)
		if err != nil {
			continue
		}
		s2, err := SpanFromProto(SpanToProto(s))
		if err != nil || s2 != s {
			t.Fatalf("span %+v converts back as %+v, %v", s, s2, err)
		}
	}
	if p := rec.GetSnapshot(); p != nil {
		s, taken, err := SnapshotFromProto(p)
		if err != nil {
			return
		}
		p2 := SnapshotToProto(&s, taken)
		s2, taken2, err := SnapshotFromProto(p2)
		if err != nil || !taken2.Equal(taken) || !proto.Equal(SnapshotToProto(&s2, taken2), p2) {
			t.Fatalf("snapshot %v converts back as %v, %v", p2, s2, err)
		}
	}
}

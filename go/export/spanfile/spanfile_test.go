package spanfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/golden"
	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
)

var epoch = time.Unix(1_700_000_000, 0)

func fixedClock() time.Time { return epoch }

// hubSnapshot runs a hub on a simulated GPU (device 0) next to a device
// whose pool cannot open (device 1), and returns its snapshot and spans.
func hubSnapshot(t testing.TB) (gpuspans.Snapshot, []gpuspans.Span) {
	t.Helper()
	clock := sim.NewClock(epoch)
	h, err := gpuspans.New(gpuspans.Options{
		Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Now: clock.Now,
		Logf: func(string, ...interface{}) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	gpu := sim.New(sim.Options{Device: 0, Now: clock.Now})
	const stream = backend.Stream(0x10)
	if err := h.Install(0, stream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	broken := fake.New(fake.Options{Device: 1, OpenErr: fmt.Errorf("open: %w", backend.ErrNoDriver)})
	if err := h.Install(1, 0, broken.Opener()); err != nil {
		t.Fatal(err)
	}
	if err := h.RegisterKernel(0xa1, "attention"); err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 3; step++ {
		h.BeginStep()
		h.LaneBegin(0)
		ks := h.KernelBegin(0xa1, stream)
		gpu.Launch(stream, time.Duration(10+step)*time.Microsecond)
		h.KernelEnd(ks)
		ks = h.KernelBegin(0xff, stream)
		gpu.Launch(stream, 3*time.Microsecond)
		h.KernelEnd(ks)
		h.LaneEnd(0)
		clock.Advance(time.Millisecond)
	}
	h.Harvest()
	s := h.Snapshot()
	if s.Counters.Landed != 9 || len(s.Devices) != 2 || s.Devices[1].Err == nil {
		t.Fatalf("unexpected hub state: %+v", s)
	}
	return s, h.RecentSpans(0, nil)
}

// errText replaces errors by their text, since that is what a span file
// keeps of them.
func errText(s gpuspans.Snapshot) gpuspans.Snapshot {
	devs := append([]gpuspans.DeviceStatus(nil), s.Devices...)
	for i := range devs {
		if devs[i].Err != nil {
			devs[i].Err = errors.New(devs[i].Err.Error())
		}
	}
	s.Devices = devs
	return s
}

func manySpans(n int) []gpuspans.Span {
	spans := make([]gpuspans.Span, n)
	for i := range spans {
		spans[i] = gpuspans.Span{
			Seq: uint64(i + 1), Kind: gpuspans.KindKernel, Name: "k", Device: i % 3,
			Stream: backend.Stream(0x7f0000000000 + i), Step: uint64(i / 10),
			StartNs: epoch.UnixNano() + int64(i)*1000, DurationNs: int64(i),
		}
	}
	spans[0].StartNs = 0 // not placed on the host clock
	spans[n-1].Kind = gpuspans.KindLane
	// A kernel window's lane span, settled: served time and idle by cause.
	spans[n-1].GPUTimed, spans[n-1].BusyNs, spans[n-1].IdleNs = true, 600, int64(n-1)-600
	spans[n-1].ServedNs, spans[n-1].Causes = 700, gpuspans.IdleCauses{Host: 40, Launch: 30, Copy: 15, Wait: 10, Other: 5}
	return spans
}

func readAll(t testing.TB, data []byte, o Options) ([]*gpuspansv1.Record, error) {
	t.Helper()
	r := NewReader(bytes.NewReader(data), o)
	var recs []*gpuspansv1.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		recs = append(recs, rec)
	}
}

func TestRoundTrip(t *testing.T) {
	hubSnap, hubSpans := hubSnapshot(t)
	hand := golden.HandSnapshot()
	spans := manySpans(spansPerRecord + 5)

	var buf bytes.Buffer
	w := NewWriter(&buf, Options{Now: fixedClock})
	for _, err := range []error{
		w.WriteSpans("host-a", hubSpans),
		w.WriteSnapshot(&hubSnap),
		w.WriteSpans("host-b", spans),
		w.WriteSpans("host-b", nil),
		w.WriteSnapshot(&hand),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	recs, err := readAll(t, buf.Bytes(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 {
		t.Fatalf("read %d records, want 6 (header, 3 batches, 2 snapshots)", len(recs))
	}
	if h := recs[0].GetHeader(); h.GetSchema() != Schema || h.GetCreatedUnixNs() != epoch.UnixNano() {
		t.Errorf("header = %v", h)
	}

	var gotSpans []gpuspans.Span
	var gotSnaps []gpuspans.Snapshot
	for _, rec := range recs[1:] {
		switch {
		case rec.GetSpans() != nil:
			b := rec.GetSpans()
			if b.GetWrittenUnixNs() != epoch.UnixNano() || len(b.GetSpans()) > spansPerRecord {
				t.Errorf("batch from %q: written %d, %d spans", b.GetSource(), b.GetWrittenUnixNs(), len(b.GetSpans()))
			}
			for _, p := range b.GetSpans() {
				if want := p.GetStartUnixNs() + p.GetDurationNs(); p.GetStartUnixNs() != 0 && p.GetEndUnixNs() != want {
					t.Errorf("span %d: end %d, want %d", p.GetSeq(), p.GetEndUnixNs(), want)
				}
				s, err := SpanFromProto(p)
				if err != nil {
					t.Fatal(err)
				}
				gotSpans = append(gotSpans, s)
			}
		case rec.GetSnapshot() != nil:
			s, taken, err := SnapshotFromProto(rec.GetSnapshot())
			if err != nil {
				t.Fatal(err)
			}
			if !taken.Equal(epoch) {
				t.Errorf("snapshot taken %v, want %v", taken, epoch)
			}
			gotSnaps = append(gotSnaps, s)
		default:
			t.Fatalf("unexpected record %v", rec)
		}
	}
	if want := append(append([]gpuspans.Span(nil), hubSpans...), spans...); !reflect.DeepEqual(gotSpans, want) {
		t.Errorf("spans differ after the round trip:\ngot  %+v\nwant %+v", gotSpans[:3], want[:3])
	}
	for i, want := range []gpuspans.Snapshot{hubSnap, hand} {
		// Span files carry what the spans are, not the tracer's windows
		// (live state: the page and Prometheus have them), cut reads, or the
		// hub's options (the page has them).
		want.KernelTiming.Windows, want.KernelTiming.ReadsCut = gpuspans.KernelWindowStats{}, 0
		want.Options = gpuspans.Options{}
		if !reflect.DeepEqual(gotSnaps[i], errText(want)) {
			t.Errorf("snapshot %d differs after the round trip:\ngot  %+v\nwant %+v", i, gotSnaps[i].KernelTiming, want.KernelTiming)
		}
	}
}

// TestDelimitedFraming checks the package doc's promise: the stock
// delimited reader reads a span file.
func TestDelimitedFraming(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, Options{})
	if err := w.WriteSpans("x", manySpans(3)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(&buf)
	var n int
	for {
		var rec gpuspansv1.Record
		err := protodelim.UnmarshalFrom(br, &rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Errorf("protodelim read %d records, want 2", n)
	}
}

func TestEmpty(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, Options{})
	if err := w.WriteSpans("x", nil); err != nil || buf.Len() != 0 {
		t.Fatalf("WriteSpans(nil) = %v, wrote %d bytes", err, buf.Len())
	}
	r := NewReader(&buf, Options{})
	for i := 0; i < 2; i++ {
		if rec, err := r.Next(); err != io.EOF {
			t.Fatalf("Next on empty input = %v, %v; want io.EOF", rec, err)
		}
	}
}

func TestConcatenated(t *testing.T) {
	var a, b bytes.Buffer
	if err := NewWriter(&a, Options{}).WriteSpans("a", manySpans(2)); err != nil {
		t.Fatal(err)
	}
	if err := NewWriter(&b, Options{}).WriteSpans("b", manySpans(3)); err != nil {
		t.Fatal(err)
	}
	recs, err := readAll(t, append(a.Bytes(), b.Bytes()...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[2].GetHeader() == nil || recs[3].GetSpans().GetSource() != "b" {
		t.Errorf("concatenated files read as %v", recs)
	}
}

// record frames a record as a span file does.
func record(r *gpuspansv1.Record) []byte {
	b, err := proto.Marshal(r)
	if err != nil {
		panic(err)
	}
	return append(protowire.AppendVarint(nil, uint64(len(b))), b...)
}

func header(schema string) []byte {
	return record(&gpuspansv1.Record{Record: &gpuspansv1.Record_Header{Header: &gpuspansv1.Header{Schema: schema}}})
}

func TestCorrupt(t *testing.T) {
	hdr := header(Schema)
	off := len(hdr)
	spans := record(&gpuspansv1.Record{Record: &gpuspansv1.Record_Spans{Spans: &gpuspansv1.SpanBatch{Source: strings.Repeat("s", 100)}}})
	body := len(spans) - 1 // a one-byte length
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	for _, tc := range []struct {
		name    string
		data    []byte
		opts    Options
		records int    // read before the error
		want    string // the error
		eof     bool   // the error wraps io.ErrUnexpectedEOF
	}{
		{
			name: "no header", data: spans,
			want: "spanfile: offset 0: not a span file: the first record is not a header",
		},
		{
			name: "text", data: []byte("hello, world\n"),
			want: "spanfile: offset 0: truncated record: want 104 bytes, have 12", eof: true,
		},
		{
			name: "other schema", data: header("gpuspans.v2"),
			want: `spanfile: offset 0: span file schema "gpuspans.v2", want "gpuspans.v1"`,
		},
		{
			name: "truncated record", data: cat(hdr, protowire.AppendVarint(nil, 500), make([]byte, 20)), records: 1,
			want: fmt.Sprintf("spanfile: offset %d: truncated record: want 500 bytes, have 20: unexpected EOF", off), eof: true,
		},
		{
			name: "truncated length", data: cat(hdr, []byte{0x80, 0x80}), records: 1,
			want: fmt.Sprintf("spanfile: offset %d: truncated record length: have 2 bytes of a varint: unexpected EOF", off), eof: true,
		},
		{
			name: "length overflow", data: cat(hdr, bytes.Repeat([]byte{0xff}, 11)), records: 1,
			want: fmt.Sprintf("spanfile: offset %d: bad record length: varint overflows 64 bits", off),
		},
		{
			name: "length over the default limit", data: cat(hdr, protowire.AppendVarint(nil, DefaultMaxRecordSize+1)), records: 1,
			want: fmt.Sprintf("spanfile: offset %d: record of %d bytes exceeds the limit of %d", off, DefaultMaxRecordSize+1, DefaultMaxRecordSize),
		},
		{
			name: "length over a set limit", data: cat(hdr, spans), opts: Options{MaxRecordSize: body - 1}, records: 1,
			want: fmt.Sprintf("spanfile: offset %d: record of %d bytes exceeds the limit of %d", off, body, body-1),
		},
		{
			name: "bad protobuf", data: cat(hdr, []byte{2, 0xff, 0xff}), records: 1,
			want: fmt.Sprintf("spanfile: offset %d: bad record of 2 bytes: proto:", off),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := readAll(t, tc.data, tc.opts)
			if len(recs) != tc.records || err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("read %d records, then error %v\nwant %d records, then %s", len(recs), err, tc.records, tc.want)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Errorf("error %v is not a *FormatError", err)
			}
			if got := errors.Is(err, io.ErrUnexpectedEOF); got != tc.eof {
				t.Errorf("errors.Is(err, io.ErrUnexpectedEOF) = %v, want %v", got, tc.eof)
			}
		})
	}
}

// TestTruncatedEverywhere cuts a real file at every byte: the reader gives
// every whole record before the cut, then io.EOF at a record boundary or an
// unexpected-EOF error naming the cut record's offset.
func TestTruncatedEverywhere(t *testing.T) {
	snap, spans := hubSnapshot(t)
	var buf bytes.Buffer
	w := NewWriter(&buf, Options{})
	if err := w.WriteSpans("x", spans); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	var ends []int // where each record ends
	r := NewReader(bytes.NewReader(data), Options{})
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		ends = append(ends, int(r.Offset()))
	}
	if len(ends) != 3 || ends[2] != len(data) {
		t.Fatalf("record ends %v in %d bytes", ends, len(data))
	}
	for cut := 0; cut < len(data); cut++ {
		whole, start := 0, 0
		for whole < len(ends) && ends[whole] <= cut {
			start = ends[whole]
			whole++
		}
		recs, err := readAll(t, data[:cut], Options{})
		if len(recs) != whole {
			t.Fatalf("cut at %d: read %d records, want %d", cut, len(recs), whole)
		}
		if cut == start {
			if err != nil {
				t.Fatalf("cut at a record boundary %d: %v, want io.EOF", cut, err)
			}
			continue
		}
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Offset != int64(start) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("cut at %d: error %v, want a truncation at offset %d", cut, err, start)
		}
	}
}

// TestBadLengthAllocation: a record claiming the largest allowed length
// makes the reader allocate about what the input holds, not the claim.
func TestBadLengthAllocation(t *testing.T) {
	data := append(header(Schema), protowire.AppendVarint(nil, DefaultMaxRecordSize)...)
	data = append(data, make([]byte, 1000)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readAll(t, data, Options{})
	runtime.ReadMemStats(&after)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want a truncated record", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("reading a truncated %d-byte record allocated %d bytes", DefaultMaxRecordSize, got)
	}
}

func TestReaderSticky(t *testing.T) {
	r := NewReader(bytes.NewReader([]byte{0xff}), Options{})
	_, err1 := r.Next()
	_, err2 := r.Next()
	if err1 == nil || err1 != err2 {
		t.Errorf("errors %v then %v, want the same error twice", err1, err2)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestWriterErrors(t *testing.T) {
	fw := &failWriter{n: 1}
	w := NewWriter(fw, Options{})
	if err := w.WriteSpans("x", manySpans(1)); err != nil {
		t.Fatal(err)
	}
	err := w.WriteSpans("x", manySpans(1))
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("write to a full disk: %v", err)
	}
	fw.n = 10
	if err2 := w.WriteSpans("x", manySpans(1)); err2 != err {
		t.Errorf("after a failed write: %v, want the same error %v", err2, err)
	}

	var buf bytes.Buffer
	w = NewWriter(&buf, Options{MaxRecordSize: 200})
	snap := golden.HandSnapshot()
	if err := w.WriteSnapshot(&snap); err == nil || !strings.Contains(err.Error(), "exceeds the limit of 200") {
		t.Errorf("oversized snapshot: %v", err)
	}
	if buf.Len() != 0 {
		t.Errorf("an oversized first record left %d bytes", buf.Len())
	}
	if err := w.WriteSpans("x", manySpans(1)); err != nil {
		t.Errorf("after an oversized record: %v", err)
	}
	if recs, err := readAll(t, buf.Bytes(), Options{}); err != nil || len(recs) != 2 {
		t.Errorf("read back %d records, %v", len(recs), err)
	}
}

func TestConversionErrors(t *testing.T) {
	if _, err := SpanFromProto(&gpuspansv1.Span{Seq: 4, Kind: 9}); err == nil ||
		err.Error() != "spanfile: span seq 4: unknown span kind 9" {
		t.Errorf("unknown kind: %v", err)
	}
	good := func() *gpuspansv1.Snapshot { s := golden.HandSnapshot(); return SnapshotToProto(&s, epoch) }
	for _, tc := range []struct {
		name   string
		change func(*gpuspansv1.Snapshot)
		want   string
	}{
		{"level", func(p *gpuspansv1.Snapshot) { p.Level = 0 }, "spanfile: snapshot: unknown level LEVEL_UNSPECIFIED"},
		{"state", func(p *gpuspansv1.Snapshot) { p.Devices[2].State = "asleep" }, `spanfile: snapshot: device 4: unknown device state "asleep"`},
		{"bound", func(p *gpuspansv1.Snapshot) { p.Kernels[0].BucketUpperNs[1] = 1000 },
			`spanfile: snapshot: aggregate "other" on device 3: histogram bound 1 is 1000ns, not the upper bound of a bucket`},
		{"order", func(p *gpuspansv1.Snapshot) { b := p.Lanes[0].BucketUpperNs; b[0], b[1] = b[1], b[0] },
			`spanfile: snapshot: aggregate "decode" on device 3: histogram bound 1 is 1017ns, not above the one before`},
		{"buckets", func(p *gpuspansv1.Snapshot) { p.Lanes[0].BucketCounts = nil },
			`spanfile: snapshot: aggregate "decode" on device 3: histogram of 2 bounds and 0 counts, want as many of each`},
	} {
		p := good()
		tc.change(p)
		if _, _, err := SnapshotFromProto(p); err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.want)
		}
	}
	if _, taken, err := SnapshotFromProto(&gpuspansv1.Snapshot{Level: gpuspansv1.Level_LEVEL_OFF}); err != nil || !taken.IsZero() {
		t.Errorf("minimal snapshot: taken %v, %v", taken, err)
	}
}

// The hub's profile across builds, every field set, comes back whole.
func TestProfileRoundTrip(t *testing.T) {
	s := golden.FullSnapshot()
	s.Profile.Since.Lanes[0].Model2, s.Profile.Since.Lanes[0].Driver, s.Profile.Since.Lanes[0].Driver2 = "NVIDIA H100", "12.9", "13.0"
	s.Profile.Since.Lanes[0].More, s.Profile.Ignored, s.Profile.WriteErr = 2, "ignored", "disk full"
	got, _, err := SnapshotFromProto(SnapshotToProto(&s, time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Profile, s.Profile) {
		t.Errorf("profile after the round trip:\ngot  %+v\nwant %+v", got.Profile, s.Profile)
	}
	if got, _, _ := SnapshotFromProto(SnapshotToProto(&gpuspans.Snapshot{}, time.Time{})); got.Profile.Path != "" || got.Profile.Since != nil {
		t.Errorf("no profile: %+v", got.Profile)
	}
}

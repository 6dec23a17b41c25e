package summary

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
)

func TestWrite(t *testing.T) {
	rows := []Row{
		{Kind: gpuspans.KindLane, Name: "prefill", Count: 300, P50: 834 * time.Microsecond, P99: 1040 * time.Microsecond, Max: 1050 * time.Microsecond},
		{Kind: gpuspans.KindKernel, Name: "attn_prefill", Count: 18, P50: 438 * time.Microsecond, P99: 523 * time.Microsecond, Max: 525 * time.Microsecond},
	}
	var b bytes.Buffer
	if err := Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"kind    name          count    p50     p99     max\n" +
		"lane    prefill         300  834us  1.04ms  1.05ms\n" +
		"kernel  attn_prefill     18  438us   523us   525us\n" +
		"p50 and p99 are estimated within the hub's 2.2%-wide histogram buckets (within 1.1%); max is exact.\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWriteDeviceColumnOnlyWithSeveralDevices(t *testing.T) {
	rows := []Row{
		{Kind: gpuspans.KindLane, Name: "decode", Device: 0, Count: 1, P50: time.Millisecond, P99: time.Millisecond, Max: time.Millisecond},
		{Kind: gpuspans.KindLane, Name: "decode", Device: 1, Count: 1, P50: time.Millisecond, P99: time.Millisecond, Max: time.Millisecond},
	}
	var b bytes.Buffer
	if err := Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"kind  name    gpu  count     p50     p99     max\n" +
		"lane  decode    0      1  1.00ms  1.00ms  1.00ms\n" +
		"lane  decode    1      1  1.00ms  1.00ms  1.00ms\n"
	if got := b.String(); got[:len(want)] != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, nil); err != nil || b.String() != "no spans landed\n" {
		t.Errorf("Write(nil) = %q, %v", b.String(), err)
	}
}

// runHub drives a hub on a simulated GPU with a manual clock and returns
// it with every span it landed, read as a span-file writer reads them.
func runHub(t *testing.T) (*gpuspans.Hub, []gpuspans.Span) {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	stream := gpu.NewStream()
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 2, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Install(0, stream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	if err := hub.RegisterKernel(7, "attn"); err != nil {
		t.Fatal(err)
	}
	var spans []gpuspans.Span
	var last uint64
	for step := 0; step < 200; step++ {
		hub.BeginStep()
		for lane := 0; lane < 2; lane++ {
			hub.LaneBegin(lane)
			sp := hub.KernelBegin(7, stream)
			gpu.Launch(stream, time.Duration(50+step*lane)*time.Microsecond)
			hub.KernelEnd(sp)
			gpu.Launch(stream, time.Duration(100+3*step)*time.Microsecond)
			hub.LaneEnd(lane)
		}
		clock.Advance(10 * time.Millisecond)
		spans = hub.RecentSpans(last, spans)
		if len(spans) > 0 {
			last = spans[len(spans)-1].Seq
		}
	}
	hub.Harvest()
	spans = hub.RecentSpans(last, spans)
	return hub, spans
}

// The same spans give the same table from a hub snapshot and from a span
// file: the demo's exit summary and "gpuspans trace summary" agree.
func TestSpanFileMatchesSnapshot(t *testing.T) {
	hub, spans := runHub(t)
	var file bytes.Buffer
	w := spanfile.NewWriter(&file, spanfile.Options{})
	if err := w.WriteSpans("test", spans); err != nil {
		t.Fatal(err)
	}
	snap := hub.Snapshot()
	if err := w.WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	rows, st, err := ReadSpanFile(&file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Spans != uint64(len(spans)) || st.Snapshots != 1 || st.FromSnapshot {
		t.Errorf("stats %+v, want %d spans and one snapshot", st, len(spans))
	}
	want := FromSnapshot(&snap)
	if len(want) != 3 { // prefill, decode and attn
		t.Fatalf("snapshot rows %+v", want)
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("span file rows\n%+v\nsnapshot rows\n%+v", rows, want)
	}
}

func TestReadSpanFileSnapshotOnly(t *testing.T) {
	hub, _ := runHub(t)
	snap := hub.Snapshot()
	var file bytes.Buffer
	if err := spanfile.NewWriter(&file, spanfile.Options{}).WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	rows, st, err := ReadSpanFile(&file)
	if err != nil {
		t.Fatal(err)
	}
	if !st.FromSnapshot || !reflect.DeepEqual(rows, FromSnapshot(&snap)) {
		t.Errorf("rows %+v, stats %+v: want the snapshot's", rows, st)
	}
}

func TestReadSpanFileTruncated(t *testing.T) {
	_, spans := runHub(t)
	var file bytes.Buffer
	w := spanfile.NewWriter(&file, spanfile.Options{})
	if err := w.WriteSpans("a", spans[:10]); err != nil {
		t.Fatal(err)
	}
	whole := file.Len()
	if err := w.WriteSpans("b", spans[10:]); err != nil {
		t.Fatal(err)
	}
	cut := file.Bytes()[:whole+20]
	rows, st, err := ReadSpanFile(bytes.NewReader(cut))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error %v, want one wrapping io.ErrUnexpectedEOF", err)
	}
	var n uint64
	for _, r := range rows {
		n += r.Count
	}
	if st.Spans != 10 || n != 10 {
		t.Errorf("read %d spans into rows counting %d, want the 10 before the cut", st.Spans, n)
	}
}

func TestReadSpanFileNotASpanFile(t *testing.T) {
	if _, _, err := ReadSpanFile(bytes.NewReader([]byte("{\"traceEvents\":[]}"))); err == nil {
		t.Error("a JSON file read as a span file without error")
	}
}

// A span file is untrusted input: a snapshot's extreme durations must print,
// not recurse without end.
func TestWriteExtremeSnapshotFromFile(t *testing.T) {
	var buf bytes.Buffer
	w := spanfile.NewWriter(&buf, spanfile.Options{})
	s := gpuspans.Snapshot{Lanes: []gpuspans.Aggregate{{Name: "decode", Count: 1, Min: math.MinInt64, Max: math.MinInt64}}}
	s.Lanes[0].Buckets[0] = 1
	if err := w.WriteSnapshot(&s); err != nil {
		t.Fatal(err)
	}
	rows, st, err := ReadSpanFile(&buf)
	if err != nil || !st.FromSnapshot || len(rows) != 1 {
		t.Fatalf("ReadSpanFile: %v rows, %+v, %v", len(rows), st, err)
	}
	var out bytes.Buffer
	if err := Write(&out, rows); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte("-9223372037s")) {
		t.Errorf("table:\n%s", out.String())
	}
}

// A span file is untrusted input: one of many distinct names with a span
// each (a hostile one) must not cost an 8 KiB aggregate per name, in spans
// or in a snapshot record. Memory stays a small multiple of the file.
func TestReadSpanFileMemoryBounded(t *testing.T) {
	const names = 20000
	spans := make([]gpuspans.Span, names)
	aggs := make([]*gpuspansv1.Aggregate, names)
	for i := range spans {
		name := fmt.Sprintf("k%05d", i)
		spans[i] = gpuspans.Span{Kind: gpuspans.KindKernel, Name: name, DurationNs: int64(i + 1)}
		aggs[i] = &gpuspansv1.Aggregate{Name: name, Count: 1, SumNs: 1, MinNs: 1, MaxNs: 1}
	}
	var withSpans, withSnapshot bytes.Buffer
	if err := spanfile.NewWriter(&withSpans, spanfile.Options{}).WriteSpans("hostile", spans); err != nil {
		t.Fatal(err)
	}
	rec := &gpuspansv1.Record{Record: &gpuspansv1.Record_Snapshot{Snapshot: &gpuspansv1.Snapshot{Level: gpuspansv1.Level_LEVEL_OFF, Kernels: aggs}}}
	if err := spanfile.NewWriter(&withSnapshot, spanfile.Options{}).WriteRecord(rec); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		file []byte
	}{{"spans", withSpans.Bytes()}, {"snapshot", withSnapshot.Bytes()}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rows, _, err := ReadSpanFile(bytes.NewReader(c.file))
		runtime.ReadMemStats(&after)
		if err != nil || len(rows) != names {
			t.Fatalf("%s: %d rows, %v", c.name, len(rows), err)
		}
		// TotalAlloc bounds the peak; 8 KiB a name would be over 500 times
		// the file.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64*uint64(len(c.file)) {
			t.Errorf("%s: reading a %d-byte file allocated %d bytes (%dx)", c.name, len(c.file), alloc, alloc/uint64(len(c.file)))
		} else {
			t.Logf("%s: %d-byte file, %d bytes allocated (%dx)", c.name, len(c.file), alloc, alloc/uint64(len(c.file)))
		}
	}
}

// Spans aggregate the same whether a name stays under the raw limit or
// passes it.
func TestBuilderRawAndAggregatedAgree(t *testing.T) {
	var b Builder
	var want gpuspans.Aggregate
	for i := 0; i < 3*rawLimit; i++ {
		d := time.Duration(i*37%1000+1) * time.Microsecond
		b.Add(gpuspans.Span{Kind: gpuspans.KindLane, Name: "decode", DurationNs: int64(d)})
		want.Observe(d)
		if i == rawLimit-1 || i == 3*rawLimit-1 {
			want.Name = "decode"
			if rows := b.Rows(); len(rows) != 1 || rows[0] != rowOf(gpuspans.KindLane, &want) {
				t.Errorf("after %d spans: %+v, want %+v", i+1, rows, rowOf(gpuspans.KindLane, &want))
			}
		}
	}
}

package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// start has nanoseconds, so that the trace must keep them.
var start = time.Unix(1_700_000_000, 123_456_789)

var laneStream = map[int]backend.Stream{0: 0x10, 1: 0x11}

const auxStream = backend.Stream(0x21) // device 1's collective stream

type kernel struct {
	handle uint64
	ns     int64 // on device 0; device d takes d+1 times as long
}

// laneKernels are the kernels each lane launches on its device's lane
// stream, every step; odd nanoseconds check that nothing is rounded.
var laneKernels = map[string][]kernel{
	"prefill": {{0xa1, 40_125}, {0xa2, 30_007}, {0xff, 5_000}},
	"decode":  {{0xa1, 8_001}, {0xa2, 6_000}, {0xff, 999}},
}

// serve runs four steps on two simulated GPUs, kernel spans armed on
// steps 2 and 4, and returns the spans landed. Device 1 also runs an
// allreduce on its own stream during decode.
func serve(t *testing.T) []gpuspans.Span {
	t.Helper()
	clock := sim.NewClock(start)
	h, err := gpuspans.New(gpuspans.Options{
		Level: gpuspans.LevelKernel, KernelSpanEvery: 2, Now: clock.Now, StartTimes: gpuspans.StartTimesAlways,
		Logf: func(string, ...interface{}) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	gpus := []*sim.GPU{sim.New(sim.Options{Device: 0, Now: clock.Now}), sim.New(sim.Options{Device: 1, Now: clock.Now})}
	for d, g := range gpus {
		if err := h.Install(d, laneStream[d], g.Opener()); err != nil {
			t.Fatal(err)
		}
	}
	for handle, name := range map[uint64]string{0xa1: "attention", 0xa2: "mlp", 0xa3: "allreduce"} {
		if err := h.RegisterKernel(handle, name); err != nil {
			t.Fatal(err)
		}
	}
	for step := 1; step <= 4; step++ {
		h.BeginStep()
		for _, lane := range []string{"prefill", "decode"} {
			l, _ := h.LaneIndex(lane)
			h.LaneBegin(l)
			for d, g := range gpus {
				for _, k := range laneKernels[lane] {
					ks := h.Device(d).KernelBegin(k.handle, laneStream[d])
					g.Launch(laneStream[d], time.Duration(k.ns*int64(d+1)))
					h.KernelEnd(ks)
				}
			}
			if lane == "decode" {
				ks := h.Device(1).KernelBegin(0xa3, auxStream)
				gpus[1].Launch(auxStream, 5*time.Microsecond)
				h.KernelEnd(ks)
			}
			h.LaneEnd(l)
		}
		clock.Advance(time.Millisecond)
	}
	h.Harvest()
	spans := h.RecentSpans(0, nil)
	// 4 steps x 2 lanes x 2 devices, and on 2 armed steps 2 x 3 kernels on
	// each device plus the allreduce.
	if want := 16 + 2*(2*2*3+1); len(spans) != want {
		t.Fatalf("%d spans landed, want %d", len(spans), want)
	}
	return spans
}

type event struct {
	Ph   string
	Pid  int
	Tid  int
	Ts   json.Number
	Dur  json.Number
	Name string
	Cat  string
	Args map[string]interface{}
}

type document struct {
	TraceEvents         []event
	DisplayTimeUnit     string
	BaseTimeNanoseconds json.Number
	OtherData           map[string]interface{}
}

func parse(t *testing.T, data []byte) document {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var doc document
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("the trace is not the JSON expected: %v\n%s", err, data)
	}
	return doc
}

// micros parses a decimal microsecond count into nanoseconds, exactly.
func micros(t *testing.T, n json.Number) int64 {
	t.Helper()
	s := string(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 3 {
		t.Fatalf("%s has more than nanosecond digits", n)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		t.Fatalf("timestamp %s: %v", n, err)
	}
	var f int64
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 3-len(frac)), 10, 64); err != nil {
			t.Fatalf("timestamp %s: %v", n, err)
		}
	}
	if neg {
		return -(w*1000 + f)
	}
	return w*1000 + f
}

type track struct{ pid, tid int }

type placed struct {
	ev         event
	start, end int64 // ns from the origin
	span       gpuspans.Span
}

func TestTrace(t *testing.T) {
	spans := serve(t)
	bySeq := make(map[uint64]gpuspans.Span)
	for _, s := range spans {
		bySeq[s.Seq] = s
	}
	odd := []gpuspans.Span{
		{Seq: 1000, Kind: gpuspans.KindLane, Name: "decode", Device: 0},                                                           // no host start
		{Seq: 1001, Kind: 9, Name: "future", Device: 0, StartNs: start.UnixNano()},                                                // unknown kind
		{Seq: 1002, Kind: gpuspans.KindLane, Name: "a \"q\" \\ \n\t é \xff", Device: 3, StartNs: start.UnixNano(), DurationNs: 1}, // odd name
	}

	var out bytes.Buffer
	w := NewWriter(&out, Options{})
	if err := w.WriteSpans(spans[:10]); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteSpans(append(spans[10:], odd...)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := w.Counts(), (Counts{Written: uint64(len(spans)) + 1, Unplaced: 1, Unknown: 1}); got != want {
		t.Errorf("Counts() = %+v, want %+v", got, want)
	}
	doc := parse(t, out.Bytes())

	// The default origin: the first span's second, less a minute.
	origin := start.Truncate(time.Second).Add(-time.Minute).UnixNano()
	if got := doc.OtherData["origin_unix_nanos"]; got != strconv.FormatInt(origin, 10) {
		t.Errorf("origin_unix_nanos = %v, want %d", got, origin)
	}
	// Kineto's base time: the same origin, as a number a double holds exactly.
	if got := string(doc.BaseTimeNanoseconds); got != strconv.FormatInt(origin, 10) || int64(float64(origin)) != origin {
		t.Errorf("baseTimeNanoseconds = %s, want %d", got, origin)
	}
	if doc.DisplayTimeUnit != "ms" {
		t.Errorf("displayTimeUnit = %q", doc.DisplayTimeUnit)
	}

	procs := make(map[int]string)
	threads := make(map[track]string)
	var xs []placed
	for _, ev := range doc.TraceEvents {
		switch ev.Ph {
		case "M":
			name, _ := ev.Args["name"].(string)
			switch ev.Name {
			case "process_name":
				procs[ev.Pid] = name
			case "thread_name":
				threads[track{ev.Pid, ev.Tid}] = name
			case "process_sort_index", "thread_sort_index":
			default:
				t.Errorf("unexpected metadata %+v", ev)
			}
		case "X":
			if procs[ev.Pid] == "" || threads[track{ev.Pid, ev.Tid}] == "" {
				t.Fatalf("event before its process or thread is named: %+v", ev)
			}
			seq, err := strconv.ParseUint(string(ev.Args["seq"].(json.Number)), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			s, ok := bySeq[seq]
			if seq == odd[2].Seq {
				s, ok = odd[2], true
			}
			if !ok {
				t.Fatalf("event of unknown seq %d: %+v", seq, ev)
			}
			p := placed{ev: ev, start: micros(t, ev.Ts), span: s}
			p.end = p.start + micros(t, ev.Dur)
			xs = append(xs, p)
		default:
			t.Errorf("unexpected event %+v", ev)
		}
	}
	if len(xs) != len(spans)+1 {
		t.Fatalf("%d complete events, want %d", len(xs), len(spans)+1)
	}

	wantThreads := map[track]string{
		{1, 1}: "lane prefill", {1, 2}: "lane decode", {1, 3}: "kernels, stream 0x10",
		{2, 1}: "lane prefill", {2, 2}: "lane decode", {2, 3}: "kernels, stream 0x11", {2, 4}: "kernels, stream 0x21",
		{4, 1}: "lane " + strings.ToValidUTF8(odd[2].Name, "\uFFFD"),
	}
	if fmt.Sprint(threads) != fmt.Sprint(wantThreads) {
		t.Errorf("threads = %v\nwant      %v", threads, wantThreads)
	}
	if want := map[int]string{1: "GPU 0", 2: "GPU 1", 4: "GPU 3"}; fmt.Sprint(procs) != fmt.Sprint(want) {
		t.Errorf("processes = %v, want %v", procs, want)
	}

	// Every event is its span: place, duration, name, track, args.
	for _, p := range xs {
		s, ev := p.span, p.ev
		wantTrack := "lane " + s.Name
		if s.Kind == gpuspans.KindKernel {
			wantTrack = fmt.Sprintf("kernels, stream %#x", uint64(s.Stream))
		}
		if p.start != s.StartNs-origin || p.end-p.start != s.DurationNs ||
			ev.Name != strings.ToValidUTF8(s.Name, "\uFFFD") || ev.Cat != s.Kind.String() || ev.Pid != s.Device+1 ||
			threads[track{ev.Pid, ev.Tid}] != strings.ToValidUTF8(wantTrack, "\uFFFD") ||
			fmt.Sprint(ev.Args["step"]) != fmt.Sprint(s.Step) || fmt.Sprint(ev.Args["stream"]) != fmt.Sprint(uint64(s.Stream)) {
			t.Errorf("event %+v (at %d+%d) does not match span %+v", ev, p.start, p.end-p.start, s)
		}
	}

	// Within a track, events follow each other without overlapping: a lane
	// or a stream runs one thing at a time.
	last := make(map[track]placed)
	for _, p := range xs {
		k := track{p.ev.Pid, p.ev.Tid}
		if prev, ok := last[k]; ok && p.start < prev.end {
			t.Errorf("on %s, %q at %d starts before %q ends at %d", threads[k], p.ev.Name, p.start, prev.ev.Name, prev.end)
		}
		last[k] = p
	}

	// On each device and step, prefill runs before decode, and the kernels
	// on the lane stream lie inside their lane's span, filling it.
	type laneKey struct {
		device int
		step   uint64
		lane   string
	}
	lanes := make(map[laneKey]placed)
	for _, p := range xs {
		if p.span.Kind == gpuspans.KindLane && p.span.Device < 2 {
			lanes[laneKey{p.span.Device, p.span.Step, p.span.Name}] = p
		}
	}
	if len(lanes) != 16 {
		t.Fatalf("%d lane spans, want 16", len(lanes))
	}
	filled := make(map[laneKey]int64)
	for _, p := range xs {
		s := p.span
		if s.Kind != gpuspans.KindKernel || s.Stream != laneStream[s.Device] {
			continue
		}
		var in []laneKey
		for _, lane := range []string{"prefill", "decode"} {
			k := laneKey{s.Device, s.Step, lane}
			if l, ok := lanes[k]; ok && l.start <= p.start && p.end <= l.end {
				in = append(in, k)
			}
		}
		if len(in) != 1 {
			t.Errorf("kernel %q (device %d, step %d, %d..%d) lies in %d lane spans of its step", s.Name, s.Device, s.Step, p.start, p.end, len(in))
			continue
		}
		filled[in[0]] += p.end - p.start
	}
	for k, l := range lanes {
		var want int64
		for _, kn := range laneKernels[k.lane] {
			want += kn.ns * int64(k.device+1)
		}
		if l.end-l.start != want {
			t.Errorf("%+v: lane span of %dns, want %dns", k, l.end-l.start, want)
		}
		if armed := k.step%2 == 0; armed && filled[k] != want || !armed && filled[k] != 0 {
			t.Errorf("%+v: kernels inside fill %dns of %dns (armed %v)", k, filled[k], want, armed)
		}
		if k.lane == "decode" {
			if pre := lanes[laneKey{k.device, k.step, "prefill"}]; pre.end > l.start {
				t.Errorf("%+v: decode starts at %d, before prefill ends at %d", k, l.start, pre.end)
			}
		}
	}
}

func TestEmptyAndOrigin(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, Options{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if doc := parse(t, out.Bytes()); len(doc.TraceEvents) != 0 {
		t.Errorf("empty trace has events: %s", out.Bytes())
	}
	if err := w.WriteSpans(nil); err == nil {
		t.Error("WriteSpans after Close succeeded")
	}

	// A given origin: spans before it get negative timestamps, exactly.
	out.Reset()
	w = NewWriter(&out, Options{Origin: start})
	s := gpuspans.Span{Seq: 1, Kind: gpuspans.KindKernel, Name: "k", StartNs: start.UnixNano() - 1_500, DurationNs: 2_001}
	if err := w.WriteSpans([]gpuspans.Span{s}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	doc := parse(t, out.Bytes())
	x := doc.TraceEvents[len(doc.TraceEvents)-1]
	if x.Ts != "-1.5" || x.Dur != "2.001" {
		t.Errorf("ts %s, dur %s; want -1.5, 2.001", x.Ts, x.Dur)
	}
}

func TestAppendMicros(t *testing.T) {
	for ns, want := range map[int64]string{
		0: "0", 1: "0.001", 10: "0.01", 999: "0.999", 1000: "1", 1_234_500: "1234.5",
		-1: "-0.001", -1000: "-1", 60_123_456_789: "60123456.789",
		-9223372036854775808: "-9223372036854775.808",
	} {
		if got := string(appendMicros(nil, ns)); got != want {
			t.Errorf("appendMicros(%d) = %s, want %s", ns, got, want)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "ctl \x00\x01\x1f\x7f", "é 中 🙂", "bad \xff\xfe utf8", "\u2028"} {
		var got, want string
		if err := json.Unmarshal(appendString(nil, s), &got); err != nil {
			t.Errorf("appendString(%q) is not JSON: %v", s, err)
			continue
		}
		std, _ := json.Marshal(s) // encoding/json's reading of s, invalid bytes and all
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("appendString(%q) reads back as %q, want %q", s, got, want)
		}
	}
}

// TestFromSpanFile: converting a span file gives the bytes of writing its
// spans directly, whatever the batches and the other records in it.
func TestFromSpanFile(t *testing.T) {
	spans := serve(t)
	spans = append(spans, gpuspans.Span{Seq: 5000, Kind: gpuspans.KindLane, Name: "decode"}) // unplaced

	var file bytes.Buffer
	fw := spanfile.NewWriter(&file, spanfile.Options{})
	snap := gpuspans.Snapshot{Level: gpuspans.LevelKernel}
	for _, err := range []error{fw.WriteSpans("a", spans[:7]), fw.WriteSnapshot(&snap), fw.WriteSpans("a", spans[7:])} {
		if err != nil {
			t.Fatal(err)
		}
	}

	var direct bytes.Buffer
	w := NewWriter(&direct, Options{Origin: start})
	if err := w.WriteSpans(spans); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	var converted bytes.Buffer
	counts, err := FromSpanFile(&converted, bytes.NewReader(file.Bytes()), Options{Origin: start})
	if err != nil {
		t.Fatal(err)
	}
	if counts != w.Counts() || counts.Unplaced != 1 {
		t.Errorf("FromSpanFile counts %+v, direct %+v", counts, w.Counts())
	}
	if !bytes.Equal(converted.Bytes(), direct.Bytes()) {
		t.Errorf("FromSpanFile wrote\n%s\nwant\n%s", converted.Bytes(), direct.Bytes())
	}

	// A corrupt file: an error, and a valid trace of the spans before it.
	cut := file.Bytes()[:file.Len()-3]
	converted.Reset()
	counts, err = FromSpanFile(&converted, bytes.NewReader(cut), Options{Origin: start})
	var fe *spanfile.FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("FromSpanFile of a truncated file: %v, want a *spanfile.FormatError", err)
	}
	if doc := parse(t, converted.Bytes()); counts.Written != 7 || len(doc.TraceEvents) == 0 {
		t.Errorf("truncated file: %+v", counts)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("pipe closed") }

func TestWriteError(t *testing.T) {
	w := NewWriter(failWriter{}, Options{})
	s := []gpuspans.Span{{Seq: 1, Kind: gpuspans.KindLane, Name: "x", StartNs: 1}}
	err := w.WriteSpans(s)
	if err == nil || !strings.Contains(err.Error(), "pipe closed") {
		t.Fatalf("WriteSpans: %v", err)
	}
	if err2 := w.Close(); err2 != err {
		t.Errorf("Close after a failed write: %v, want %v", err2, err)
	}
}

// A kernel window's lane span carries its GPU time in args: as measured,
// and where its window settled, as served with idle by cause.
func TestGPUTimeArgs(t *testing.T) {
	at := start.UnixNano()
	spans := []gpuspans.Span{
		{Seq: 1, Kind: gpuspans.KindLane, Name: "decode", StartNs: at, DurationNs: 1000, GPUTimed: true, BusyNs: 600, IdleNs: 400,
			ServedNs: 700, Causes: gpuspans.IdleCauses{Host: 50, Launch: 20, Copy: 15, Wait: 10, Other: 5}},
		{Seq: 2, Kind: gpuspans.KindLane, Name: "decode", StartNs: at + 2000, DurationNs: 1200, GPUTimed: true, BusyNs: 600, IdleNs: 600},
		{Seq: 3, Kind: gpuspans.KindLane, Name: "decode", StartNs: at + 4000, DurationNs: 700},
	}
	var out bytes.Buffer
	w := NewWriter(&out, Options{})
	if err := w.WriteSpans(spans); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"1": {"busy_ns": "600", "idle_ns": "400", "served_ns": "700", "window_cost_ns": "300",
			"idle_host_ns": "50", "idle_launch_ns": "20", "idle_copy_ns": "15", "idle_wait_ns": "10", "idle_other_ns": "5"},
		"2": {"busy_ns": "600", "idle_ns": "600"},
		"3": {},
	}
	seen := 0
	for _, ev := range parse(t, out.Bytes()).TraceEvents {
		if ev.Ph != "X" {
			continue
		}
		seen++
		seq := string(ev.Args["seq"].(json.Number))
		got := map[string]string{}
		for k, v := range ev.Args {
			if k != "seq" && k != "step" && k != "stream" {
				got[k] = fmt.Sprint(v)
			}
		}
		if !reflect.DeepEqual(got, want[seq]) {
			t.Errorf("span %s: GPU time args %v, want %v", seq, got, want[seq])
		}
	}
	if seen != len(spans) {
		t.Errorf("%d spans written, want %d", seen, len(spans))
	}
}

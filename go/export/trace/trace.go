// Package trace writes spans as a Chrome Trace Event Format JSON file,
// which ui.perfetto.dev and chrome://tracing open.
//
// Each device is a process, "GPU <n>" (pid n+1, clear of pid 0, which
// Perfetto reserves for the kernel's idle task). In it each lane has a
// track ("lane prefill"), and so does each stream kernel spans ran on
// ("kernels, stream 0x..."), lanes listed first. Tracks are numeric tids
// (1, 2, ... per process) named by thread_name metadata events, as
// torch.profiler's (Kineto's) traces name theirs. A span is a complete
// event ("ph":"X") on its track, named after the lane or kernel, with its
// step, stream (the CUstream value, a JSON integer) and seq in args; a
// kernel window's lane span adds its GPU time (gpuspans.Span, in ns):
// busy_ns and idle_ns as measured, and where its window settled served_ns,
// window_cost_ns and the served idle by cause (idle_host_ns,
// idle_launch_ns, idle_copy_ns, idle_wait_ns, idle_other_ns).
//
// Timestamps are on the host clock, in microseconds with nanosecond
// decimals, counted from an origin (Options.Origin) that the file records
// as Kineto does, in a top-level "baseTimeNanoseconds" (Unix ns), and in
// otherData.origin_unix_nanos: an event began at baseTimeNanoseconds +
// 1000*ts ns, which is how a gpuspans trace and a Kineto trace of the same
// run line up (docs/traces.md, tools/trace/merge.py). Viewers parse
// timestamps as doubles: counted from the Unix epoch they would keep only a
// quarter of a microsecond, enough to make back-to-back kernels overlap;
// counted from a nearby origin they keep the nanoseconds. Spans the backend
// could not place on the host clock (StartNs 0) are left out and counted.
package trace

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
)

// originSlack is how far before the first span the default origin lies, so
// that spans which began earlier but landed later (a lane span lands after
// the kernels inside it) still get positive timestamps.
const originSlack = time.Minute

// kernelSortBase puts kernel tracks below the lane tracks of their device.
const kernelSortBase = 1 << 20

// Options configures a Writer.
type Options struct {
	// Origin is the host time of timestamp 0. The zero Origin means the
	// start of the first span written, rounded down to the second, less a
	// minute. Spans that began before the origin get negative timestamps;
	// set Origin when merging spans far apart in time.
	Origin time.Time
}

// Counts says what a Writer did with the spans it was given.
type Counts struct {
	Written  uint64 // spans written as events
	Unplaced uint64 // spans left out: no host start time (StartNs 0)
	Unknown  uint64 // spans left out: a kind other than lane or kernel
}

// Writer streams a trace to an io.Writer: each WriteSpans call writes its
// events and flushes them, and the Writer keeps only its tracks in memory,
// so memory grows with the number of tracks, not of spans. Close ends the
// JSON document.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	w      *bufio.Writer
	origin int64 // Unix ns of ts 0; set at the first placed span unless given
	fixed  bool  // origin is set: given in Options, or from the first placed span
	opened bool  // the document's opening is written
	events int   // events written, to place commas
	tracks map[trackKey]int
	procs  map[int]int // device -> tracks so far
	counts Counts
	buf    []byte
	closed bool
	err    error
}

// trackKey names a track: a lane of a device, or a stream kernel spans ran
// on.
type trackKey struct {
	device int
	kind   gpuspans.SpanKind
	lane   string
	stream uint64
}

// NewWriter returns a Writer to w. Nothing is written before the first
// WriteSpans or Close.
func NewWriter(w io.Writer, o Options) *Writer {
	t := &Writer{
		w:      bufio.NewWriter(w),
		tracks: make(map[trackKey]int),
		procs:  make(map[int]int),
	}
	if !o.Origin.IsZero() {
		t.origin, t.fixed = o.Origin.UnixNano(), true
	}
	return t
}

// Counts returns what the Writer has done with the spans so far.
func (t *Writer) Counts() Counts { return t.counts }

// WriteSpans writes spans as events, in order, and flushes them. An error
// from the underlying writer is returned by this and every later call.
func (t *Writer) WriteSpans(spans []gpuspans.Span) error {
	if t.closed {
		return fmt.Errorf("trace: WriteSpans after Close")
	}
	for i := range spans {
		if t.err != nil {
			return t.err
		}
		t.span(&spans[i])
	}
	return t.flush()
}

// Close writes the end of the JSON document and flushes it. It does not
// close the underlying writer. Calling Close again does nothing.
func (t *Writer) Close() error {
	if t.closed {
		return t.err
	}
	t.closed = true
	b := t.begin()
	if t.events > 0 {
		b = append(b, '\n')
	}
	// The default origin is a whole second, which a double holds exactly:
	// readers that parse JSON numbers as doubles still get it right.
	b = append(b, `],"displayTimeUnit":"ms","baseTimeNanoseconds":`...)
	b = strconv.AppendInt(b, t.origin, 10)
	b = append(b, `,"otherData":{"origin_unix_nanos":"`...)
	b = strconv.AppendInt(b, t.origin, 10)
	b = append(b, `","unplaced_spans":`...)
	b = strconv.AppendUint(b, t.counts.Unplaced, 10)
	b = append(b, `,"unknown_kind_spans":`...)
	b = strconv.AppendUint(b, t.counts.Unknown, 10)
	b = append(b, "}}\n"...)
	t.write(b)
	return t.flush()
}

// begin returns t.buf emptied, starting with the document's opening if
// it is not written yet.
func (t *Writer) begin() []byte {
	b := t.buf[:0]
	if !t.opened {
		b = append(b, `{"traceEvents":[`...)
		t.opened = true
	}
	return b
}

func (t *Writer) span(s *gpuspans.Span) {
	if s.Kind != gpuspans.KindLane && s.Kind != gpuspans.KindKernel {
		t.counts.Unknown++
		return
	}
	if s.StartNs == 0 {
		t.counts.Unplaced++
		return
	}
	if !t.fixed {
		sec := s.StartNs - s.StartNs%int64(time.Second)
		t.origin, t.fixed = sec-int64(originSlack), true
	}
	key := trackKey{device: s.Device, kind: s.Kind}
	if s.Kind == gpuspans.KindLane {
		key.lane = s.Name
	} else {
		key.stream = uint64(s.Stream)
	}
	tid, ok := t.tracks[key]
	if !ok {
		tid = t.newTrack(key)
	}
	dur := s.DurationNs
	if dur < 0 {
		dur = 0 // a negative span cannot be drawn; the hub's aggregates clamp it too
	}
	b := t.event(`{"ph":"X","pid":`, s.Device, tid)
	b = append(b, `,"ts":`...)
	b = appendMicros(b, s.StartNs-t.origin)
	b = append(b, `,"dur":`...)
	b = appendMicros(b, dur)
	b = append(b, `,"name":`...)
	b = appendString(b, s.Name)
	b = append(b, `,"cat":"`...)
	b = append(b, s.Kind.String()...)
	b = append(b, `","args":{"step":`...)
	b = strconv.AppendUint(b, s.Step, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, s.Seq, 10)
	b = append(b, `,"stream":`...)
	b = strconv.AppendUint(b, uint64(s.Stream), 10)
	if s.Graph != 0 {
		b = append(b, `,"graph":`...)
		b = strconv.AppendUint(b, uint64(s.Graph), 10)
	}
	if s.GPUTimed {
		b = appendArg(b, "busy_ns", s.BusyNs)
		b = appendArg(b, "idle_ns", s.IdleNs)
		if s.ServedNs > 0 {
			c := &s.Causes
			b = appendArg(b, "served_ns", s.ServedNs)
			b = appendArg(b, "window_cost_ns", s.DurationNs-s.ServedNs)
			b = appendArg(b, "idle_host_ns", int64(c.Host))
			b = appendArg(b, "idle_launch_ns", int64(c.Launch))
			b = appendArg(b, "idle_copy_ns", int64(c.Copy))
			b = appendArg(b, "idle_wait_ns", int64(c.Wait))
			b = appendArg(b, "idle_other_ns", int64(c.Other))
		}
	}
	b = append(b, `}}`...)
	t.write(b)
	t.counts.Written++
}

// appendArg appends ,"name":v to an args object.
func appendArg(b []byte, name string, v int64) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	return strconv.AppendInt(b, v, 10)
}

// newTrack numbers a track, naming it (and its process, for a new device)
// in metadata events.
func (t *Writer) newTrack(key trackKey) int {
	n, seen := t.procs[key.device]
	if !seen {
		t.meta(key.device, 0, "process_name", "name", "GPU "+strconv.Itoa(key.device))
		t.metaInt(key.device, 0, "process_sort_index", key.device)
	}
	tid := n + 1
	t.procs[key.device] = tid
	t.tracks[key] = tid
	if key.kind == gpuspans.KindLane {
		t.meta(key.device, tid, "thread_name", "name", "lane "+key.lane)
		t.metaInt(key.device, tid, "thread_sort_index", tid)
	} else {
		t.meta(key.device, tid, "thread_name", "name", "kernels, stream 0x"+strconv.FormatUint(key.stream, 16))
		t.metaInt(key.device, tid, "thread_sort_index", kernelSortBase+tid)
	}
	return tid
}

func (t *Writer) meta(device, tid int, name, arg, value string) {
	b := t.event(`{"ph":"M","pid":`, device, tid)
	b = append(b, `,"name":"`...)
	b = append(b, name...)
	b = append(b, `","args":{"`...)
	b = append(b, arg...)
	b = append(b, `":`...)
	b = appendString(b, value)
	b = append(b, "}}"...)
	t.write(b)
}

func (t *Writer) metaInt(device, tid int, name string, v int) {
	b := t.event(`{"ph":"M","pid":`, device, tid)
	b = append(b, `,"name":"`...)
	b = append(b, name...)
	b = append(b, `","args":{"sort_index":`...)
	b = strconv.AppendInt(b, int64(v), 10)
	b = append(b, "}}"...)
	t.write(b)
}

// event starts an event: the separator, the opening, pid and tid.
func (t *Writer) event(open string, device, tid int) []byte {
	b := t.begin()
	if t.events > 0 {
		b = append(b, ',')
	}
	b = append(b, '\n')
	b = append(b, open...)
	b = strconv.AppendInt(b, int64(device)+1, 10)
	b = append(b, `,"tid":`...)
	b = strconv.AppendInt(b, int64(tid), 10)
	t.events++
	return b
}

func (t *Writer) write(b []byte) {
	t.buf = b
	if t.err != nil {
		return
	}
	if _, err := t.w.Write(b); err != nil {
		t.err = fmt.Errorf("trace: write: %w", err)
	}
}

func (t *Writer) flush() error {
	if t.err == nil {
		if err := t.w.Flush(); err != nil {
			t.err = fmt.Errorf("trace: write: %w", err)
		}
	}
	return t.err
}

// appendMicros appends ns as microseconds, exactly: the integer part, then
// up to three decimals without trailing zeros.
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1000, 10)
	frac := u % 1000
	if frac == 0 {
		return b
	}
	digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	n := 3
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does; names from span files are not validated.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// FromSpanFile converts a span file (package spanfile) read from src into a
// trace written to dst: the spans of every SpanBatch record in order;
// snapshots and records of kinds it does not know are skipped. It returns
// what it did with the spans, and the first error reading src or writing
// dst; the trace is closed either way, so dst holds valid JSON with the
// spans read before a corrupt record.
func FromSpanFile(dst io.Writer, src io.Reader, o Options) (Counts, error) {
	t := NewWriter(dst, o)
	r := spanfile.NewReader(src, spanfile.Options{})
	var batch []gpuspans.Span
	var err error
	for {
		var rec *gpuspansv1.Record
		rec, err = r.Next()
		if err != nil {
			break
		}
		batch = batch[:0]
		for _, p := range rec.GetSpans().GetSpans() {
			s, cerr := spanfile.SpanFromProto(p)
			if cerr != nil {
				t.counts.Unknown++ // the only conversion error: a kind this version does not know
				continue
			}
			batch = append(batch, s)
		}
		if err = t.WriteSpans(batch); err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	return t.Counts(), err
}

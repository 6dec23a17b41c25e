// Package spanfile writes spans and hub snapshots to span files and reads
// them back.
//
// A span file is a sequence of records, each a uvarint byte length followed
// by a serialized gpuspansv1.Record (proto/gpuspans/v1/spans.proto): the
// length-delimited framing of Go's protodelim and Java's writeDelimitedTo,
// so other languages read it with their stock delimited parsers. The first
// record is a Header whose schema is "gpuspans.v1"; it tells a span file
// from other input and a v1 file from a future v2 one. A Header may also
// follow any record, so concatenated span files (cat a b) are a span file.
//
// A Reader trusts nothing it reads: a bad or truncated file is an error
// naming the byte offset of the record at fault and what was expected, and
// a record's declared length is capped (Options.MaxRecordSize) and read
// incrementally, so a corrupt length cannot make it allocate more than the
// input holds, and a record whose decoded form would take more than 16 times
// its length (crafted: many empty messages) is refused before it is decoded.
//
// The conversions (SpanToProto and the like) are safe for concurrent use.
package spanfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
)

// Schema is the Header.schema of the files this package writes and the only
// one it reads: the protobuf package of the records.
const Schema = "gpuspans.v1"

// DefaultMaxRecordSize caps a record's length unless Options.MaxRecordSize
// says otherwise. The largest snapshot a hub can produce (64 devices, each
// with 64 lanes and 1025 kernel names, every count at its widest) is about
// 35 MB; nothing else comes near, since WriteSpans splits batches.
const DefaultMaxRecordSize = 64 << 20

// spansPerRecord bounds a span batch record (to well under a megabyte) so
// that readers hold little in memory and a long WriteSpans call does not
// become one huge record.
const spansPerRecord = 4096

// readChunk is how much of a record the Reader allocates ahead of the bytes
// it has actually read.
const readChunk = 64 << 10

// Options configures a Writer or a Reader; the zero Options is the default.
type Options struct {
	// MaxRecordSize caps a record's serialized length in bytes: a Writer
	// refuses to write a longer one, a Reader treats one as corrupt.
	// <= 0 means DefaultMaxRecordSize.
	MaxRecordSize int

	// Now is the clock a Writer stamps headers, batches and snapshots with;
	// nil means time.Now. Readers ignore it.
	Now func() time.Time
}

// withDefaults returns o with its zero fields filled in.
func (o Options) withDefaults() Options {
	if o.MaxRecordSize <= 0 {
		o.MaxRecordSize = DefaultMaxRecordSize
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Writer writes a span file. It writes the Header before the first record,
// so a Writer that writes nothing leaves its output empty, and an empty
// input is a valid span file.
//
// A Writer is safe for concurrent use; each record goes out in one Write
// call and records never interleave. After a failed Write the output may
// end in a partial record, so every later call returns that error.
type Writer struct {
	o Options // with defaults filled in

	mu      sync.Mutex
	w       io.Writer
	buf     []byte
	started bool
	err     error
}

// NewWriter returns a Writer to w configured by o. It writes nothing until
// the first record.
func NewWriter(w io.Writer, o Options) *Writer {
	return &Writer{o: o.withDefaults(), w: w}
}

// WriteSpans writes spans as SpanBatch records from source (a free-form
// identity: host, engine), in order, at most 4096 spans to a record. No
// spans writes nothing.
func (w *Writer) WriteSpans(source string, spans []gpuspans.Span) error {
	now := w.o.Now().UnixNano()
	for len(spans) > 0 {
		n := len(spans)
		if n > spansPerRecord {
			n = spansPerRecord
		}
		b := &gpuspansv1.SpanBatch{
			Source:        source,
			WrittenUnixNs: now,
			Spans:         make([]*gpuspansv1.Span, n),
		}
		for i := range spans[:n] {
			b.Spans[i] = SpanToProto(spans[i])
		}
		if err := w.WriteRecord(&gpuspansv1.Record{Record: &gpuspansv1.Record_Spans{Spans: b}}); err != nil {
			return err
		}
		spans = spans[n:]
	}
	return nil
}

// WriteRequests writes finished requests' records (Hub.FinishedRequests)
// as RequestBatch records from source, at most 4096 to a record. No
// records writes nothing.
func (w *Writer) WriteRequests(source string, recs []gpuspans.RequestRecord) error {
	now := w.o.Now().UnixNano()
	for len(recs) > 0 {
		n := min(len(recs), spansPerRecord)
		b := &gpuspansv1.RequestBatch{Source: source, WrittenUnixNs: now, Requests: make([]*gpuspansv1.RequestRecord, n)}
		for i := range recs[:n] {
			b.Requests[i] = RequestToProto(&recs[i])
		}
		if err := w.WriteRecord(&gpuspansv1.Record{Record: &gpuspansv1.Record_Requests{Requests: b}}); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// WriteSnapshot writes s as a Snapshot record stamped with the writer's
// clock.
func (w *Writer) WriteSnapshot(s *gpuspans.Snapshot) error {
	p := SnapshotToProto(s, w.o.Now())
	return w.WriteRecord(&gpuspansv1.Record{Record: &gpuspansv1.Record_Snapshot{Snapshot: p}})
}

// WriteRecord writes any record, for tools that copy, filter or merge span
// files. A record longer than the size cap is an error and is not written;
// the Writer stays usable.
func (w *Writer) WriteRecord(r *gpuspansv1.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	buf := w.buf[:0]
	if !w.started {
		h := &gpuspansv1.Record{Record: &gpuspansv1.Record_Header{Header: &gpuspansv1.Header{
			Schema:        Schema,
			CreatedUnixNs: w.o.Now().UnixNano(),
		}}}
		var err error
		if buf, err = w.appendRecord(buf, h); err != nil {
			return err
		}
	}
	buf, err := w.appendRecord(buf, r)
	if err != nil {
		return err
	}
	w.buf = buf
	if _, err := w.w.Write(buf); err != nil {
		w.err = fmt.Errorf("spanfile: write: %w", err)
		return w.err
	}
	w.started = true
	return nil
}

// appendRecord appends r's length and bytes to buf, or refuses a record
// over the cap.
func (w *Writer) appendRecord(buf []byte, r *gpuspansv1.Record) ([]byte, error) {
	size := proto.Size(r)
	if size > w.o.MaxRecordSize {
		return buf, fmt.Errorf("spanfile: record of %d bytes exceeds the limit of %d", size, w.o.MaxRecordSize)
	}
	buf = protowire.AppendVarint(buf, uint64(size))
	buf, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(buf, r)
	if err != nil {
		return buf, fmt.Errorf("spanfile: marshal: %w", err)
	}
	return buf, nil
}

// FormatError is input that is not a well-formed span file, at Offset: the
// byte offset of the record at fault (where its length begins). Errors
// that mean the input ended early wrap io.ErrUnexpectedEOF, so a reader
// following a file being written can tell them apart.
type FormatError struct {
	Offset int64
	Msg    string // what was wrong, and what was expected
	Err    error  // the underlying error, or nil
}

// Error implements error: "spanfile: offset N: msg[: err]".
func (e *FormatError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("spanfile: offset %d: %s: %v", e.Offset, e.Msg, e.Err)
	}
	return fmt.Sprintf("spanfile: offset %d: %s", e.Offset, e.Msg)
}

// Unwrap returns Err.
func (e *FormatError) Unwrap() error { return e.Err }

// Reader reads a span file record by record. It is not safe for concurrent
// use.
type Reader struct {
	r       *bufio.Reader
	max     uint64
	off     int64 // bytes consumed: the offset of the next record
	records int
	buf     []byte
	err     error
}

// NewReader returns a Reader of r configured by o (only MaxRecordSize
// matters to it). It reads through its own buffer, so r may be read past
// the record Next last returned.
func NewReader(r io.Reader, o Options) *Reader {
	o = o.withDefaults()
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	return &Reader{r: br, max: uint64(o.MaxRecordSize)}
}

// Offset is the number of bytes consumed: the offset of the next record.
func (r *Reader) Offset() int64 { return r.off }

// Next returns the next record, including Header records: callers switch on
// the record's kind and skip the ones they do not know. It returns io.EOF
// at a clean end (after a whole record, or on empty input), a *FormatError
// for input that is not a span file or is cut short, and the underlying
// reader's error, wrapped with the offset, for a failed read. Once it
// returns an error it returns the same one from then on.
func (r *Reader) Next() (*gpuspansv1.Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
		return nil, err
	}
	return rec, nil
}

func (r *Reader) next() (*gpuspansv1.Record, error) {
	start := r.off
	length, n, err := r.readLength()
	if err != nil {
		return nil, err
	}
	if length > r.max {
		return nil, &FormatError{Offset: start, Msg: fmt.Sprintf("record of %d bytes exceeds the limit of %d", length, r.max)}
	}
	if err := r.readBody(start, int(length)); err != nil {
		return nil, err
	}
	if cost := decodeCost(r.buf, recordDescriptor); cost > maxDecodeFactor*int(length)+decodeSlack {
		return nil, &FormatError{Offset: start, Msg: fmt.Sprintf("record of %d bytes would decode to about %d bytes, over %d times its size: too many empty messages or list elements", length, cost, maxDecodeFactor)}
	}
	rec := new(gpuspansv1.Record)
	if err := proto.Unmarshal(r.buf, rec); err != nil {
		return nil, &FormatError{Offset: start, Msg: fmt.Sprintf("bad record of %d bytes", length), Err: err}
	}
	if h := rec.GetHeader(); h != nil {
		if h.GetSchema() != Schema {
			return nil, &FormatError{Offset: start, Msg: fmt.Sprintf("span file schema %q, want %q", h.GetSchema(), Schema)}
		}
	} else if r.records == 0 {
		return nil, &FormatError{Offset: start, Msg: "not a span file: the first record is not a header"}
	}
	r.off += int64(n) + int64(length)
	r.records++
	return rec, nil
}

// readLength reads a record's uvarint length and how many bytes it took.
// Like protowire it accepts non-minimal encodings.
func (r *Reader) readLength() (uint64, int, error) {
	var v uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := r.r.ReadByte()
		if err != nil {
			switch {
			case err == io.EOF && i == 0:
				return 0, 0, io.EOF
			case err == io.EOF:
				return 0, 0, &FormatError{Offset: r.off, Msg: fmt.Sprintf("truncated record length: have %d bytes of a varint", i), Err: io.ErrUnexpectedEOF}
			}
			return 0, 0, fmt.Errorf("spanfile: offset %d: reading: %w", r.off+int64(i), err)
		}
		if i == binary.MaxVarintLen64-1 && b > 1 {
			break
		}
		v |= uint64(b&0x7f) << (7 * uint(i))
		if b < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, 0, &FormatError{Offset: r.off, Msg: "bad record length: varint overflows 64 bits"}
}

// readBody reads length bytes into r.buf, growing it only as the bytes
// arrive.
func (r *Reader) readBody(start int64, length int) error {
	buf := r.buf[:0]
	for len(buf) < length {
		n := length - len(buf)
		if n > readChunk {
			n = readChunk
		}
		need := len(buf) + n
		if cap(buf) < need {
			c := 2 * cap(buf)
			if c < need {
				c = need
			}
			if c > length {
				c = length
			}
			nb := make([]byte, len(buf), c)
			copy(nb, buf)
			buf = nb
		}
		got, err := io.ReadFull(r.r, buf[len(buf):need])
		buf = buf[:len(buf)+got]
		if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
			r.buf = buf
			return &FormatError{Offset: start, Msg: fmt.Sprintf("truncated record: want %d bytes, have %d", length, len(buf)), Err: io.ErrUnexpectedEOF}
		}
		if err != nil {
			r.buf = buf
			return fmt.Errorf("spanfile: offset %d: reading: %w", start, err)
		}
	}
	r.buf = buf
	return nil
}

// Package summary prints the per-lane and per-kernel latency table (count,
// p50, p99, max) that the demo shows when it exits and that
// `gpuspans trace summary` shows for a span file. Both go through this one
// package, and spans read back from a file are aggregated with the hub's
// own buckets and quantile estimator, so the same spans give the same
// table whichever way they arrive.
package summary

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/durfmt"
)

// Row is one line of the table: the spans of one lane or one kernel on one
// device. A Row is a plain value.
type Row struct {
	Kind   gpuspans.SpanKind
	Device int
	Name   string
	Count  uint64
	P50    time.Duration // estimated within 1.1% (Aggregate.Quantile)
	P99    time.Duration // estimated, likewise
	Max    time.Duration // exact
}

// rowOf summarises one aggregate.
func rowOf(kind gpuspans.SpanKind, a *gpuspans.Aggregate) Row {
	return Row{
		Kind:   kind,
		Device: a.Device,
		Name:   a.Name,
		Count:  a.Count,
		P50:    a.Quantile(0.5),
		P99:    a.Quantile(0.99),
		Max:    a.Max,
	}
}

// FromSnapshot returns the rows of a hub snapshot: its lanes, then its
// kernels, in the snapshot's order, leaving out those with no span so that
// the table matches one built from the same spans' file. Safe from any
// goroutine, given that nothing writes s meanwhile.
func FromSnapshot(s *gpuspans.Snapshot) []Row {
	rows := make([]Row, 0, len(s.Lanes)+len(s.Kernels))
	for i := range s.Lanes {
		if s.Lanes[i].Count > 0 {
			rows = append(rows, rowOf(gpuspans.KindLane, &s.Lanes[i]))
		}
	}
	for i := range s.Kernels {
		if s.Kernels[i].Count > 0 {
			rows = append(rows, rowOf(gpuspans.KindKernel, &s.Kernels[i]))
		}
	}
	return rows
}

// key names one aggregate of a Builder.
type key struct {
	kind   gpuspans.SpanKind
	device int
	name   string
}

// Builder aggregates individual spans (from a span file, say) into the
// hub's Aggregate form, bucket for bucket as the hub does, so that its rows
// match what the hub that landed the spans would report. The zero Builder
// is ready to use; it is not safe for concurrent use.
type Builder struct {
	index map[key]int
	aggs  []gpuspans.Aggregate
	kinds []gpuspans.SpanKind
}

// Add counts one span. Spans of a kind other than lane or kernel are
// ignored: they have no row to go in.
func (b *Builder) Add(s gpuspans.Span) {
	if s.Kind != gpuspans.KindLane && s.Kind != gpuspans.KindKernel {
		return
	}
	if b.index == nil {
		b.index = make(map[key]int)
	}
	k := key{s.Kind, s.Device, s.Name}
	i, ok := b.index[k]
	if !ok {
		i = len(b.aggs)
		b.index[k] = i
		b.aggs = append(b.aggs, gpuspans.Aggregate{Device: s.Device, Name: s.Name})
		b.kinds = append(b.kinds, s.Kind)
	}
	b.aggs[i].Observe(time.Duration(s.DurationNs))
}

// Rows returns the lanes, then the kernels, each in the order their first
// span was added.
func (b *Builder) Rows() []Row {
	rows := make([]Row, 0, len(b.aggs))
	for _, kind := range []gpuspans.SpanKind{gpuspans.KindLane, gpuspans.KindKernel} {
		for i := range b.aggs {
			if b.kinds[i] == kind {
				rows = append(rows, rowOf(kind, &b.aggs[i]))
			}
		}
	}
	return rows
}

// FileStats says what ReadSpanFile found besides the rows; a plain value.
type FileStats struct {
	Spans     uint64 // spans aggregated
	Unknown   uint64 // spans of a kind this version does not know, skipped
	Snapshots int    // snapshot records seen
	// FromSnapshot is set when the file had no spans and the rows come from
	// its last snapshot record instead.
	FromSnapshot bool
}

// ReadSpanFile reads a span file and returns the rows of its spans. A file
// with snapshot records but no spans (a writer that only saves snapshots)
// gets the rows of its last snapshot instead; with spans, snapshots are
// ignored, since concatenated files hold one per source. An error reading
// the file is returned with the rows of what was read before it. Safe
// from any goroutine; it reads only r.
func ReadSpanFile(r io.Reader) ([]Row, FileStats, error) {
	var b Builder
	var st FileStats
	var last *gpuspans.Snapshot
	rd := spanfile.NewReader(r)
	var err error
	for {
		rec, rerr := rd.Next()
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			}
			break
		}
		for _, p := range rec.GetSpans().GetSpans() {
			s, cerr := spanfile.SpanFromProto(p)
			if cerr != nil {
				st.Unknown++
				continue
			}
			b.Add(s)
			st.Spans++
		}
		if p := rec.GetSnapshot(); p != nil {
			st.Snapshots++
			s, _, serr := spanfile.SnapshotFromProto(p)
			if serr != nil {
				err = serr
				break
			}
			last = &s
		}
	}
	if st.Spans == 0 && last != nil {
		st.FromSnapshot = true
		return FromSnapshot(last), st, err
	}
	return b.Rows(), st, err
}

// Write prints rows as an aligned table with a header, or a line saying
// there are none. The device column appears only when the rows span more
// than one device. It returns the first write error. Safe from any
// goroutine; it only reads rows.
func Write(w io.Writer, rows []Row) error {
	if len(rows) == 0 {
		_, err := io.WriteString(w, "no spans landed\n")
		return err
	}
	multi := false
	for _, r := range rows[1:] {
		if r.Device != rows[0].Device {
			multi = true
		}
	}
	header := []string{"kind", "name", "count", "p50", "p99", "max"}
	if multi {
		header = []string{"kind", "name", "gpu", "count", "p50", "p99", "max"}
	}
	table := [][]string{header}
	for _, r := range rows {
		line := []string{r.Kind.String(), r.Name}
		if multi {
			line = append(line, strconv.Itoa(r.Device))
		}
		line = append(line, strconv.FormatUint(r.Count, 10), Duration(r.P50), Duration(r.P99), Duration(r.Max))
		table = append(table, line)
	}
	widths := make([]int, len(header))
	for _, line := range table {
		for i, cell := range line {
			if n := len([]rune(cell)); n > widths[i] {
				widths[i] = n
			}
		}
	}
	var sb strings.Builder
	for _, line := range table {
		for i, cell := range line {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i > 0 {
				sb.WriteString("  ")
			}
			if i < 2 { // names left-aligned, numbers right-aligned
				sb.WriteString(cell)
				if i < len(line)-1 {
					sb.WriteString(pad)
				}
			} else {
				sb.WriteString(pad)
				sb.WriteString(cell)
			}
		}
		sb.WriteByte('\n')
	}
	sb.WriteString("p50 and p99 are estimated within the hub's 2.2%-wide histogram buckets (within 1.1%); max is exact.\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

// Duration formats d with three significant digits in the largest unit
// that keeps it at least 1: "850ns", "12.3us", "1.05ms", "2.50s".
func Duration(d time.Duration) string { return durfmt.Format(d) }

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
	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
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

// rawLimit is how many spans a Builder keeps as raw durations for one name
// before it aggregates them. An Aggregate is about 8 KiB whatever it holds,
// so a file of many names with a span or two each (a hostile one) would
// otherwise need a thousand times its size; raw, a name costs memory in
// proportion to its spans until they are many enough to pay for one.
const rawLimit = 512

// entry is one name of a Builder: raw durations, or once there are more
// than rawLimit of them, their aggregate.
type entry struct {
	key
	raw []int64
	agg *gpuspans.Aggregate
}

// Builder aggregates individual spans (from a span file, say) into the
// hub's Aggregate form, bucket for bucket as the hub does, so that its rows
// match what the hub that landed the spans would report. Its memory grows
// with its spans, never by more than an Aggregate's 8 KiB for a name with
// under rawLimit of them. The zero Builder is ready to use; it is not safe
// for concurrent use.
type Builder struct {
	index   map[key]int
	entries []entry
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
		i = len(b.entries)
		b.index[k] = i
		b.entries = append(b.entries, entry{key: k})
	}
	e := &b.entries[i]
	if e.agg != nil {
		e.agg.Observe(time.Duration(s.DurationNs))
		return
	}
	e.raw = append(e.raw, s.DurationNs)
	if len(e.raw) > rawLimit {
		e.agg = &gpuspans.Aggregate{Device: k.device, Name: k.name}
		for _, d := range e.raw {
			e.agg.Observe(time.Duration(d))
		}
		e.raw = nil
	}
}

// Rows returns the lanes, then the kernels, each in the order their first
// span was added.
func (b *Builder) Rows() []Row {
	rows := make([]Row, 0, len(b.entries))
	var scratch gpuspans.Aggregate // names still raw are aggregated here, one at a time
	for _, kind := range []gpuspans.SpanKind{gpuspans.KindLane, gpuspans.KindKernel} {
		for i := range b.entries {
			e := &b.entries[i]
			if e.kind != kind {
				continue
			}
			a := e.agg
			if a == nil {
				scratch = gpuspans.Aggregate{Device: e.device, Name: e.name}
				for _, d := range e.raw {
					scratch.Observe(time.Duration(d))
				}
				a = &scratch
			}
			rows = append(rows, rowOf(kind, a))
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
	var last []Row // the rows of the last snapshot record
	rd := spanfile.NewReader(r, spanfile.Options{})
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
			rows, serr := snapshotRows(p)
			if serr != nil {
				err = serr
				break
			}
			last = rows
		}
	}
	if st.Spans == 0 && st.Snapshots > 0 && last != nil {
		st.FromSnapshot = true
		return last, st, err
	}
	return b.Rows(), st, err
}

// snapshotRows returns the rows of a snapshot record, as FromSnapshot
// would of its conversion, reading its aggregates one at a time into one
// Aggregate: a record of many small aggregates costs its rows, not 8 KiB
// each.
func snapshotRows(p *gpuspansv1.Snapshot) ([]Row, error) {
	// The rest of the record is checked as SnapshotFromProto checks it.
	lanes, kernels := p.Lanes, p.Kernels
	p.Lanes, p.Kernels = nil, nil
	_, _, err := spanfile.SnapshotFromProto(p)
	p.Lanes, p.Kernels = lanes, kernels
	if err != nil {
		return nil, err
	}
	rows := []Row{}
	var a gpuspans.Aggregate
	for _, g := range []struct {
		kind gpuspans.SpanKind
		aggs []*gpuspansv1.Aggregate
	}{{gpuspans.KindLane, lanes}, {gpuspans.KindKernel, kernels}} {
		for _, pa := range g.aggs {
			if err := spanfile.AggregateFromProto(pa, &a); err != nil {
				return nil, err
			}
			if a.Count > 0 {
				rows = append(rows, rowOf(g.kind, &a))
			}
		}
	}
	return rows, nil
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
	var sb strings.Builder
	align(&sb, table, 2)
	sb.WriteString("p50 and p99 are estimated within the hub's 2.2%-wide histogram buckets (within 1.1%); max is exact.\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

// align writes table with its columns aligned: the first left
// left-aligned (names), the rest right-aligned (numbers).
func align(sb *strings.Builder, table [][]string, left int) {
	widths := make([]int, len(table[0]))
	for _, line := range table {
		for i, cell := range line {
			if n := len([]rune(cell)); n > widths[i] {
				widths[i] = n
			}
		}
	}
	for _, line := range table {
		for i, cell := range line {
			pad := strings.Repeat(" ", widths[i]-len([]rune(cell)))
			if i > 0 {
				sb.WriteString("  ")
			}
			if i < left {
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
}

// WriteGPUTime prints what kernel windows measured of each lane, as the
// engine serves it (gpuspans.LaneGPUTime): the busy ratio over the recent
// settled windows, and per span of the settled windows the served time,
// the windows' cost, busy and the served idle by cause; nothing before a
// window was analysed. It returns the first write error. Safe from any
// goroutine; it only reads g.
func WriteGPUTime(w io.Writer, g *gpuspans.GPUTime) error {
	if g.Windows == 0 || len(g.Lanes) == 0 {
		return nil
	}
	table := [][]string{{"gpu", "lane", "busy", "served", "window cost", "busy/span", "idle", "host", "launch", "copy", "wait", "other", "unsettled"}}
	for i := range g.Lanes {
		l := &g.Lanes[i]
		n := time.Duration(l.ServedSpans)
		per := func(d time.Duration) string {
			if n == 0 {
				return "-"
			}
			return Duration(d / n)
		}
		ratio := "-"
		if l.RecentServed > 0 {
			ratio = strconv.FormatFloat(100*l.BusyRatio(), 'f', 1, 64) + "%"
		}
		c := &l.Causes
		table = append(table, []string{strconv.Itoa(l.Device), l.Lane, ratio, per(l.Served), per(l.WindowCost), per(l.ServedBusy),
			per(l.Served - l.ServedBusy), per(c.Host), per(c.Launch), per(c.Copy), per(c.Wait), per(c.Other), strconv.FormatUint(l.Unsettled, 10)})
	}
	var sb strings.Builder
	sb.WriteString("GPU time from " + strconv.FormatUint(g.Windows, 10) + " kernel windows, per span as the engine serves it (the lane's time outside windows):\n")
	align(&sb, table, 2)
	sb.WriteString("busy is over the latest 16 settled windows; window cost is what a window added to the span; idle splits the served span's idle by cause.\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

// Duration formats d with three significant digits in the largest unit
// that keeps it at least 1: "850ns", "12.3us", "1.05ms", "2.50s".
func Duration(d time.Duration) string { return durfmt.Format(d) }

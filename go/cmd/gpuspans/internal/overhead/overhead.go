// Package overhead is the machine report of `gpuspans bench`: what
// gpuspans costs on this machine, now. It times the disabled paths (level
// below Kernel: what an always-on hub costs on every call), an enabled span
// and a harvest on backends that do no GPU work (the hub's own share), and,
// when a CUDA driver and device are there, the same on real CUDA events
// next to the floor under the hub: the binding's two event records with no
// hub at all (the raw driver call is out of reach: the cuda package's Kit
// does not expose a bare cuEventRecord; cuda/bench/driver_bench measures
// that one).
//
// The loops are package loop's, which the hub's `go test -bench`
// micro-benchmarks time too; this package times them itself (harness.go)
// rather than through package testing, so the command links no test
// framework and touches no flags. Each Row says what its loop does, so a
// number is never read for more than it measures.
package overhead

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/loop"
)

// Row is one measurement; a plain value.
type Row struct {
	Name   string  // short name: "disabled/kernel-span"
	What   string  // what one op is
	NsOp   float64 // ns per op
	Allocs int64   // allocations per op
	Spans  int     // spans per op, for harvest rows (0 otherwise)
	Ref    bool    // the row ratios are relative to
}

// Options configures Run; a plain value.
type Options struct {
	// Benchtime is how long each per-call row runs, at least (0: 500ms).
	Benchtime time.Duration
	// HarvestSpans is how many spans one measured harvest lands (0: 4096).
	HarvestSpans int
	// HarvestRounds is how many harvests are timed per backend (0: 50);
	// filling the ring between them is not timed.
	HarvestRounds int
	// Backend selects the GPU rows: "auto" adds them when a CUDA driver and
	// device are there, "cuda" requires them, "none" (or "sim") skips them.
	Backend string
	Device  int
	// Progress, when set, is told the name of each row before it runs.
	Progress func(name string)
	// Logf, when set, gets the measured hubs' log lines (a pool that
	// failed, say); nil discards them.
	Logf func(format string, args ...interface{})
}

// row is one row to measure: its run, timed for Benchtime, or, for a
// harvest row (spans > 0), for HarvestRounds ops.
type row struct {
	name, what string
	run        runFunc
	spans      int
	ref        bool // the reference, unless a later row is
}

// Run measures every row and returns them in print order. GPU rows come
// last; note says why they are missing when they are. Rows run one after
// another; concurrent Runs would time each other.
func Run(o Options) (rows []Row, note string, err error) {
	if err := o.defaults(); err != nil {
		return nil, "", err
	}
	rows, err = o.measure(rows, o.cpuRows())
	if err != nil || o.Backend == "none" || o.Backend == "sim" {
		return markRef(rows), "GPU rows skipped (--backend=" + o.Backend + ")", err
	}
	gpu, err := openGPU(o.Device)
	if err != nil {
		if o.Backend == "cuda" {
			return markRef(rows), "", err
		}
		return markRef(rows), fmt.Sprintf("no GPU rows: %v", err), nil
	}
	defer gpu.close()
	rows, err = o.measure(rows, o.gpuRows(gpu))
	return markRef(rows), "", err
}

func (o *Options) defaults() error {
	if o.Benchtime <= 0 {
		o.Benchtime = 500 * time.Millisecond
	}
	if o.HarvestSpans <= 0 {
		o.HarvestSpans = gpuspans.DefaultSlots
	}
	if o.HarvestRounds <= 0 {
		o.HarvestRounds = 50
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...interface{}) {}
	}
	switch o.Backend {
	case "":
		o.Backend = "auto"
	case "auto", "cuda", "none", "sim":
	default:
		return fmt.Errorf("overhead: unknown backend %q: want auto, cuda or none", o.Backend)
	}
	return nil
}

// measure appends the figures of todo to rows, in order, and stops at the
// first row that fails.
func (o *Options) measure(rows []Row, todo []row) ([]Row, error) {
	for _, r := range todo {
		o.Progress(r.name)
		var res result
		var err error
		if r.spans > 0 {
			res, err = once(r.run, o.HarvestRounds)
		} else {
			res, err = measure(r.run, o.Benchtime)
		}
		if err != nil {
			return rows, fmt.Errorf("overhead: %s: %w", r.name, err)
		}
		rows = append(rows, Row{Name: r.name, What: r.what, NsOp: res.nsOp, Allocs: res.allocs, Spans: r.spans, Ref: r.ref})
	}
	return rows, nil
}

// markRef keeps the last reference row as the one: the CUDA floor when
// there is a GPU, else the hub's own cost.
func markRef(rows []Row) []Row {
	last := -1
	for i := range rows {
		if rows[i].Ref {
			last = i
		}
		rows[i].Ref = false
	}
	if last >= 0 {
		rows[last].Ref = true
	}
	return rows
}

// cpuRows are the rows every machine has: the simulated GPU and a backend
// that does nothing.
func (o *Options) cpuRows() []row {
	g := sim.New(sim.Options{})
	s := g.NewStream()
	simOpen := g.Opener()
	nop := sim.NopOpener
	return []row{
		{name: "disabled/kernel-span", what: "KernelBegin+KernelEnd at level step (kernel spans off): the call pair an instrumented launch pays while disarmed",
			run: o.onHub(gpuspans.LevelStep, simOpen, s, loop.KernelSpans)},
		{name: "disabled/lane-span", what: "LaneBegin+LaneEnd at level off",
			run: o.onHub(gpuspans.LevelOff, simOpen, s, loop.LaneSpans)},
		{name: "disabled/begin-step", what: "BeginStep at level off",
			run: o.onHub(gpuspans.LevelOff, nil, 0, loop.BeginSteps)},
		{name: "enabled/kernel-span/nop", what: "a kernel span on an armed step, backend that does nothing: the hub's own cost (harvest amortised)",
			run: o.onHub(gpuspans.LevelKernel, nop, 1, loop.HarvestedKernelSpans), ref: true},
		{name: "enabled/kernel-span/sim", what: "a kernel span on an armed step, simulated GPU (its mutex and clock reads included)",
			run: o.onHub(gpuspans.LevelKernel, simOpen, s, loop.HarvestedKernelSpans)},
		{name: "enabled/lane-span/sim", what: "a lane span, simulated GPU",
			run: o.onHub(gpuspans.LevelKernel, simOpen, s, loop.HarvestedLaneSpans)},
		{name: "harvest/nop", what: fmt.Sprintf("one Harvest landing %d spans, backend that does nothing", o.HarvestSpans),
			run: o.harvests(nop, 1, nil), spans: o.HarvestSpans},
		{name: "harvest/sim", what: fmt.Sprintf("one Harvest landing %d spans, simulated GPU", o.HarvestSpans),
			run: o.harvests(g.Opener(), s, simSettle), spans: o.HarvestSpans},
	}
}

// gpuRows are the rows on real CUDA events.
func (o *Options) gpuRows(gpu *gpuRig) []row {
	return []row{
		{name: "enabled/kernel-span/cuda", what: "a kernel span on an armed step, real CUDA events on an idle stream (two cuEventRecord, harvest amortised)",
			run: o.onHub(gpuspans.LevelKernel, cuda.Opener(o.Device), gpu.stream, loop.HarvestedKernelSpans)},
		{name: "floor/record-pair/cuda", what: "the floor under the hub: Pool.RecordBegin+RecordEnd through the Go binding and the C core (cgo, capture check, two cuEventRecord), no hub; the Kit offers no bare cuEventRecord, so this is not the raw driver call",
			run: gpu.floor, ref: true},
		{name: "reference/empty-launch/cuda", what: "for scale: launching the kit's empty kernel (what is being timed)",
			run: gpu.empty},
		{name: "harvest/cuda", what: fmt.Sprintf("one Harvest landing %d spans of real CUDA events", o.HarvestSpans),
			run: o.harvests(cuda.Opener(o.Device), gpu.stream, gpu.settle), spans: o.HarvestSpans},
	}
}

// onHub is a row that times f on a hub set up, untimed, for each run: its
// pool open (when open is not nil) and its step armed, then set to level.
func (o *Options) onHub(level gpuspans.Level, open backend.Opener, stream backend.Stream, f loop.Func) runFunc {
	return func(sw *stopwatch, n int) error {
		h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Logf: o.Logf})
		if err == nil && open != nil {
			err = h.Install(0, stream, open)
		}
		if err != nil {
			return err
		}
		defer retire(h)
		h.BeginStep() // opens the pool and arms the step
		if err := h.SetLevel(level); err != nil {
			return err
		}
		sw.StartTimer()
		f(h, stream, n)
		sw.StopTimer()
		return nil
	}
}

// harvests is a row that times harvests each landing HarvestSpans spans
// (loop.Harvests); settle, when not nil, lets the events complete.
func (o *Options) harvests(open backend.Opener, stream backend.Stream, settle func()) runFunc {
	return func(sw *stopwatch, n int) error {
		h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Slots: o.HarvestSpans, Logf: o.Logf})
		if err == nil {
			err = h.Install(0, stream, open)
		}
		if err != nil {
			return err
		}
		defer retire(h)
		h.BeginStep()
		sw.StartTimer()
		return loop.Harvests(sw, h, stream, n, o.HarvestSpans, settle)
	}
}

// retire uninstalls the hub's recorder and lands its last spans, so its
// pool closes; real events may take a moment to complete.
func retire(h *gpuspans.Hub) {
	h.Uninstall(0)
	for i := 0; i < 100 && h.Snapshot().Counters.InFlight > 0; i++ {
		time.Sleep(time.Millisecond)
		h.Harvest()
	}
	h.Harvest()
}

// simSettle lets the simulated GPU's events complete: the simulator
// completes an event once the host clock has passed it.
func simSettle() { time.Sleep(time.Millisecond) }

// Write prints rows as a table: ns/op, allocations, ns per span for
// harvests, and each row's ratio to the reference row, with what each row
// measures below. Safe from any goroutine; it only reads rows.
func Write(w io.Writer, rows []Row, note string) error {
	var ref *Row
	for i := range rows {
		if rows[i].Ref {
			ref = &rows[i]
		}
	}
	var sb strings.Builder
	refName := "-"
	if ref != nil {
		refName = ref.Name
	}
	fmt.Fprintf(&sb, "%-30s %12s %10s %12s %10s\n", "row", "ns/op", "allocs/op", "ns/span", "x "+refName)
	for _, r := range rows {
		perSpan := "-"
		if r.Spans > 0 {
			perSpan = fmt.Sprintf("%.1f", r.NsOp/float64(r.Spans))
		}
		ratio := "-"
		if ref != nil && ref.NsOp > 0 {
			ratio = fmt.Sprintf("%.2f", r.NsOp/ref.NsOp)
		}
		fmt.Fprintf(&sb, "%-30s %12.1f %10d %12s %10s\n", r.Name, r.NsOp, r.Allocs, perSpan, ratio)
	}
	sb.WriteString("\nwhat each row measures (one op):\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "  %-28s %s\n", r.Name, r.What)
	}
	if ref != nil {
		fmt.Fprintf(&sb, "ratios are ns/op over %s's ns/op.\n", ref.Name)
	}
	if note != "" {
		fmt.Fprintf(&sb, "%s\n", note)
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

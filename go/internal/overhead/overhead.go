// Package overhead measures what gpuspans costs on this machine, with
// testing.Benchmark, for `gpuspans bench`: the disabled paths (level below
// Kernel: what an always-on hub costs on every call), an enabled span and a
// harvest on backends that do no GPU work (the hub's own share), and, when
// a CUDA driver and device are there, the same on real CUDA events next to
// the floor under the hub: the binding's two event records with no hub at
// all (the raw driver call is out of reach: the cuda package's Kit does not
// expose a bare cuEventRecord; cuda/bench/driver_bench measures that one).
//
// Each Row says what its loop does, so a number is never read for more
// than it measures. Run is not safe for concurrent use: testing.Benchmark
// reads the process-wide benchtime setting, which Run changes.
package overhead

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/sim"
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
	// Benchtime is how long each per-call benchmark runs (0: 500ms).
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
}

// harvestEvery bounds the ring's fill in the span benchmarks: a harvest
// every this many spans keeps slots free, and its cost is in the figure,
// amortised, as it is in a serving loop.
const harvestEvery = 256

var initOnce sync.Once

// setBenchtime sets testing's -test.benchtime, which testing.Benchmark
// reads; testing.Init registers it on the command line flag set.
func setBenchtime(v string) error {
	initOnce.Do(testing.Init)
	return flag.CommandLine.Set("test.benchtime", v)
}

// Run measures every row and returns them in print order. GPU rows come
// last; note says why they are missing when they are. Not safe for
// concurrent use: see the package comment.
func Run(o Options) (rows []Row, note string, err error) {
	if o.Benchtime <= 0 {
		o.Benchtime = 500 * time.Millisecond
	}
	if o.HarvestSpans <= 0 {
		o.HarvestSpans = gpuspans.DefaultSlots
	}
	if o.HarvestRounds <= 0 {
		o.HarvestRounds = 50
	}
	switch o.Backend {
	case "":
		o.Backend = "auto"
	case "auto", "cuda", "none", "sim":
	default:
		return nil, "", fmt.Errorf("overhead: unknown backend %q: want auto, cuda or none", o.Backend)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	perCall := func(name, what string, f func(b *testing.B)) error {
		progress(name)
		if err := setBenchtime(o.Benchtime.String()); err != nil {
			return err
		}
		r := testing.Benchmark(f)
		if r.N == 0 {
			return fmt.Errorf("overhead: %s failed", name)
		}
		rows = append(rows, Row{Name: name, What: what, NsOp: float64(r.T.Nanoseconds()) / float64(r.N), Allocs: r.AllocsPerOp()})
		return nil
	}
	harvest := func(name, what string, open backend.Opener, stream backend.Stream, settle func()) error {
		progress(name)
		if err := setBenchtime(fmt.Sprintf("%dx", o.HarvestRounds)); err != nil {
			return err
		}
		var failed error
		r := testing.Benchmark(func(b *testing.B) { failed = benchHarvest(b, open, stream, o.HarvestSpans, settle) })
		if failed != nil {
			return fmt.Errorf("overhead: %s: %w", name, failed)
		}
		rows = append(rows, Row{Name: name, What: what, NsOp: float64(r.T.Nanoseconds()) / float64(r.N), Allocs: r.AllocsPerOp(), Spans: o.HarvestSpans})
		return nil
	}

	g := sim.New(sim.Options{})
	simStream := g.NewStream()
	steps := []struct {
		name, what string
		f          func(*testing.B)
	}{
		{"disabled/kernel-span", "KernelBegin+KernelEnd at level step (kernel spans off): the call pair an instrumented launch pays while disarmed",
			benchSpan(gpuspans.LevelStep, g.Opener(gpuspans.DefaultSlots), simStream, false)},
		{"disabled/lane-span", "LaneBegin+LaneEnd at level off",
			benchSpan(gpuspans.LevelOff, g.Opener(gpuspans.DefaultSlots), simStream, true)},
		{"disabled/begin-step", "BeginStep at level off", benchBeginStep},
		{"enabled/kernel-span/nop", "a kernel span on an armed step, backend that does nothing: the hub's own cost (harvest amortised)",
			benchSpan(gpuspans.LevelKernel, nopOpener, 1, false)},
		{"enabled/kernel-span/sim", "a kernel span on an armed step, simulated GPU (its mutex and clock reads included)",
			benchSpan(gpuspans.LevelKernel, g.Opener(gpuspans.DefaultSlots), simStream, false)},
		{"enabled/lane-span/sim", "a lane span, simulated GPU",
			benchSpan(gpuspans.LevelKernel, g.Opener(gpuspans.DefaultSlots), simStream, true)},
	}
	for _, s := range steps {
		if err := perCall(s.name, s.what, s.f); err != nil {
			return rows, "", err
		}
	}
	if err := harvest("harvest/nop", fmt.Sprintf("one Harvest landing %d spans, backend that does nothing", o.HarvestSpans), nopOpener, 1, nil); err != nil {
		return rows, "", err
	}
	if err := harvest("harvest/sim", fmt.Sprintf("one Harvest landing %d spans, simulated GPU", o.HarvestSpans), g.Opener(o.HarvestSpans), simStream, simSettle); err != nil {
		return rows, "", err
	}

	if o.Backend == "none" || o.Backend == "sim" {
		rows[3].Ref = true
		return rows, "GPU rows skipped (--backend=" + o.Backend + ")", nil
	}
	gpu, err := openGPU(o.Device)
	if err != nil {
		if o.Backend == "cuda" {
			return rows, "", err
		}
		rows[3].Ref = true
		return rows, fmt.Sprintf("no GPU rows: %v", err), nil
	}
	defer gpu.close()
	opener := cuda.Opener(o.Device, gpuspans.DefaultSlots)
	if err := perCall("enabled/kernel-span/cuda", "a kernel span on an armed step, real CUDA events on an idle stream (two cuEventRecord, harvest amortised)",
		benchSpan(gpuspans.LevelKernel, opener, gpu.stream, false)); err != nil {
		return rows, "", err
	}
	if err := perCall("floor/record-pair/cuda", "the floor under the hub: Pool.RecordBegin+RecordEnd through the Go binding and the C core (cgo, capture check, two cuEventRecord), no hub; the Kit offers no bare cuEventRecord, so this is not the raw driver call",
		gpu.benchFloor); err != nil {
		return rows, "", err
	}
	rows[len(rows)-1].Ref = true
	if err := perCall("reference/empty-launch/cuda", "for scale: launching the kit's empty kernel (what is being timed)",
		gpu.benchEmpty); err != nil {
		return rows, "", err
	}
	if err := harvest("harvest/cuda", fmt.Sprintf("one Harvest landing %d spans of real CUDA events", o.HarvestSpans), cuda.Opener(o.Device, o.HarvestSpans), gpu.stream, gpu.settle); err != nil {
		return rows, "", err
	}
	return rows, "", nil
}

// benchSpan times one span per op, a lane span or a kernel span, on a hub
// at level. When spans are recorded it harvests every harvestEvery ops;
// below Kernel there is nothing to harvest, and the disabled rows time the
// bare calls. Each variant is a loop of its own in a function of its own:
// a branch, a defer or a captured variable in the loop's function costs a
// measurable part of a nanosecond path.
func benchSpan(level gpuspans.Level, open backend.Opener, stream backend.Stream, lane bool) func(*testing.B) {
	loop := kernelLoop
	switch {
	case level != gpuspans.LevelKernel && lane:
		loop = laneLoop
	case level == gpuspans.LevelKernel && lane:
		loop = laneHarvestLoop
	case level == gpuspans.LevelKernel:
		loop = kernelHarvestLoop
	}
	return func(b *testing.B) {
		h := spanHub(b, level, open, stream)
		if h == nil {
			return
		}
		b.Cleanup(func() { retire(h) })
		b.ReportAllocs()
		b.ResetTimer()
		loop(b, h, stream)
	}
}

func kernelLoop(b *testing.B, h *gpuspans.Hub, stream backend.Stream) {
	for i := 0; i < b.N; i++ {
		h.KernelEnd(h.KernelBegin(1, stream))
	}
}

func laneLoop(b *testing.B, h *gpuspans.Hub, _ backend.Stream) {
	for i := 0; i < b.N; i++ {
		h.LaneBegin(0)
		h.LaneEnd(0)
	}
}

func kernelHarvestLoop(b *testing.B, h *gpuspans.Hub, stream backend.Stream) {
	for i := 0; i < b.N; i++ {
		h.KernelEnd(h.KernelBegin(1, stream))
		if i%harvestEvery == harvestEvery-1 {
			h.Harvest()
		}
	}
}

func laneHarvestLoop(b *testing.B, h *gpuspans.Hub, _ backend.Stream) {
	for i := 0; i < b.N; i++ {
		h.LaneBegin(0)
		h.LaneEnd(0)
		if i%harvestEvery == harvestEvery-1 {
			h.Harvest()
		}
	}
}

// spanHub returns a hub whose pool is open and whose step is armed, then
// set to level; nil (with b failed) if it cannot be made.
func spanHub(b *testing.B, level gpuspans.Level, open backend.Opener, stream backend.Stream) *gpuspans.Hub {
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Logf: b.Logf})
	if err == nil {
		err = h.Install(0, stream, open)
	}
	if err == nil {
		h.BeginStep() // opens the pool and arms the step
		err = h.SetLevel(level)
	}
	if err != nil {
		b.Error(err)
		return nil
	}
	return h
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

func benchBeginStep(b *testing.B) {
	h, err := gpuspans.New(gpuspans.Options{Logf: b.Logf})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.BeginStep()
	}
}

// simSettle lets the simulated GPU's events complete: the simulator
// completes an event once the host clock has passed it.
func simSettle() { time.Sleep(time.Millisecond) }

// benchHarvest times harvests that each land spans spans; filling the ring
// and letting its events complete (settle, when not nil) is not timed. It
// returns an error rather than failing b, so the caller can say which row
// broke.
func benchHarvest(b *testing.B, open backend.Opener, stream backend.Stream, spans int, settle func()) error {
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Slots: spans, Logf: b.Logf})
	if err != nil {
		return err
	}
	if err := h.Install(0, stream, open); err != nil {
		return err
	}
	h.BeginStep()
	defer func() {
		h.Uninstall(0)
		h.Harvest()
	}()
	var landed uint64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for j := 0; j < spans; j++ {
			h.KernelEnd(h.KernelBegin(1, stream))
		}
		// Events complete asynchronously: let them, untimed, so the timed
		// harvest lands them all rather than finding some in flight.
		if settle != nil {
			settle()
		}
		before := h.Snapshot().Counters.Landed
		b.StartTimer()
		h.Harvest()
		b.StopTimer()
		after := h.Snapshot().Counters.Landed
		landed += after - before
		b.StartTimer()
	}
	b.StopTimer()
	if want := uint64(b.N * spans); landed != want {
		return fmt.Errorf("landed %d spans of %d: the measurement would not be of full harvests", landed, want)
	}
	return nil
}

// nopOpener opens a pool that does nothing and completes every span at
// once: what is left is the hub's own cost.
func nopOpener() (backend.Pool, error) { return nopPool{}, nil }

type nopPool struct{}

func (nopPool) Device() int                            { return 0 }
func (nopPool) Slots() int                             { return gpuspans.MaxSlots }
func (nopPool) Capturing(backend.Stream) (bool, error) { return false, nil }
func (nopPool) RecordBegin(int, backend.Stream) error  { return nil }
func (nopPool) RecordEnd(int, backend.Stream) error    { return nil }
func (nopPool) Close() error                           { return nil }
func (nopPool) Harvest(items []backend.HarvestItem) error {
	for i := range items {
		items[i].State, items[i].DurationNs = backend.Done, 1000
	}
	return nil
}

// gpuRig is what the GPU rows share: the kit, for a stream and the empty
// kernel, and a pool of the driver floor's own.
type gpuRig struct {
	kit    *cudatest.Kit
	stream backend.Stream
	pool   *cuda.Pool
}

func openGPU(device int) (*gpuRig, error) {
	if err := cuda.Load(); err != nil {
		return nil, err
	}
	kit, err := cudatest.NewKit(device)
	if err != nil {
		return nil, err
	}
	stream, err := kit.NewStream()
	if err != nil {
		_ = kit.Close()
		return nil, err
	}
	pool, err := cuda.Open(device, gpuspans.DefaultSlots)
	if err != nil {
		_ = kit.DestroyStream(stream)
		_ = kit.Close()
		return nil, err
	}
	return &gpuRig{kit: kit, stream: stream, pool: pool}, nil
}

func (g *gpuRig) benchFloor(b *testing.B) {
	slots := g.pool.Slots()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		slot := i % slots
		if err := g.pool.RecordBegin(slot, g.stream); err != nil {
			b.Fatal(err)
		}
		if err := g.pool.RecordEnd(slot, g.stream); err != nil {
			b.Fatal(err)
		}
		if slot == slots-1 {
			// The slots are reused: let the earlier records complete,
			// untimed, so a record never races its own slot's query.
			b.StopTimer()
			_ = g.kit.Sync(g.stream)
			b.StartTimer()
		}
	}
	b.StopTimer()
	_ = g.kit.Sync(g.stream)
}

func (g *gpuRig) benchEmpty(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := g.kit.Empty(g.stream); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 1023 {
			b.StopTimer() // keep the launch queue from filling, which would time queue waits
			_ = g.kit.Sync(g.stream)
			b.StartTimer()
		}
	}
	b.StopTimer()
	_ = g.kit.Sync(g.stream)
}

// settle waits for the rig's stream, so every event recorded on it is
// complete.
func (g *gpuRig) settle() { _ = g.kit.Sync(g.stream) }

func (g *gpuRig) close() {
	_ = g.kit.Sync(g.stream)
	for i := 0; i < 100; i++ {
		if err := g.pool.Close(); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	_ = g.kit.DestroyStream(g.stream)
	_ = g.kit.Close()
}

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

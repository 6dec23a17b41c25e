package main

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cmd/gpuspans/internal/overhead"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

const benchDescription = `Measures what gpuspans costs on this machine (the machine report; the hub's
CPU micro-benchmarks are go test -bench in go/gpuspans, on the same loops):
  - the disabled paths: span calls below level kernel, BeginStep at level off
    (what an always-on hub costs an engine that is not recording);
  - an enabled kernel span and lane span, on a backend that does nothing (the
    hub's own cost) and on the simulated GPU;
  - one harvest landing N spans;
  - with a CUDA driver and device: a kernel span on real CUDA events, the floor
    under it (the binding's two event records without the hub), an empty
    kernel launch for scale, and a harvest of real events.
Ratios are to the CUDA floor when there is a GPU, else to the hub's own cost.
The figures are this machine's, at this moment: run it where you serve.
`

func benchCmd(args []string, stdout, stderr io.Writer) int {
	var o overhead.Options
	fs := newFlagSet("bench", "gpuspans bench [flags]", benchDescription)
	fs.DurationVar(&o.Benchtime, "benchtime", 500e6, "how long each per-call row runs")
	fs.IntVar(&o.HarvestSpans, "harvest_spans", 4096, "spans landed by each measured harvest")
	fs.IntVar(&o.HarvestRounds, "harvest_rounds", 50, "harvests timed per backend")
	fs.StringVar(&o.Backend, "backend", "auto", "GPU rows: auto (when a CUDA driver and device are there), cuda (required) or none")
	fs.IntVar(&o.Device, "device", 0, "GPU ordinal for the GPU rows")
	pos, code, ok := parseFlags(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "bench: unexpected argument %q (see %s bench --help)\n", pos[0], cmdName)
		return 2
	}
	if err := checkBenchFlags(&o); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	o.Progress = func(name string) { fmt.Fprintf(stderr, "measuring %s\n", name) }
	o.Logf = func(format string, args ...interface{}) { fmt.Fprintf(stderr, format+"\n", args...) }
	fmt.Fprintf(stdout, "gpuspans bench: %s %s/%s, %d CPUs, GOMAXPROCS %d\n\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0))
	rows, note, err := overhead.Run(o)
	if werr := overhead.Write(stdout, rows, note); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpuspans bench: %v\n", err)
		return 1
	}
	return 0
}

// checkBenchFlags refuses what overhead.Run would silently replace by its
// defaults (zero and negative values) or could not run (a harvest larger
// than a ring).
func checkBenchFlags(o *overhead.Options) error {
	switch {
	case o.Benchtime <= 0 || o.Benchtime > time.Hour:
		return fmt.Errorf("--benchtime %v: want more than 0, at most 1h", o.Benchtime)
	case o.HarvestSpans < 1 || o.HarvestSpans > backend.MaxSlots:
		return fmt.Errorf("--harvest_spans %d: want 1..%d", o.HarvestSpans, backend.MaxSlots)
	case o.HarvestRounds < 1 || o.HarvestRounds > 1_000_000:
		return fmt.Errorf("--harvest_rounds %d: want 1..1000000", o.HarvestRounds)
	case o.Device < 0 || o.Device >= gpuspans.MaxDevices:
		return fmt.Errorf("--device %d: want 0..%d", o.Device, gpuspans.MaxDevices-1)
	}
	return nil
}

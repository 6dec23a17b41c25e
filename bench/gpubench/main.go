// Command gpubench measures gpuspans through its Go API on a GPU: host
// overhead per span against launches alone, the cost of the disabled
// levels, accuracy against a kernel's own %globaltimer, safety around CUDA
// graph capture, several GPUs in one process, the span rate before drops,
// and harvests that never wait. bench/run.sh runs each section in its own
// process (a crash or a sticky CUDA error in one cannot spoil another) and
// merges the JSON each writes, go-<section>.json, with the C floor from
// driver_bench and the peers from peers.py. See bench/README.md.
//
// With -fake every section runs against the fake driver compiled into the
// core, on any machine: the numbers mean nothing, the paths are the GPU
// run's.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
)

// section is one independent measurement. run returns its result (any
// JSON-encodable value), or a reason it was skipped, or an error.
type section struct {
	name string
	what string
	run  func(e *env) (result interface{}, skipped string, err error)
}

var sections = []section{
	{"overhead", "host ns per span: launches alone, cuda.Pool directly, the full hub path", runOverhead},
	{"disabled", "a serving loop at LevelOff and LevelStep against no telemetry calls", runDisabled},
	{"accuracy", "span length against the kernel's own %globaltimer, spin 0 to 10 ms", runAccuracy},
	{"safety", "graph capture in the serving loop: invalidated captures, spans inside captures", runSafety},
	{"multigpu", "one hub, a pool per GPU, spans carry the right device", runMultiGPU},
	{"ceiling", "span rate with the default pool until slot_busy drops start", runCeiling},
	{"harvestwait", "BeginStep while a 50 ms kernel runs with spans queued behind it", runHarvestWait},
	{"harvest", "landing in Go against the C core, BeginStep with a background harvester, a free-running loop", runHarvest},
	{"tracer", "kernel spans from CUPTI against event pairs: host time per kernel, unarmed steps, launches after CUPTI, accuracy", runTracer},
}

// env is what every section gets.
type env struct {
	fake     bool
	quick    bool
	deadline time.Time // past it a section stops early and says so
	fakeSt   *fakeState
}

// setup loads the driver (the fake one with -fake, reset for each
// section) and returns it ready.
func (e *env) setup() error {
	if e.fake {
		fd := cudatest.UseFakeDriver()
		fd.SetDeviceCount(2)
		// Pools calibrate their event offset: 0, as the fake's spans have none.
		fd.Kernels(0)
		e.fakeSt = newFakeState(fd)
	}
	return cuda.Load()
}

// newGPU returns the device's kit, or a fake device.
func (e *env) newGPU(device int) (gpu, error) {
	if e.fake {
		return fakeGPU{e.fakeSt}, nil
	}
	k, err := cudakit.NewKit(device)
	if err != nil {
		return nil, err
	}
	return kitGPU{k}, nil
}

// late reports whether the section's time is up.
func (e *env) late() bool { return time.Now().After(e.deadline) }

// scale picks the real figure, or the quick one for tests.
func (e *env) scale(real, quick int) int {
	if e.quick {
		return quick
	}
	return real
}

// output is one section's JSON file.
type output struct {
	Tool      string      `json:"tool"`
	Section   string      `json:"section"`
	What      string      `json:"what"`
	Command   string      `json:"command"`
	Go        string      `json:"go"`
	CPUs      int         `json:"cpus"`
	Fake      bool        `json:"fake"`
	Quick     bool        `json:"quick"`
	OK        bool        `json:"ok"`
	Error     string      `json:"error,omitempty"`
	Skipped   string      `json:"skipped,omitempty"`
	ElapsedS  float64     `json:"elapsed_s"`
	Result    interface{} `json:"result,omitempty"`
	Timestamp string      `json:"timestamp"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpubench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, s := range sections {
		names = append(names, s.name)
	}
	which := fs.String("section", "all", "comma-separated sections ("+strings.Join(names, ", ")+") or all")
	outDir := fs.String("out", ".", "directory for go-<section>.json")
	fake := fs.Bool("fake", false, "use the fake driver compiled into the core (no GPU; numbers mean nothing)")
	quick := fs.Bool("quick", false, "tiny sizes, for tests")
	budget := fs.Duration("budget", 60*time.Second, "per section: past it a section stops early and marks its result truncated")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the sections run to this file")
	fs.BoolVar(&noStartTimes, "no-start-times", false, "hubs skip placing spans on the host clock (gpuspans.StartTimesNever)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gpubench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var todo []section
	for _, name := range strings.Split(*which, ",") {
		found := false
		for _, s := range sections {
			if name == "all" || s.name == name {
				todo = append(todo, s)
				found = true
			}
		}
		if !found {
			fmt.Fprintf(stderr, "gpubench: unknown section %q (want %s or all)\n", name, strings.Join(names, ", "))
			return 2
		}
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		fmt.Fprintf(stderr, "gpubench: %v\n", err)
		return 1
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "gpubench: -cpuprofile: %v\n", err)
			return 1
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	command := "gpubench " + strings.Join(args, " ")
	rc := 0
	for _, s := range todo {
		e := &env{fake: *fake, quick: *quick, deadline: time.Now().Add(*budget)}
		o := runSection(s, e)
		o.Command = command
		path := filepath.Join(*outDir, "go-"+s.name+".json")
		if err := writeJSON(path, o); err != nil {
			fmt.Fprintf(stderr, "gpubench: %v\n", err)
			rc = 1
		}
		status := "ok"
		switch {
		case !o.OK:
			status = "FAILED: " + o.Error
			rc = 1
		case o.Skipped != "":
			status = "skipped: " + o.Skipped
		}
		fmt.Fprintf(stdout, "gpubench %s: %s (%.1f s) -> %s\n", s.name, status, o.ElapsedS, path)
	}
	return rc
}

// runSection runs one section, turning a panic into a failed result.
func runSection(s section, e *env) (o output) {
	start := time.Now()
	o = output{
		Tool: "gpubench", Section: s.name, What: s.what, Go: runtime.Version(), CPUs: runtime.NumCPU(),
		Fake: e.fake, Quick: e.quick, Timestamp: start.UTC().Format(time.RFC3339),
	}
	defer func() {
		if r := recover(); r != nil {
			o.OK, o.Error = false, fmt.Sprintf("panic: %v", r)
		}
		o.ElapsedS = time.Since(start).Seconds()
	}()
	if err := e.setup(); err != nil {
		o.Error = "loading the CUDA driver: " + err.Error()
		return o
	}
	res, skipped, err := s.run(e)
	o.Result, o.Skipped = res, skipped
	if err != nil {
		o.Error = err.Error()
		return o
	}
	o.OK = true
	return o
}

// writeJSON writes v, or, if v cannot be encoded, a failed result saying
// why, so that the report always finds a file.
func writeJSON(path string, o output) error {
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		o.OK, o.Error, o.Result = false, "encoding the result: "+err.Error(), nil
		if b, err = json.MarshalIndent(o, "", "  "); err != nil {
			return err
		}
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// --- small helpers ---------------------------------------------------------

// errs keeps the first error of many calls.
type errs struct{ err error }

func (e *errs) add(what string, err error) {
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("%s: %w", what, err)
	}
}

// cudaCode is the CUresult in err, or 0.
func cudaCode(err error) int32 {
	var de *backend.DriverError
	if errors.As(err, &de) {
		return de.Code
	}
	return 0
}

func sorted(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}

// quantile is the nearest-rank q-quantile of xs (0 for none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := sorted(xs)
	i := int(q*float64(len(s)-1) + 0.5)
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

func minOf(xs []float64) float64 { return quantile(xs, 0) }

func maxOf(xs []float64) float64 { return quantile(xs, 1) }

// div is a/b, or 0 when b is 0 (JSON has no NaN or Inf).
func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func absF(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func ns(d time.Duration) float64 { return float64(d) }

// stderrLog receives the hub's log lines.
var stderrLog io.Writer = os.Stderr

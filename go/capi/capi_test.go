//go:build cgo

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The library is built once per test run, as a user would build it.
var (
	libDir  string
	libOnce = map[string]*sync.Once{"c-archive": {}, "c-shared": {}, "c-archive-race": {}}
	libErr  = map[string]error{}
	libMu   sync.Mutex
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gpuspans-capi")
	if err != nil {
		panic(err)
	}
	libDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// library builds go/capi with -buildmode=mode and returns the library's
// path; it skips the test when gcc is missing. Mode c-archive-race is the
// archive built with -race (link it with -no-pie: the race runtime's
// shadow memory needs fixed addresses).
func library(t *testing.T, mode string) string {
	t.Helper()
	if os.Getenv("TEST_SRCDIR") != "" {
		t.Skip("under Bazel: //go/capi:hub_c_test and //cpp:engine_test in examples/ link the Bazel-built archive")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found: cannot build or link the C ABI")
	}
	name := map[string]string{"c-archive": "libgpuspans.a", "c-shared": "libgpuspans.so", "c-archive-race": "libgpuspans_race.a"}[mode]
	out := filepath.Join(libDir, name)
	libOnce[mode].Do(func() {
		// The tests' library: with the test hooks (crossings_testing.go).
		args := []string{"build", "-tags=gpuspans_testing", "-buildmode=" + mode, "-o", out, "."}
		if mode == "c-archive-race" {
			args = []string{"build", "-tags=gpuspans_testing", "-race", "-buildmode=c-archive", "-o", out, "."}
		}
		// go test puts the go that runs it first on PATH.
		cmd := exec.Command("go", args...)
		b, err := cmd.CombinedOutput()
		libMu.Lock()
		defer libMu.Unlock()
		if err != nil {
			libErr[mode] = err
			t.Logf("go build -buildmode=%s:\n%s", mode, b)
		}
	})
	libMu.Lock()
	defer libMu.Unlock()
	if err := libErr[mode]; err != nil {
		t.Fatalf("building the %s library: %v", mode, err)
	}
	return out
}

// compile builds a C or C++ program of srcs against lib and returns it.
func compile(t *testing.T, compiler, lib, exe string, srcs ...string) string {
	t.Helper()
	if _, err := exec.LookPath(compiler); err != nil {
		t.Skipf("%s not found", compiler)
	}
	out := filepath.Join(t.TempDir(), exe)
	args := []string{"-O2", "-Wall", "-Wextra", "-Werror", "-DGS_HUB_TESTING", "-Iinclude", "-o", out}
	args = append(args, srcs...)
	switch {
	case strings.HasSuffix(lib, ".so"):
		args = append(args, "-L"+filepath.Dir(lib), "-lgpuspans", "-Wl,-rpath,"+filepath.Dir(lib))
	case strings.HasSuffix(lib, "_race.a"):
		args = append(args, "-no-pie", lib, "-lstdc++")
	default:
		args = append(args, lib, "-lstdc++")
	}
	args = append(args, "-ldl", "-lpthread", "-lm")
	if b, err := exec.Command(compiler, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, b)
	}
	return out
}

// run runs a program and fails the test if it fails.
func run(t *testing.T, exe string, args ...string) string {
	t.Helper()
	b, err := exec.Command(exe, args...).CombinedOutput()
	t.Logf("%s:\n%s", filepath.Base(exe), b)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(exe), err)
	}
	return string(b)
}

func TestCArchive(t *testing.T) {
	exe := compile(t, "gcc", library(t, "c-archive"), "hub_test", "testdata/hub_test.c")
	if out := run(t, exe); !strings.Contains(out, "PASS") {
		t.Error("hub_test did not pass")
	}
}

func TestCShared(t *testing.T) {
	exe := compile(t, "gcc", library(t, "c-shared"), "hub_test", "testdata/hub_test.c")
	if out := run(t, exe); !strings.Contains(out, "PASS") {
		t.Error("hub_test did not pass")
	}
}

// Fork (testdata/fork_test.c): a child forked with a hub open, bare or with
// a harvester, OTLP and a server running, gets every call back at once and
// never enters Go; the parent's hub works on and leaves no descriptor.
func TestFork(t *testing.T) {
	for _, mode := range []string{"c-archive", "c-shared"} {
		t.Run(mode, func(t *testing.T) {
			exe := compile(t, "gcc", library(t, mode), "fork_test", "testdata/fork_test.c")
			if out := run(t, exe); !strings.Contains(out, "PASS") {
				t.Error("fork_test did not pass")
			}
		})
	}
}

// A hostile caller (testdata/hostile_test.c): every export with extreme
// arguments, close racing serve and drain, tokens given to the wrong hub.
// Under go test -race it also runs against a library built with -race, so
// that the race detector watches close racing the other calls.
func TestCHostile(t *testing.T) {
	modes := []string{"c-archive", "c-shared"}
	if raceEnabled {
		modes = append(modes, "c-archive-race")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			exe := compile(t, "gcc", library(t, mode), "hostile_test", "testdata/hostile_test.c")
			if out := run(t, exe); !strings.Contains(out, "PASS") || strings.Contains(out, "DATA RACE") {
				t.Error("hostile_test did not pass, or a race was reported")
			}
		})
	}
}

// The header compiles as C++ too, and the example engine loop runs on the
// simulated GPU.
func TestCXXEngine(t *testing.T) {
	exe := compile(t, "g++", library(t, "c-archive"), "engine", "-std=c++17", "../../examples/cpp/engine.cc")
	out := run(t, exe, "--steps=64")
	if !strings.Contains(out, `"name": "decode"`) {
		t.Error("the engine's snapshot has no decode lane")
	}
}

// The benchmark runs (briefly); its numbers are logged, not checked.
func TestCBench(t *testing.T) {
	exe := compile(t, "gcc", library(t, "c-archive"), "hub_bench", "testdata/hub_bench.c")
	run(t, exe, "20000")
}

// TestRingDifferential holds the ring's two writers, recorder.go and
// spanpath.c, to one protocol op for op (testdata/ringdiff_test.c): a
// million random operations over 4 seeds, the step and lane ones each sent
// to C or Go at random, some with a failing or sticky record, among
// harvests, levels, captures, installs and uninstalls; every word of every
// ring, the device's counts and the hub's step words compared with
// go/internal/spanring/spanringtest's model after each, and no operation
// sent to C entering Go but where the model says. A difference fails it
// with "diverged after op N"; tools/ci/ringdiff_mutations.sh checks that
// it fails so under mutations of either writer, of NextStep and of the
// shared layout.
func TestRingDifferential(t *testing.T) {
	exe := compile(t, "gcc", library(t, "c-archive"), "ringdiff_test", "-I../../cuda/include", "testdata/ringdiff_test.c")
	ops := "250000"
	if s := os.Getenv("GPUSPANS_RINGDIFF_OPS"); s != "" {
		ops = s
	}
	b, err := exec.Command(exe, ops, "1", "2", "3", "4").CombinedOutput()
	t.Logf("%s", b)
	if err != nil || !strings.Contains(string(b), "PASS") {
		t.Fatalf("the ring's writers differ from the model: %v", err)
	}
}

// TestKernelWindowsBesideTheCSpanPath holds kernel windows to
// docs/gpu-facts.md's CUPTI rules on the fake CUPTI while steps go through the C span
// path (testdata/windows_test.c): the word that lets C take a step must
// send every step that opens or closes a window to Go.
func TestKernelWindowsBesideTheCSpanPath(t *testing.T) {
	exe := compile(t, "gcc", library(t, "c-archive"), "windows_test", "-I../../cuda/include", "testdata/windows_test.c")
	b, err := exec.Command(exe).CombinedOutput()
	t.Logf("%s", b)
	if err != nil || !strings.Contains(string(b), "PASS") {
		t.Fatalf("windows_test: %v", err)
	}
}

// The C span path on the fake driver (testdata/spanpath_test.c), and the
// same program with every lane call sent through Go: both pass, and every
// outcome they count is the same.
func TestSpanPath(t *testing.T) {
	exe := compile(t, "gcc", library(t, "c-archive"), "spanpath_test", "-I../../cuda/include", "testdata/spanpath_test.c")
	summaries := map[string][]string{}
	for _, path := range []string{"c", "go"} {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "GPUSPANS_SPAN_PATH="+path)
		b, err := cmd.CombinedOutput()
		t.Logf("GPUSPANS_SPAN_PATH=%s:\n%s", path, b)
		if err != nil || !strings.Contains(string(b), "PASS") {
			t.Fatalf("GPUSPANS_SPAN_PATH=%s: %v", path, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "summary ") && !strings.Contains(line, "not compared") {
				summaries[path] = append(summaries[path], line)
			}
		}
	}
	if c, g := strings.Join(summaries["c"], "\n"), strings.Join(summaries["go"], "\n"); c != g || c == "" {
		t.Errorf("the paths counted differently:\nC:\n%s\nGo:\n%s", c, g)
	}
}

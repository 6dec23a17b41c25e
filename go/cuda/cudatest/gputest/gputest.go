//go:build cgo

// Package gputest is the prologue of GPU tests (*_gpu_test.go, in go/cuda
// and go/integration): they use the real driver and skip unless
// GPUSPANS_GPU=1, which tools/gpu/run.sh sets on the GPU machine (Bazel
// selects them by their "gpu" tag). Tests only.
package gputest

import (
	"os"
	"runtime"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
)

// Only skips t unless GPUSPANS_GPU=1, then loads the real driver.
func Only(t testing.TB) {
	t.Helper()
	if os.Getenv("GPUSPANS_GPU") != "1" {
		t.Skip("set GPUSPANS_GPU=1 to run GPU tests")
	}
	cudatest.UseRealDriver()
	if err := cuda.Load(); err != nil {
		t.Fatal(err)
	}
}

// OpenKit opens the GPU kit on device and n streams of it; at the end of
// the test the streams are synced and destroyed and the kit closed.
func OpenKit(t testing.TB, device, n int) (*cudakit.Kit, []backend.Stream) {
	t.Helper()
	kit, err := cudakit.NewKit(device)
	if err != nil {
		t.Fatal(err)
	}
	var streams []backend.Stream
	t.Cleanup(func() {
		for _, s := range streams {
			_ = kit.Sync(s)
		}
		for _, s := range streams {
			_ = kit.DestroyStream(s)
		}
		_ = kit.Close()
	})
	for i := 0; i < n; i++ {
		s, err := kit.NewStream()
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, s)
	}
	return kit, streams
}

// Engine is one device's share of a test: a kit, a lane stream and a
// kernel stream.
type Engine struct {
	Kit          *cudakit.Kit
	Lane, Kernel backend.Stream
}

// Capture captures n calls of launch on the kernel stream into a graph (in
// global mode, on this OS thread, as such a capture must end where it
// began) and instantiates it; both are destroyed when t ends. A broken
// capture fails t.
func (e *Engine) Capture(t testing.TB, n int, launch func() error) cudakit.GraphExec {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := e.Kit.CaptureBegin(e.Kernel, cudakit.CaptureGlobal); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := launch(); err != nil {
			t.Fatal(err)
		}
	}
	g, err := e.Kit.CaptureEnd(e.Kernel)
	if err != nil {
		t.Fatalf("a capture broke: %v", err)
	}
	x, err := e.Kit.Instantiate(g)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Kit.DestroyGraphExec(x); _ = e.Kit.DestroyGraph(g) })
	return x
}

// NewEngine opens an Engine on device, closed at the end of the test.
func NewEngine(t testing.TB, device int) *Engine {
	t.Helper()
	kit, streams := OpenKit(t, device, 2)
	return &Engine{Kit: kit, Lane: streams[0], Kernel: streams[1]}
}

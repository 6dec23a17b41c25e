//go:build cgo

package integration

import (
	"os"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
)

// GPU tests (*_gpu_test.go): they use the real driver and skip unless
// GPUSPANS_GPU=1 (set by tools/gpu/run.sh on the GPU machine; Bazel
// selects them by tag). This file holds the prologue every GPU test of
// this package starts with; go/cuda's gpu_test.go has its own.

// gpuOnly skips t unless GPUSPANS_GPU=1, then loads the real driver.
func gpuOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("GPUSPANS_GPU") != "1" {
		t.Skip("set GPUSPANS_GPU=1 to run GPU tests")
	}
	cudatest.UseRealDriver()
	if err := cuda.Load(); err != nil {
		t.Fatal(err)
	}
}

// openKit opens the test kit on device and n streams of it; at the end of
// the test the streams are synced and destroyed and the kit closed.
func openKit(t *testing.T, device, n int) (*cudatest.Kit, []backend.Stream) {
	t.Helper()
	kit, err := cudatest.NewKit(device)
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

// engine is one device's share of a test: a kit, a lane stream and a
// kernel stream.
type engine struct {
	kit          *cudatest.Kit
	lane, kernel backend.Stream
}

func newEngine(t *testing.T, device int) *engine {
	t.Helper()
	kit, streams := openKit(t, device, 2)
	return &engine{kit: kit, lane: streams[0], kernel: streams[1]}
}

//go:build cgo

package cuda_test

import (
	"errors"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest/gputest"
)

// GPU tests: go/cuda/cudatest/gputest has their prologue.

// gpu is device 0's kit, one of its streams and a pool of the test's size.
type gpu struct {
	kit    *cudakit.Kit
	pool   *cuda.Pool
	stream backend.Stream
}

func openGPU(t *testing.T, slots int) *gpu {
	t.Helper()
	gputest.Only(t)
	kit, streams := gputest.OpenKit(t, 0, 1)
	g := &gpu{kit: kit, stream: streams[0]}
	var err error
	if g.pool, err = cuda.Open(0, slots); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.kit.Sync(g.stream); err != nil {
			t.Error(err)
		}
		items := make([]backend.HarvestItem, slots)
		for i := range items {
			items[i].Slot = uint32(i)
		}
		_ = g.pool.Harvest(items)
		// The pool's offset calibration keeps its stream busy for about a
		// millisecond after Open: Close answers busy until it is done.
		err := g.pool.Close()
		for i := 0; errors.Is(err, backend.ErrBusy) && i < 1000; i++ {
			time.Sleep(time.Millisecond)
			err = g.pool.Close()
		}
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return g
}

// gpuMust keeps this file independent of cuda_test.go: Bazel builds the GPU
// tests as their own target.
func gpuMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A span around a spin kernel matches the kernel's own %globaltimer reading
// up to the fixed cost of the events around it (a few microseconds).
func TestGPUSpinMeasured(t *testing.T) {
	g := openGPU(t, 16)
	timer, err := g.kit.NewTimer()
	if err != nil {
		t.Fatal(err)
	}
	defer timer.Free()
	for i, d := range []time.Duration{100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond} {
		gpuMust(t, g.kit.Spin(g.stream, 200*time.Microsecond, nil)) // the begin event waits on this, not on the launch
		gpuMust(t, g.pool.RecordBegin(i, g.stream))
		gpuMust(t, g.kit.Spin(g.stream, d, timer))
		gpuMust(t, g.pool.RecordEnd(i, g.stream))
		gpuMust(t, g.kit.Sync(g.stream))
		start, end, err := timer.Read()
		gpuMust(t, err)
		items := []backend.HarvestItem{{Slot: uint32(i)}}
		gpuMust(t, g.pool.Harvest(items))
		kernel := int64(end - start)
		diff := items[0].DurationNs - kernel
		t.Logf("spin %v: span %d ns, kernel %d ns, span - kernel %+d ns", d, items[0].DurationNs, kernel, diff)
		if items[0].State != backend.Done || diff < 0 || diff > 10000 {
			t.Errorf("spin %v: %+v, kernel %d ns", d, items[0], kernel)
		}
	}
}

// Recording on a capturing stream is refused and the capture still ends
// well; harvests from another goroutine meanwhile do not break it.
func TestGPUCaptureSafety(t *testing.T) {
	g := openGPU(t, 64)
	lane, err := g.kit.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer g.kit.DestroyStream(lane)
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		items := []backend.HarvestItem{{Slot: 1}}
		harvests := 0
		for {
			select {
			case <-stop:
				done <- harvests
				return
			default:
			}
			_ = g.pool.RecordBegin(1, lane)
			_ = g.kit.Empty(lane)
			_ = g.pool.RecordEnd(1, lane)
			for items[0].State = backend.InFlight; items[0].State == backend.InFlight; harvests++ {
				if err := g.pool.Harvest(items); err != nil {
					t.Error(err)
					break
				}
			}
		}
	}()
	// A GLOBAL capture must end on the thread that began it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i := 0; i < 200; i++ {
		gpuMust(t, g.kit.CaptureBegin(g.stream, cudakit.CaptureGlobal))
		if err := g.pool.RecordBegin(0, g.stream); !errors.Is(err, backend.ErrCapturing) {
			t.Errorf("RecordBegin during capture: %v", err)
		}
		if c, err := g.pool.Capturing(g.stream); !c || err != nil {
			t.Errorf("Capturing during capture: %v, %v", c, err)
		}
		gpuMust(t, g.kit.Spin(g.stream, time.Microsecond, nil))
		gpuMust(t, g.kit.Empty(g.stream))
		graph, err := g.kit.CaptureEnd(g.stream)
		if err != nil {
			t.Fatalf("capture %d: %v", i, err)
		}
		exec, err := g.kit.Instantiate(graph)
		gpuMust(t, err)
		gpuMust(t, g.kit.Launch(exec, g.stream))
		gpuMust(t, g.kit.DestroyGraphExec(exec))
		gpuMust(t, g.kit.DestroyGraph(graph))
	}
	close(stop)
	t.Logf("200 GLOBAL captures, %d harvests alongside", <-done)
	gpuMust(t, g.kit.Sync(lane))
}

// The driver's identity of every device matches nvidia-smi's (as DCGM
// exporter labels series: UUID "GPU-...", pci_bus_id "00000000:19:00.0"),
// and the driver's CUDA version its banner's "CUDA Version: 13.0".
func TestGPUDeviceIdentity(t *testing.T) {
	_ = openGPU(t, 4)
	n, err := cuda.DeviceCount()
	gpuMust(t, err)
	out, err := exec.Command("nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,name", "--format=csv,noheader").Output()
	if err != nil {
		t.Fatalf("nvidia-smi: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	banner, err := exec.Command("nvidia-smi").Output()
	if err != nil {
		t.Fatalf("nvidia-smi: %v", err)
	}
	// A forward-compatibility libcuda (cuda-compat) may report a newer
	// version than the banner's, and fail this test.
	driver := ""
	if m := regexp.MustCompile(`CUDA Version: (\d+\.\d+)`).FindSubmatch(banner); m != nil {
		driver = string(m[1])
	}
	for dev := 0; dev < n; dev++ {
		id, err := cuda.DeviceIdentity(dev)
		gpuMust(t, err)
		t.Logf("device %d: %+v", dev, id)
		// CUDA and nvidia-smi may order devices differently (CUDA_DEVICE_ORDER):
		// match on the UUID, then compare the rest.
		var found []string
		for _, l := range lines {
			f := strings.Split(l, ", ")
			if len(f) == 4 && f[1] == id.UUID {
				found = f
			}
		}
		if found == nil {
			t.Errorf("device %d: UUID %q not in nvidia-smi's %q", dev, id.UUID, lines)
			continue
		}
		if found[2] != id.PCIBusID || found[3] != id.Name {
			t.Errorf("device %d: %+v; nvidia-smi says bus %q, name %q", dev, id, found[2], found[3])
		}
		if id.Driver != driver {
			t.Errorf("device %d: driver %q; nvidia-smi says CUDA Version %q", dev, id.Driver, driver)
		}
	}
}

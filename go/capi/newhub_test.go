//go:build cgo

package main

import (
	"runtime"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// A C or Python hub created with kernel_timing auto after a profiler has
// finished takes CUPTI over from the subscriber the profiler left, as the
// same hub created with events and then set to auto does (a Go hub from
// gpuspans.New steps aside instead: go/integration's
// TestWindowStepsAsideForAProfiler).
func TestCreateWithAutoTakesCUPTIOver(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := cudatest.UseFakeCUPTI()
	t.Cleanup(cudatest.UseRealCUPTI)
	f.OtherSubscriber(true) // torch.profiler finished: its subscriber lingers
	h, err := newHub(gpuspans.Options{
		Level: gpuspans.LevelKernel, Lanes: []string{"decode"}, Logf: t.Logf,
		KernelTiming: gpuspans.KernelTimingAuto, KernelTracer: cuda.TracerOpener(""), KernelWindowEvery: 24 * time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, 1, fake.NopOpener); err != nil {
		t.Fatal(err)
	}
	h.BeginStep() // the first window opens at the first step at Kernel
	if !f.Attached() || !f.Enabled() {
		t.Fatalf("no window: %+v", h.KernelTimingStatus())
	}
	h.BeginStep()
	if f.Attached() {
		t.Error("the window did not detach")
	}
	if err := h.CloseKernelTracer(); err != nil {
		t.Error(err)
	}
}

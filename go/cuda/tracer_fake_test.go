//go:build cgo

package cuda_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
)

// cuda.Tracer on the fake CUPTI (go/cuda/cudatest), which delivers
// synthesised activity buffers through the real callbacks: the binding's
// reading of the C++ core's records and names. The hub's kernel windows
// over this tracer, end to end, are go/integration's tracer_fake_test.go.
// The fake is process-wide: none of these runs in parallel.

func TestTracerReadsNames(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := cudatest.UseFakeCUPTI()
	t.Cleanup(cudatest.UseRealCUPTI)
	tr, err := cuda.OpenTracer("", backend.TracerWindow)
	if err != nil {
		t.Fatal(err)
	}
	long := "_Z" + "3" + "abc" // a short one, then a name far over the limit
	for _, name := range []string{
		"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
		"triton_poi_fused_add_0",
		long + "v",
		strings.Repeat("x", 300),
		"",
	} {
		f.Kernel(0, 1, 0, 1, name, 0)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	recs := make([]backend.KernelRecord, 10)
	n := tr.Read(recs)
	if n != 5 {
		t.Fatalf("read %d records, want 5", n)
	}
	want := []string{
		"at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >",
		"triton_poi_fused_add_0",
		"abc",
		strings.Repeat("x", 115) + "...#",
		"?",
	}
	for i := 0; i < n; i++ {
		if got := tr.Name(recs[i].Name); !strings.HasPrefix(got, want[i]) || (i != 3 && got != want[i]) {
			t.Errorf("name %d = %q, want %q", i, got, want[i])
		}
	}
	if got := tr.FullName(recs[0].Name); !strings.HasPrefix(got, "void at::native::vectorized_elementwise_kernel<4") {
		t.Errorf("full name %q", got)
	}
	if got := tr.FullName(recs[3].Name); got != strings.Repeat("x", 300) {
		t.Errorf("full name of the cut one: %q", got)
	}
	if got := tr.Name(9999); got != "" {
		t.Errorf("unknown id named %q", got)
	}
}

// A window's copies, memsets and launch calls reach Go as their own kinds,
// with the launching thread and the correlation its kernels carry.
func TestTracerWindowReadsCopiesAndLaunches(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	f := cudatest.UseFakeCUPTI()
	t.Cleanup(cudatest.UseRealCUPTI)
	drain := make([]backend.KernelRecord, 1024)
	tr, err := cuda.OpenTracer("", backend.TracerWindow)
	if err != nil {
		t.Fatal(err)
	}
	for tr.Read(drain) > 0 {
	}
	corr := f.LaunchCall(cudatest.CallGraphLaunch, 100, 140)
	if corr == 0 {
		t.Fatal("the window's watch did not record a graph launch")
	}
	f.Kernel(0, 3, 150, 170, "k", 7)
	f.Copy(0, 3, 180, 200, false, 0)
	f.Copy(0, 4, 210, 220, true, 0)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	recs := make([]backend.KernelRecord, 8)
	n := tr.Read(recs)
	if n != 4 {
		t.Fatalf("read %d records, want 4: %+v", n, recs[:n])
	}
	l := recs[0]
	if l.Kind != backend.RecordLaunch || l.StartNs > l.EndNs || l.EndNs == 0 || l.Correlation != corr ||
		l.Thread != uint32(cudatest.ThreadID()) || l.Graph != backend.LaunchedGraph {
		t.Errorf("launch record %+v, want a graph launch by thread %d, correlation %d", l, cudatest.ThreadID(), corr)
	}
	if recs[1].Kind != backend.RecordKernel || recs[1].Graph != 7 {
		t.Errorf("kernel record %+v", recs[1])
	}
	if c := recs[2]; c.Kind != backend.RecordMemcpy || c.StartNs != 180 || c.EndNs != 200 || c.Stream != 3 || c.Name != 0 {
		t.Errorf("copy record %+v", c)
	}
	if m := recs[3]; m.Kind != backend.RecordMemset || m.Stream != 4 {
		t.Errorf("memset record %+v", m)
	}
}

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

//go:build cgo

package cudatest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
)

// These tests run against the fake driver, on any machine; the fake is
// process-wide, so none of them runs in parallel. go/cuda's tests use the
// fake through the pool; these cover what is cudatest's own.

func TestKitNeedsRealDriver(t *testing.T) {
	cudatest.UseFakeDriver()
	t.Cleanup(cudatest.UseRealDriver)
	if _, err := cudakit.NewKit(0); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("NewKit on the fake: %v, want ErrNoDriver", err)
	}
}

// Force and SetAnchorInterval reach the C pool behind a *cuda.Pool; a nil or
// closed pool, or a slot out of range, is ignored rather than dereferenced.
func TestPoolHooksIgnoreBadPools(t *testing.T) {
	f := cudatest.UseFakeDriver()
	t.Cleanup(cudatest.UseRealDriver)
	f.Force(nil, 0, true, cudatest.FakeQuery, 600, 1)
	cudatest.SetAnchorInterval(nil, time.Nanosecond)
	p, err := cuda.Open(0, 2)
	if err != nil {
		t.Fatal(err)
	}
	f.Force(p, 2, false, cudatest.FakeQuery, 600, 1)
	f.Force(p, -1, false, cudatest.FakeQuery, 600, 1)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	f.Force(p, 0, true, cudatest.FakeQuery, 600, 1)
	cudatest.SetAnchorInterval(p, time.Nanosecond)
}

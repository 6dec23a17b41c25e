//go:build !cgo

package cudatest_test

import (
	"errors"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
)

func TestWithoutCgoTheKitReportsNoDriver(t *testing.T) {
	if _, err := cudatest.NewKit(0); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("NewKit: %v", err)
	}
}

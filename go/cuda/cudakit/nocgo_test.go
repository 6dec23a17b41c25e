//go:build !cgo

package cudakit_test

import (
	"errors"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
)

func TestWithoutCgoTheKitReportsNoDriver(t *testing.T) {
	if _, err := cudakit.NewKit(0); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("NewKit: %v", err)
	}
}

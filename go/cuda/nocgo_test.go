//go:build !cgo

package cuda_test

import (
	"errors"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
)

func TestWithoutCgoEverythingReportsNoDriver(t *testing.T) {
	if err := cuda.Load(); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("Load: %v", err)
	}
	if _, err := cuda.Open(0, 8); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("Open: %v", err)
	}
	if _, err := cuda.Opener(0)(8); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("Opener: %v", err)
	}
}

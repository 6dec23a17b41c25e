//go:build !cgo

package cuda

import (
	"errors"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
)

func TestWithoutCgoEverythingReportsNoDriver(t *testing.T) {
	if err := Load(); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("Load: %v", err)
	}
	if _, err := Open(0, 8); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("Open: %v", err)
	}
	if _, err := Opener(0, 8)(); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("Opener: %v", err)
	}
	if _, err := NewKit(0); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("NewKit: %v", err)
	}
}

//go:build cgo

package main

import (
	"os"
	"os/exec"
	"testing"
)

// The Python package's tests, against the c-shared library.
func TestPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	lib := library(t, "c-shared")
	cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = "../../python"
	cmd.Env = append(os.Environ(), "GPUSPANS_LIB="+lib, "PYTHONPATH=.", "PYTHONDONTWRITEBYTECODE=1")
	b, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest:\n%s", b)
	if err != nil {
		t.Fatalf("python tests: %v", err)
	}
}

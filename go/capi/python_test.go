//go:build cgo

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The Python package's tests, against the c-shared library and the compiled
// span calls (python/gpuspans/_hot.c).
func TestPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	lib := library(t, "c-shared")
	hot := hotExtension(t, py)
	cmd := exec.Command(py, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	cmd.Dir = "../../python"
	cmd.Env = append(os.Environ(), "GPUSPANS_LIB="+lib, "GPUSPANS_HOT="+hot, "PYTHONPATH=.", "PYTHONDONTWRITEBYTECODE=1")
	b, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest:\n%s", b)
	if err != nil {
		t.Fatalf("python tests: %v", err)
	}
}

// hotExtension compiles gpuspans._hot for py, as the wheel does.
func hotExtension(t *testing.T, py string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "_hot.abi3.so")
	if b, err := exec.Command("bash", "../../tools/python/hot.sh", out, py).CombinedOutput(); err != nil {
		t.Fatalf("tools/python/hot.sh: %v\n%s", err, b)
	}
	return out
}

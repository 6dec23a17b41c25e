package smallfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zeroLink := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zeroLink); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ok, link} {
		if b, err := Read(p, 64); err != nil || string(b) != "token\n" {
			t.Errorf("Read(%s) = %q, %v", p, b, err)
		}
	}
	for p, want := range map[string]string{
		big:                        "is 100 bytes, more than 64",
		fifo:                       "is not a regular file",
		"/dev/zero":                "is not a regular file",
		zeroLink:                   "is not a regular file",
		dir:                        "is not a regular file",
		filepath.Join(dir, "none"): "no such file",
	} {
		done := make(chan error, 1)
		go func() { _, err := Read(p, 64); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.HasPrefix(err.Error(), strings.Fields(want)[0]) && !strings.Contains(err.Error(), want) {
				t.Errorf("Read(%s): %v, want %q", p, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) hung", p)
		}
	}
}

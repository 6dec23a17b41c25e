package profile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// A file that is not a profile, renamed onto the profile's path while the
// profile is written, is never replaced: the rename's exchange reads the
// very file it took out of the path and puts it back.
func TestWriteNeverLosesARacingFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the exchange is renameat2's")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "decode.profile")
	p := sample()
	tries := 2000
	if testing.Short() {
		tries = 200
	}
	// How long a write takes here: the rename is spread over it.
	t0 := time.Now()
	for i := 0; i < 20; i++ {
		if err := Write(path, p); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(t0) / 20
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	lost, refused := 0, 0
	for i := 0; i < tries; i++ {
		mine := filepath.Join(dir, fmt.Sprintf("notes-%d.txt", i))
		content := fmt.Sprintf("my notes %d\n", i)
		if err := os.WriteFile(mine, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		at := time.Now().Add(took * time.Duration(i%100) / 80)
		go func() {
			defer wg.Done()
			// Spread the rename over the write's checks and its rename,
			// spinning: a sleep wakes too late to hit them.
			for time.Now().Before(at) {
			}
			if err := os.Rename(mine, path); err != nil {
				t.Error(err)
			}
		}()
		err := Write(path, p)
		wg.Wait()
		if err != nil {
			if !errors.Is(err, ErrNotProfile) {
				t.Fatalf("try %d: %v", i, err)
			}
			refused++
		}
		b, rerr := os.ReadFile(path)
		if rerr != nil || string(b) != content {
			lost++ // the racing file is gone: replaced by the profile
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".decode.profile.*.tmp"))
	t.Logf("%d tries: %d writes refused, %d racing files lost, %d temporary files left", tries, refused, lost, len(left))
	if lost != 0 || len(left) != 0 {
		t.Fatalf("%d of %d racing files lost, %d temporary files left", lost, tries, len(left))
	}
}

// What writers killed mid-write left beside a profile is removed: only
// files named as the writer names them, old, and beginning as a profile
// does.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "decode.profile")
	head, err := Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * StaleAge)
	files := map[string]struct {
		content []byte
		old     bool
		removed bool
	}{
		".decode.profile.123456.tmp":  {head[:100], true, true},   // ours, cut short, old
		".decode.profile.777.tmp":     {head, true, true},         // ours, whole, old
		".decode.profile.888.tmp":     {head[:100], false, false}, // a writer running now
		".decode.profile.999.tmp":     {[]byte("my notes"), true, false},
		".decode.profile.abc.tmp":     {head, true, false}, // not a name the writer gives
		".other.profile.123.tmp":      {head, true, false},
		"decode.profile.123.tmp":      {head, true, false},
		".decode.profile.123.tmp.bak": {head, true, false},
	}
	for name, f := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, f.content, 0o644); err != nil {
			t.Fatal(err)
		}
		if f.old {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := RemoveStale(path); n != 2 {
		t.Errorf("removed %d, want 2", n)
	}
	for name, f := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := errors.Is(err, os.ErrNotExist); gone != f.removed {
			t.Errorf("%s: removed %v, want %v", name, gone, f.removed)
		}
	}
	// A name with glob characters is matched as it is.
	odd := filepath.Join(dir, "[odd]*.profile")
	tmp := filepath.Join(dir, ".[odd]*.profile.42.tmp")
	if err := os.WriteFile(tmp, head, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if n := RemoveStale(odd); n != 1 {
		t.Errorf("%s: removed %d, want 1", odd, n)
	}
	if !strings.HasPrefix(string(head), "{\n \"format\": \"gpuspans-profile/") {
		t.Fatalf("Marshal begins %.40q: tempOfOurs no longer knows it", head)
	}
}

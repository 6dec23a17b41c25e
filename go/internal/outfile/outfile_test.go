package outfile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestCreateRefusesAllButRegularFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"/dev/null", "not a regular file"},
		{fifo, "not a regular file"},
		{link, "symbolic link"},
		{dir, "is a directory"},
		{filepath.Join(dir, "missing", "x"), "cannot write in its directory"},
	} {
		f, err := Create("--out", c.path)
		if err == nil {
			f.Abort()
			t.Errorf("%s: created", c.path)
			continue
		}
		if !strings.Contains(err.Error(), "--out "+c.path) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), ".tmp") {
			t.Errorf("%s: error %q, want it to name the path and say %q", c.path, err, c.want)
		}
	}
	if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("/dev/null is no longer a device: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target was written: %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(out, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Create("-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("new"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "old" {
		t.Errorf("the output changed before Commit: %q", b)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "new" {
		t.Errorf("after Commit: %q", b)
	}
	g, err := Create("-o", out)
	if err != nil {
		t.Fatal(err)
	}
	g.Abort()
	if b, _ := os.ReadFile(out); string(b) != "new" {
		t.Errorf("after Abort: %q", b)
	}
	// Something other than a regular file appearing meanwhile is not replaced.
	h, err := Create("-o", out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(out); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(out, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.Commit(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Commit onto a FIFO: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestSame(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard")
	if err := os.Link(a, hard); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{a, hard, true},
		{a, filepath.Join(dir, ".", "a"), true},
		{filepath.Join(dir, "new"), filepath.Join(dir, "x", "..", "new"), true},
		{a, filepath.Join(dir, "new"), false},
	} {
		if got := Same(c.a, c.b); got != c.same {
			t.Errorf("Same(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// Something other than a regular file swapped in at the output between
// Commit's check and its rename is left in place, and Commit fails naming
// it (on Linux; elsewhere the check runs just before the rename).
func TestCommitRaceKeepsWhatWasSwappedIn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("renameat2 is Linux's")
	}
	for _, swap := range []string{"fifo", "symlink", "dir"} {
		t.Run(swap, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := Create("--out", out)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("new"); err != nil {
				t.Fatal(err)
			}
			testHookBeforeRename = func() {
				_ = os.Remove(out)
				var err error
				switch swap {
				case "fifo":
					err = syscall.Mkfifo(out, 0o600)
				case "symlink":
					err = os.Symlink(victim, out)
				case "dir":
					err = os.Mkdir(out, 0o700)
				}
				if err != nil {
					t.Error(err)
				}
			}
			defer func() { testHookBeforeRename = nil }()
			err = f.Commit()
			if err == nil || !strings.Contains(err.Error(), "--out "+out) {
				t.Errorf("Commit: %v, want an error naming the output", err)
			}
			fi, lerr := os.Lstat(out)
			switch {
			case lerr != nil:
				t.Errorf("the %s swapped in is gone: %v", swap, lerr)
			case fi.Mode().IsRegular():
				t.Errorf("the %s swapped in was replaced by the output", swap)
			}
			if b, _ := os.ReadFile(victim); string(b) != "keep" {
				t.Errorf("the symlink's target now holds %q", b)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".out.*.tmp")); len(left) != 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
	// Nothing there at the rename, or a regular file: written.
	for _, swap := range []string{"removed", "regular"} {
		dir := t.TempDir()
		out := filepath.Join(dir, "out")
		f, err := Create("--out", out)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString("new")
		testHookBeforeRename = func() {
			if swap == "regular" {
				_ = os.WriteFile(out, []byte("someone's"), 0o644)
			}
		}
		err = f.Commit()
		testHookBeforeRename = nil
		if b, _ := os.ReadFile(out); err != nil || string(b) != "new" {
			t.Errorf("%s: Commit %v, output %q", swap, err, b)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".out.*")); len(left) != 0 {
			t.Errorf("%s: temporary files left: %v", swap, left)
		}
	}
}

// CommitIf replaces only what owned accepts, looked at on the very file
// the rename took out of the output's place: a file swapped in just
// before the rename that owned refuses is put back, whole.
func TestCommitIfPutsBackWhatIsNotOwned(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	ours := func(p string) error {
		b, err := os.ReadFile(p)
		if err != nil || !strings.HasPrefix(string(b), "ours") {
			return fmt.Errorf("%s is not ours (%q)", p, b)
		}
		return nil
	}
	for _, c := range []struct {
		there, swap string
		replaced    bool
	}{
		{"", "someone's", false},       // swapped in where nothing was
		{"ours 1", "someone's", false}, // swapped in over ours
		{"ours 1", "ours 2", true},
		{"", "", true},
	} {
		_ = os.Remove(out)
		if c.there != "" {
			if err := os.WriteFile(out, []byte(c.there), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f, err := Create("--out", out)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.WriteString("ours new")
		testHookBeforeRename = func() {
			if c.swap != "" {
				_ = os.WriteFile(out+".side", []byte(c.swap), 0o644)
				_ = os.Rename(out+".side", out)
			}
		}
		err = f.CommitIf(ours)
		testHookBeforeRename = nil
		b, _ := os.ReadFile(out)
		if want := map[bool]string{true: "ours new", false: c.swap}[c.replaced]; string(b) != want || (err == nil) != c.replaced {
			t.Errorf("%+v: CommitIf %v, output %q, want %q", c, err, b, want)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, ".out.*")); len(left) != 0 {
			t.Errorf("%+v: temporary files left: %v", c, left)
		}
	}
}

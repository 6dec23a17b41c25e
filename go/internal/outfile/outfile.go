// Package outfile writes output files safely: to a temporary file next to
// the output, renamed onto it only once complete, and never onto anything
// but a regular file or nothing. A device, FIFO, socket, directory or
// symbolic link at the path is refused, by name, before anything is created
// (renaming onto /dev/null would replace it with a regular file). On Linux
// the final rename is atomic with that check (renameat2: no replacement
// when nothing was there, an exchange checked and undone when something
// other than a regular file was swapped in meanwhile); elsewhere, and on
// file systems without renameat2's flags, it is a check just before a
// rename.
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Check reports whether path may be replaced by an output: nothing is
// there, or a regular file (a symbolic link is refused, not followed).
// Errors name what (a flag, say) and path.
func Check(what, path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%s %s: %w", what, path, unwrapPath(err))
	}
	return checkMode(what, path, fi.Mode())
}

// checkMode is Check's verdict on a file of mode m at path.
func checkMode(what, path string, m fs.FileMode) error {
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeSymlink != 0:
		return fmt.Errorf("%s %s is a symbolic link: name the file it points to, outputs are never written through one", what, path)
	case m.IsDir():
		return fmt.Errorf("%s %s is a directory", what, path)
	default:
		return fmt.Errorf("%s %s is not a regular file (%v): outputs only replace regular files", what, path, m.Type())
	}
}

// Same reports whether a and b are the same file: both exist and
// os.SameFile says so (hard links included), or they name the same path
// once made absolute and cleaned.
func Same(a, b string) bool {
	if fa, err := os.Stat(a); err == nil {
		if fb, err := os.Stat(b); err == nil {
			return os.SameFile(fa, fb)
		}
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// File is an output being written: a temporary file in the output's
// directory, which Commit renames onto the output. Until then the output
// is untouched.
type File struct {
	*os.File
	what, path string
	done       bool
}

// Create checks path (see Check) and creates the temporary file that will
// replace it. Errors name what and path, never the temporary name.
func Create(what, path string) (*File, error) {
	if err := Check(what, path); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), tempPattern(path))
	if err != nil {
		return nil, fmt.Errorf("%s %s: cannot write in its directory: %w", what, path, unwrapPath(err))
	}
	return &File{File: f, what: what, path: path}, nil
}

// tempPattern names an output's temporary files: "." + the output's name
// + "." + random digits + ".tmp".
func tempPattern(path string) string { return "." + filepath.Base(path) + ".*.tmp" }

// RemoveStale removes the temporary files of path's output that a writer
// left behind (killed mid-write) and that are older than age: only files
// named as Create names them, regular, and that stale says are ours (nil:
// any); at most limit of them. It returns how many it removed. A writer
// running now is younger than age.
func RemoveStale(path string, age time.Duration, limit int, stale func(tmp string) bool) int {
	matches, err := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(tempPattern(path))))
	if err != nil {
		return 0
	}
	n := 0
	for _, m := range matches {
		if n >= limit {
			break
		}
		fi, err := os.Lstat(m)
		if err != nil || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) < age || !digitsBetween(filepath.Base(m), filepath.Base(path)) {
			continue
		}
		if stale != nil && !stale(m) {
			continue
		}
		if os.Remove(m) == nil {
			n++
		}
	}
	return n
}

// globEscape escapes the output's own name in a glob pattern, keeping
// its one "*".
func globEscape(pattern string) string {
	var b []byte
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if (c == '[' || c == '?' || c == '\\') || (c == '*' && i != strings.LastIndex(pattern, "*")) {
			b = append(b, '\\')
		}
		b = append(b, c)
	}
	return string(b)
}

// digitsBetween reports whether name is "." + base + "." + digits + ".tmp",
// as os.CreateTemp names them.
func digitsBetween(name, base string) bool {
	mid := strings.TrimSuffix(strings.TrimPrefix(name, "."+base+"."), ".tmp")
	if mid == "" || len(mid)+len(base)+6 != len(name) {
		return false
	}
	for _, c := range mid {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Path is the output's path.
func (f *File) Path() string { return f.path }

// Commit closes the file and renames it onto the output, checked again
// just before; on any error the temporary file is removed and the output
// left as it was. It does nothing after Commit or Abort.
func (f *File) Commit() error { return f.CommitIf(nil) }

// CommitIf is Commit replacing only a file owned says may be replaced
// (nil: any regular file). On Linux owned reads the very file the rename
// took out of the output's place (exchanged to the temporary name), and
// a file it refuses is put back, so that no file put there meanwhile is
// ever lost; elsewhere it reads the output just before the rename.
func (f *File) CommitIf(owned func(path string) error) error {
	if f.done {
		return nil
	}
	f.done = true
	// CreateTemp makes the file private; an output is an ordinary file.
	err := f.Chmod(0o644)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		err = fmt.Errorf("%s %s: %w", f.what, f.path, unwrapPath(err))
	}
	if err == nil {
		err = Check(f.what, f.path) // something may have appeared there since Create
	}
	if err == nil {
		err = place(f.what, f.Name(), f.path, owned)
	}
	if err != nil && !errors.Is(err, errKeepTemp) {
		_ = os.Remove(f.Name())
	}
	return err
}

// Flags of renameat2.
const (
	renameNoReplace = 1 << 0
	renameExchange  = 1 << 1
)

var (
	errUnsupported = errors.New("renameat2 unsupported")
	// errKeepTemp marks a failed place whose temporary name holds what was
	// at the output: it must not be removed.
	errKeepTemp = errors.New("")
)

// testHookBeforeRename, when set by a test, runs once just before place's
// rename: where another process could swap something in after a check.
var testHookBeforeRename func()

// place renames tmp onto path, replacing nothing but a regular file owned
// accepts (nil: any) even if something else was put there since the
// caller checked: with renameat2, a rename that replaces nothing, or an
// exchange whose result is looked at (what came out of path, now at tmp)
// and undone unless it is one. Where renameat2 cannot, it checks and
// renames.
func place(what, tmp, path string, owned func(string) error) error {
	wrap := func(err error) error { return fmt.Errorf("%s %s: %w", what, path, unwrapPath(err)) }
	hook := testHookBeforeRename
	beforeRename := func() {
		if hook != nil {
			hook()
			hook = nil
		}
	}
	for try := 0; try < 3; try++ {
		beforeRename()
		err := renameat2(tmp, path, renameNoReplace)
		if err == nil {
			return nil
		}
		if errors.Is(err, errUnsupported) {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return wrap(err)
		}
		err = renameat2(tmp, path, renameExchange)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // gone meanwhile: try to take its place again
		case errors.Is(err, errUnsupported):
			try = 3
			continue
		case err != nil:
			return wrap(err)
		}
		fi, err := os.Lstat(tmp)
		if err == nil && fi.Mode().IsRegular() {
			if owned == nil {
				_ = os.Remove(tmp) // the output's old content
				return nil
			}
			if err = owned(tmp); err == nil {
				_ = os.Remove(tmp)
				return nil
			}
		} else if err == nil {
			err = checkMode(what, path, fi.Mode())
		} else {
			err = wrap(err)
		}
		// Put back what was there; the caller removes tmp, now ours again.
		if rerr := renameat2(tmp, path, renameExchange); rerr != nil {
			return fmt.Errorf("%w; and putting it back failed (it is at %s now): %v%w", err, tmp, rerr, errKeepTemp)
		}
		return err
	}
	if err := Check(what, path); err != nil {
		return err
	}
	if owned != nil {
		if _, err := os.Lstat(path); err == nil {
			if err := owned(path); err != nil {
				return err
			}
		}
	}
	beforeRename()
	if err := os.Rename(tmp, path); err != nil {
		return wrap(err)
	}
	return nil
}

// Abort closes and removes the temporary file, leaving the output as it
// was. It does nothing after Commit or Abort.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	_ = f.Close()
	_ = os.Remove(f.Name())
}

// unwrapPath drops an *fs.PathError's or *os.LinkError's paths (the
// temporary file's name, which means nothing to the user), keeping why.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

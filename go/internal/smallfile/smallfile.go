// Package smallfile reads the small files a process is pointed at by a
// flag or an environment variable (a token, a certificate): regular files
// only, through symbolic links as secrets are mounted, of bounded size, so
// that a FIFO cannot block the start and /dev/zero cannot exhaust memory.
package smallfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read returns the contents of the regular file at path, of at most max
// bytes. It opens without blocking (a FIFO swapped in after the check
// cannot hang the open) and checks the open file again. Errors of its own
// checks say what is wrong ("is not a regular file (named pipe)") for the
// caller to prefix with the flag or variable and the path; those of the
// system name the path themselves.
func Read(path string, max int64) ([]byte, error) {
	regular := func(fi os.FileInfo) error {
		switch {
		case !fi.Mode().IsRegular():
			return fmt.Errorf("is not a regular file (%v)", fi.Mode().Type())
		case fi.Size() > max:
			return fmt.Errorf("is %d bytes, more than %d", fi.Size(), max)
		}
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(fi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("is more than %d bytes", max)
	}
	return b, nil
}

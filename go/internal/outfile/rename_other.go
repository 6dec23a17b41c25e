//go:build !linux

package outfile

// renameat2 is Linux's; elsewhere outputs fall back to a check and a
// rename.
func renameat2(oldpath, newpath string, flags uintptr) error { return errUnsupported }

//go:build linux

package outfile

import (
	"runtime"
	"syscall"
	"unsafe"
)

// sysRenameat2 is renameat2's system call number on this architecture, or
// 0 where this package does not know it (then outputs fall back to a check
// and a rename). The syscall package does not define it on amd64.
var sysRenameat2 = map[string]uintptr{
	"amd64": 316, "386": 353, "arm64": 276, "arm": 382, "riscv64": 276,
	"loong64": 276, "ppc64": 357, "ppc64le": 357, "s390x": 347,
}[runtime.GOARCH]

// renameat2 renames oldpath to newpath as Linux's renameat2 does with
// flags (renameNoReplace, renameExchange). It returns errUnsupported where
// the kernel or the file system cannot.
func renameat2(oldpath, newpath string, flags uintptr) error {
	if sysRenameat2 == 0 {
		return errUnsupported
	}
	p0, err := syscall.BytePtrFromString(oldpath)
	if err != nil {
		return err
	}
	p1, err := syscall.BytePtrFromString(newpath)
	if err != nil {
		return err
	}
	atFDCWD := -100
	_, _, e := syscall.Syscall6(sysRenameat2, uintptr(atFDCWD), uintptr(unsafe.Pointer(p0)), uintptr(atFDCWD), uintptr(unsafe.Pointer(p1)), flags, 0)
	switch e {
	case 0:
		return nil
	case syscall.ENOSYS, syscall.EINVAL:
		return errUnsupported
	}
	return e
}

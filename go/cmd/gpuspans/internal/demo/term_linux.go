package demo

import (
	"os"
	"syscall"
	"unsafe"
)

// terminalWidth returns the width in columns of the terminal f is, or 0
// when it cannot tell. The status line is cut to it: a wrapped line could
// not be rewritten in place with a carriage return.
func terminalWidth(f *os.File) int {
	var ws struct{ rows, cols, x, y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	if errno != 0 {
		return 0
	}
	return int(ws.cols)
}

//go:build !linux

package demo

import "os"

// terminalWidth returns 0 (unknown) where the demo does not ask the
// terminal; the status line is then printed whole.
func terminalWidth(*os.File) int { return 0 }

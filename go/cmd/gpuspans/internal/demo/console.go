package demo

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// console shares one output between log lines and a live status line. On
// a terminal the status line is rewritten in place (carriage return, then
// erase to end of line) and log lines are printed above it; elsewhere (a
// pipe, a CI log) every status is a line of its own. Safe for concurrent
// use.
type console struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	width  func() int // the terminal's columns now, 0 if unknown; tty only
	status string     // the status line on screen, tty only
}

func newConsole(w io.Writer) *console {
	c := &console{w: w, tty: isTerminal(w)}
	if c.tty {
		f := w.(*os.File)
		c.width = func() int { return terminalWidth(f) }
	}
	return c
}

// isTerminal reports whether w is a character device, which is what a
// terminal is; the standard library has no isatty, and this is enough to
// choose between rewriting a line and appending lines.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

const eraseLine = "\r\x1b[K"

// Printf prints a line (a newline is added), keeping the status line below
// it on a terminal.
func (c *console) Printf(format string, args ...interface{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	line := fmt.Sprintf(format, args...)
	if c.tty && c.status != "" {
		fmt.Fprintf(c.w, "%s%s\n%s", eraseLine, line, c.status)
		return
	}
	fmt.Fprintln(c.w, line)
}

// Status shows s as the status line.
func (c *console) Status(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.tty {
		fmt.Fprintln(c.w, s)
		return
	}
	// A line as wide as the terminal would wrap, and the next carriage
	// return would rewrite only its last part.
	if c.width != nil {
		if n := c.width() - 1; n > 0 && len(s) > n {
			s = s[:n]
		}
	}
	c.status = s
	fmt.Fprint(c.w, eraseLine+s)
}

// EndStatus leaves the last status line on screen and moves below it.
func (c *console) EndStatus() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tty && c.status != "" {
		fmt.Fprintln(c.w)
		c.status = ""
	}
}

// Package gpuspanstest helps tests of code that uses gpuspans: a check of
// the hub's span accounting and a log sink for Options.Logf. Test doubles
// of the backend (pools, a kernel tracer) are in go/backend/fake, beside
// the interfaces they implement.
//
// It does not import package testing, so benchmark programs can use it
// too; the checks take any value with testing.TB's Helper and Fatalf.
package gpuspanstest

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// TB is the part of testing.TB the checks use.
type TB interface {
	Helper()
	Fatalf(format string, args ...interface{})
}

// Accounting returns an error unless every begun span in s is accounted
// for exactly, in total and on each device (Begun == Landed + dropped +
// InFlight + Errored), and the devices add up to the totals. The identity
// holds only in a snapshot taken while no span call runs (see
// gpuspans.Counters).
func Accounting(s *gpuspans.Snapshot) error {
	c := &s.Counters
	if sum := c.Landed + c.DroppedTotal() + c.InFlight + c.Errored; c.Begun != sum {
		return fmt.Errorf("begun %d != landed %d + dropped %v + in flight %d + errored %d = %d",
			c.Begun, c.Landed, c.Dropped, c.InFlight, c.Errored, sum)
	}
	var all gpuspans.DeviceCounters
	for _, d := range s.PerDevice {
		if sum := d.Landed + d.DroppedTotal() + d.InFlight + d.Errored; d.Begun != sum {
			return fmt.Errorf("device %d: begun %d != landed %d + dropped %v + in flight %d + errored %d = %d",
				d.Device, d.Begun, d.Landed, d.Dropped, d.InFlight, d.Errored, sum)
		}
		all.Begun += d.Begun
		all.Landed += d.Landed
		all.Errored += d.Errored
		all.InFlight += d.InFlight
		for i := range all.Dropped {
			all.Dropped[i] += d.Dropped[i]
		}
	}
	if all.Begun != c.Begun || all.Landed != c.Landed || all.Errored != c.Errored || all.InFlight != c.InFlight || all.Dropped != c.Dropped {
		return fmt.Errorf("devices add up to begun %d, landed %d, dropped %v, in flight %d, errored %d; totals are %d, %d, %v, %d, %d",
			all.Begun, all.Landed, all.Dropped, all.InFlight, all.Errored, c.Begun, c.Landed, c.Dropped, c.InFlight, c.Errored)
	}
	return nil
}

// CheckAccounting fails t (Fatalf) unless Accounting(s) is nil.
func CheckAccounting(t TB, s *gpuspans.Snapshot) {
	t.Helper()
	if err := Accounting(s); err != nil {
		t.Fatalf("gpuspans accounting: %v", err)
	}
}

// Snapshot takes a snapshot of h and checks its accounting with
// CheckAccounting: call it while no span call runs.
func Snapshot(t TB, h *gpuspans.Hub) gpuspans.Snapshot {
	t.Helper()
	s := h.Snapshot()
	CheckAccounting(t, &s)
	return s
}

// Log records log lines, as gpuspans.Options.Logf (or any printf-style
// logger) writes them. Unlike a test's t.Logf it stays usable after the
// test ends, as a hub may log from any goroutine. Its zero value is ready;
// its methods are safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	lines []string
}

// Logf records one line, formatted as fmt.Sprintf does.
func (l *Log) Logf(format string, args ...interface{}) {
	line := fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
}

// Lines returns a copy of the lines recorded so far, in order.
func (l *Log) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Count returns how many recorded lines contain sub.
func (l *Log) Count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n
}

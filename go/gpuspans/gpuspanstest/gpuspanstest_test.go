package gpuspanstest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

func TestAccounting(t *testing.T) {
	balanced := func() gpuspans.Snapshot {
		var s gpuspans.Snapshot
		s.Counters.Begun, s.Counters.Landed, s.Counters.InFlight, s.Counters.Errored = 10, 5, 2, 1
		s.Counters.Dropped[gpuspans.DropSlotBusy] = 2
		s.PerDevice = []gpuspans.DeviceCounters{
			{Device: 0, Begun: 6, Landed: 3, InFlight: 2, Errored: 1},
			{Device: 1, Begun: 4, Landed: 2, Dropped: [gpuspans.NumDropReasons]uint64{gpuspans.DropSlotBusy: 2}},
		}
		return s
	}
	for _, c := range []struct {
		name   string
		change func(*gpuspans.Snapshot)
		want   string // in the error; "" for none
	}{
		{"balanced", func(*gpuspans.Snapshot) {}, ""},
		{"empty", func(s *gpuspans.Snapshot) { *s = gpuspans.Snapshot{} }, ""},
		{"a span lost in total", func(s *gpuspans.Snapshot) { s.Counters.Begun++ }, "begun 11 != landed 5"},
		{"a span lost on a device", func(s *gpuspans.Snapshot) { s.PerDevice[1].Landed-- }, "device 1: begun 4"},
		{"devices short of the totals", func(s *gpuspans.Snapshot) { s.PerDevice = s.PerDevice[:1] }, "devices add up to begun 6"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := balanced()
			c.change(&s)
			err := gpuspanstest.Accounting(&s)
			if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
				t.Errorf("Accounting: %v; want %q", err, c.want)
			}
			var r recorder
			gpuspanstest.CheckAccounting(&r, &s)
			if (r.failed == "") != (c.want == "") {
				t.Errorf("CheckAccounting failed with %q; want %q", r.failed, c.want)
			}
		})
	}
}

// recorder is a TB that records the failure instead of stopping.
type recorder struct{ failed string }

func (*recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...interface{}) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestLogConcurrent(t *testing.T) {
	var log gpuspanstest.Log
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				log.Logf("goroutine %d line %d", g, i)
			}
		}(g)
	}
	wg.Wait()
	lines := log.Lines()
	if len(lines) != 400 || log.Count("goroutine 2 ") != 100 || log.Count("line 99") != 4 {
		t.Errorf("%d lines, %d from goroutine 2", len(lines), log.Count("goroutine 2 "))
	}
	lines[0] = "changed"
	if log.Count("changed") != 0 {
		t.Error("Lines shares the log's own slice")
	}
}

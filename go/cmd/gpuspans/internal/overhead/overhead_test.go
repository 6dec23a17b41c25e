package overhead

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRunWithoutGPU(t *testing.T) {
	var seen []string
	rows, note, err := Run(Options{
		Benchtime:     time.Millisecond,
		HarvestSpans:  64,
		HarvestRounds: 2,
		Backend:       "none",
		Progress:      func(name string) { seen = append(seen, name) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"disabled/kernel-span", "disabled/lane-span", "disabled/begin-step",
		"enabled/kernel-span/nop", "enabled/kernel-span/sim", "enabled/lane-span/sim",
		"harvest/nop", "harvest/sim",
	}
	if len(rows) != len(want) || strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("rows %+v, progress %v", rows, seen)
	}
	refs := 0
	for i, r := range rows {
		if r.Name != want[i] || r.NsOp <= 0 || r.What == "" {
			t.Errorf("row %d: %+v", i, r)
		}
		if r.Ref {
			refs++
		}
		if strings.HasPrefix(r.Name, "harvest/") != (r.Spans == 64) {
			t.Errorf("row %s: %d spans per op", r.Name, r.Spans)
		}
	}
	if refs != 1 || !rows[3].Ref {
		t.Errorf("%d reference rows; want the hub's own cost", refs)
	}
	if !strings.Contains(note, "--backend=none") {
		t.Errorf("note %q", note)
	}
	var b bytes.Buffer
	if err := Write(&b, rows, note); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"ns/op", "x enabled/kernel-span/nop", "what each row measures", "harvest/sim", "1.00\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
}

func TestRunUnknownBackend(t *testing.T) {
	if _, _, err := Run(Options{Benchtime: time.Millisecond, HarvestSpans: 8, HarvestRounds: 1, Backend: "tpu"}); err == nil {
		t.Error("unknown backend accepted")
	}
}

func TestNextOps(t *testing.T) {
	for _, c := range []struct {
		n          int
		took, want time.Duration
		next       int
	}{
		{1, time.Microsecond, time.Second, 100},            // at most a hundredfold
		{1000, 100 * time.Millisecond, time.Second, 12000}, // 20% past the target
		{10, time.Second, time.Millisecond, 11},            // at least one more
		{5, 0, time.Second, 500},                           // a run too quick to time
		{9e8, time.Millisecond, time.Second, 1e9},          // at most maxOps
	} {
		if got := nextOps(c.n, c.took, c.want); got != c.next {
			t.Errorf("nextOps(%d, %v, %v) = %d, want %d", c.n, c.took, c.want, got, c.next)
		}
	}
}

// The stopwatch times and counts only what runs between its start and
// stop.
func TestStopwatch(t *testing.T) {
	var sink []byte
	r, err := once(func(sw *stopwatch, n int) error {
		sink = make([]byte, 1<<20) // untimed: set-up
		sw.StartTimer()
		for i := 0; i < n; i++ {
			sink = make([]byte, 64)
		}
		sw.StopTimer()
		time.Sleep(20 * time.Millisecond) // untimed
		return nil
	}, 100)
	if err != nil || r.allocs != 1 || r.nsOp <= 0 || r.nsOp > float64(time.Millisecond) {
		t.Errorf("%+v, %v: want one allocation per op, and not the sleep", r, err)
	}
	_ = sink
}

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

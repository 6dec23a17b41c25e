package trace

import (
	"bytes"
	"testing"

	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/golden"
)

func TestGoldenTrace(t *testing.T) {
	f := golden.NewFixture(t)
	var b bytes.Buffer
	w := NewWriter(&b, Options{Origin: golden.Start.Truncate(1e9)})
	if err := w.WriteSpans(f.Hub.RecentSpans(0, nil)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/trace.golden.json", b.Bytes())
}

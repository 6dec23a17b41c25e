package summary

import (
	"bytes"
	"testing"

	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/golden"
)

func TestGoldenTable(t *testing.T) {
	f := golden.NewFixture(t)
	s := f.Hub.Snapshot()
	var b bytes.Buffer
	if err := Write(&b, FromSnapshot(&s)); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/summary.golden.txt", b.Bytes())
}

func TestGoldenGPUTime(t *testing.T) {
	g := golden.FullGPUTime()
	var b bytes.Buffer
	if err := WriteGPUTime(&b, &g); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/gputime.golden.txt", b.Bytes())
}

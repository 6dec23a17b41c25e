package debugpage

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/golden"
)

// The JSON the live page serves, indented so that a change reads as a
// diff of the fields it touches.
func TestGoldenSnapshotJSON(t *testing.T) {
	f := golden.NewFixture(t)
	mux := http.NewServeMux()
	Register(mux, f.Hub, Options{Backend: "simulated GPU", Now: f.Clock.Now})
	var b bytes.Buffer
	if err := json.Indent(&b, golden.Get(t, mux, SnapshotPath), "", "  "); err != nil {
		t.Fatal(err)
	}
	b.WriteByte('\n')
	golden.Check(t, "testdata/snapshot.golden.json", b.Bytes())
}

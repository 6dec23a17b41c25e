package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
)

// Every section runs against the fake driver and writes a result that the
// report can read: the GPU run is one shot, so its paths are tried here.
func TestSectionsOnFakeDriver(t *testing.T) {
	cudatest.UseFakeDriver()
	if err := cuda.Load(); err != nil {
		t.Skipf("no fake driver in this build: %v", err)
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	stderrLog = &stderr
	defer func() { stderrLog = os.Stderr }()
	rc := run([]string{"-fake", "-quick", "-out", dir}, &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if rc != 0 {
		t.Errorf("run returned %d", rc)
	}
	for _, s := range sections {
		b, err := os.ReadFile(filepath.Join(dir, "go-"+s.name+".json"))
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		var o struct {
			Section string                 `json:"section"`
			OK      bool                   `json:"ok"`
			Error   string                 `json:"error"`
			Fake    bool                   `json:"fake"`
			Result  map[string]interface{} `json:"result"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			t.Errorf("%s: %v", s.name, err)
			continue
		}
		if !o.OK || o.Section != s.name || !o.Fake || o.Result == nil {
			t.Errorf("%s: ok=%v section=%q fake=%v error=%q result=%v", s.name, o.OK, o.Section, o.Fake, o.Error, o.Result != nil)
		}
		// The checks a section makes of itself hold on the fake, which
		// loses nothing and times everything exactly.
		if v, present := o.Result["ok"]; present && v != true {
			t.Errorf("%s: result not ok: %s", s.name, b)
		}
	}
}

func TestUnknownSection(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if rc := run([]string{"-section", "nope", "-out", t.TempDir()}, &stdout, &stderr); rc != 2 {
		t.Errorf("run returned %d, want 2; stderr %s", rc, stderr.String())
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if q := quantile(xs, 0.5); q != 3 {
		t.Errorf("median %v", q)
	}
	if minOf(xs) != 1 || maxOf(xs) != 5 || quantile(nil, 0.5) != 0 || div(1, 0) != 0 {
		t.Error("helpers")
	}
}

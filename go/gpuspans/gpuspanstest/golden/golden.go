// Package golden compares what a test produces with a file under its
// package's testdata, and rewrites the file instead when the test binary
// runs with -update (see CONTRIBUTING.md for the command). Only tests
// import it: it registers the -update flag.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata with what the tests produce")

// Check fails t unless got equals the file at path (relative to the test's
// package directory, as "testdata/x.golden"), naming the first line that
// differs; with -update it writes got to path instead.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run the test with -update to write it", err)
	}
	if d := diff(want, got); d != "" {
		t.Errorf("%s is out of date (if the change is meant, run the test with -update):\n%s", path, d)
	}
}

// diff describes the first line where got differs from want, with a line
// of context before it; "" when they are equal.
func diff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	var b strings.Builder
	if i > 0 {
		fmt.Fprintf(&b, "  line %d: %s\n", i, w[i-1])
	}
	line := func(sign string, lines []string) {
		if i < len(lines) {
			fmt.Fprintf(&b, "%s line %d: %s\n", sign, i+1, lines[i])
		} else {
			fmt.Fprintf(&b, "%s line %d: (end of file)\n", sign, i+1)
		}
	}
	line("-", w)
	line("+", g)
	fmt.Fprintf(&b, "(want %d lines, got %d)", len(w), len(g))
	return b.String()
}

// Get serves a GET of path from h and returns the body; it fails t unless
// the status is 200.
func Get(t testing.TB, h http.Handler, path string) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

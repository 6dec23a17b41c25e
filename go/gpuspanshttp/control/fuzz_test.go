package control

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Seeds beyond these live in testdata/fuzz/<FuzzName>/, in the go test
// corpus format, so that plain "go test" replays them too.

func FuzzParseLevelRequest(f *testing.F) {
	f.Add("text/plain", []byte("kernel"))
	f.Add("application/json", []byte(`{"level":"step"}`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		l, err := parseLevelRequest(contentType, body)
		if err != nil {
			if l != 0 {
				t.Errorf("error %v with level %v", err, l)
			}
			return
		}
		if l.String() != "off" && l.String() != "step" && l.String() != "kernel" {
			t.Fatalf("accepted an undefined level %v", l)
		}
		// What was accepted reads back the same in both forms.
		if l2, err := parseLevelRequest("text/plain", []byte(l.String())); err != nil || l2 != l {
			t.Errorf("text round trip of %v: %v, %v", l, l2, err)
		}
		js, _ := json.Marshal(map[string]string{"level": l.String()})
		if l2, err := parseLevelRequest("application/json", js); err != nil || l2 != l {
			t.Errorf("JSON round trip of %v: %v, %v", l, l2, err)
		}
	})
}

func FuzzParseKernelSpanEveryRequest(f *testing.F) {
	f.Add("text/plain", []byte("16"))
	f.Add("application/json", []byte(`{"kernel_span_every":4}`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		n, err := parseKernelSpanEveryRequest(contentType, body)
		if err != nil {
			return
		}
		if n < 1 || n > gpuspans.MaxKernelSpanEvery {
			t.Fatalf("accepted %d from %q", n, body)
		}
		if n2, err := parseKernelSpanEveryRequest("", []byte(strconv.Itoa(n))); err != nil || n2 != n {
			t.Errorf("text round trip of %d: %d, %v", n, n2, err)
		}
	})
}

// FuzzEndpoints throws whole requests at the handlers: whatever comes in,
// the answer is one of the documented statuses and the hub stays valid.
func FuzzEndpoints(f *testing.F) {
	f.Add(uint8(0), "PUT", "text/plain", "", []byte("step"))
	f.Add(uint8(1), "POST", "application/json", "Bearer fuzz-token", []byte(`{"kernel_span_every":3}`))
	f.Fuzz(func(t *testing.T, which uint8, method, contentType, auth string, body []byte) {
		if !validMethod(method) {
			return // net/http refuses such a request line before any handler
		}
		hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		token := ""
		if which&2 != 0 {
			token = "fuzz-token"
		}
		mux := http.NewServeMux()
		Register(mux, hub, Options{Token: token, MaxBody: 64})
		path := LevelPath
		if which&1 != 0 {
			path = KernelSpanEveryPath
		}
		req := localRequest("GET", path, bytes.NewReader(body))
		req.Method = method
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 400, 401, 403, 405, 413, 415:
		default:
			t.Errorf("status %d for %s %s %q", rec.Code, method, path, body)
		}
		if l := hub.Level(); l.String() != "off" && l.String() != "step" && l.String() != "kernel" {
			t.Errorf("level %v", l)
		}
		if n := hub.KernelSpanEvery(); n < 1 || n > gpuspans.MaxKernelSpanEvery {
			t.Errorf("kernel_span_every %d", n)
		}
	})
}

// validMethod reports whether m is an HTTP token, as a request line needs.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return true
}

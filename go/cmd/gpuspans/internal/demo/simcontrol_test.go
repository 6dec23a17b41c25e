package demo

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp"
)

// TestSimControl slows decode by 20% through /control/sim and checks that
// the next steps' decode spans are 20% longer.
func TestSimControl(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{Lanes: []string{LanePrefill, LaneDecode}, Level: gpuspans.LevelKernel, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	gpu := NewSimGPU(0)
	if err := hub.Install(0, gpu.Stream(), gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	eng, err := NewEngine(hub, gpu, EngineConfig{Prefill: Kernels{{"p", 50 * time.Microsecond}}, Decode: Kernels{{"d", 100 * time.Microsecond}}})
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(hub, HandlerOptions{Options: gpuspanshttp.Options{Token: "secret"}, Engine: eng})
	do := func(method, body, token string) (int, string) {
		t.Helper()
		r := httptest.NewRequest(method, SimPath, strings.NewReader(body))
		if token != "" {
			scheme := "Bearer "
			if token == "lower" {
				scheme, token = "bearer ", "secret" // the scheme is case-insensitive, as on every control endpoint
			}
			r.Header.Set("Authorization", scheme+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code, rec.Body.String()
	}
	for _, c := range []struct {
		method, body, token string
		code                int
		reply               string
	}{
		{"POST", "decode=1.2", "", http.StatusUnauthorized, "a bearer token is required: Authorization: Bearer <token>\n"},
		{"POST", "decode=1.2", "wrong", http.StatusForbidden, "wrong token\n"},
		{"GET", "", "secret", http.StatusOK, "prefill=1 decode=1\n"},
		{"GET", "", "lower", http.StatusOK, "prefill=1 decode=1\n"},
		{"POST", "decode", "secret", http.StatusBadRequest, "body \"decode\": want lane=factor, as decode=1.2\n"},
		{"POST", "decode=fast", "secret", http.StatusBadRequest, "factor \"fast\": not a number\n"},
		{"POST", "decode=11", "secret", http.StatusBadRequest, "demo: scale 11 for lane decode outside 0.1..10\n"},
		{"POST", "decode=NaN", "secret", http.StatusBadRequest, "demo: scale NaN for lane decode outside 0.1..10\n"},
		{"POST", "draft=2", "secret", http.StatusBadRequest, "demo: no lane \"draft\": want prefill or decode\n"},
		{"POST", strings.Repeat("x", maxSimBody+1), "secret", http.StatusRequestEntityTooLarge, "body over 256 bytes\n"},
		{"DELETE", "", "secret", http.StatusMethodNotAllowed, "method DELETE not allowed on /control/sim\n"},
		{"POST", " decode = 1.2\n", "secret", http.StatusOK, "prefill=1 decode=1.2\n"},
	} {
		if code, reply := do(c.method, c.body, c.token); code != c.code || reply != c.reply {
			t.Errorf("%s %q: %d %q, want %d %q", c.method, c.body, code, reply, c.code, c.reply)
		}
	}
	for i := 0; i < 10; i++ {
		if err := eng.Step(); err != nil {
			t.Fatal(err)
		}
	}
	drain(hub)
	s := hub.Snapshot()
	// The simulator runs on the host clock: a loaded machine (the race
	// detector, CI) may start a kernel late, never early. So the shortest
	// span of 10 tells the scale: decode 1.2x, prefill untouched.
	if p, d := s.Lanes[0], s.Lanes[1]; p.Min < 50*time.Microsecond || p.Min >= 60*time.Microsecond || d.Min < 120*time.Microsecond || d.Min >= 132*time.Microsecond {
		t.Errorf("shortest prefill %v, decode %v: want 50us and 120us", p.Min, d.Min)
	}
}

package control

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Security properties of the endpoints that control_test.go does not pin:
// a configured body limit, no body read before the token is checked, and
// no token echoed in an answer. (That the token is compared in constant
// time holds by construction, subtle.ConstantTimeCompare over SHA-256
// digests; a timing test would only flake.)

// countingReader counts the bytes read from it and hides its length.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func TestMaxBodyOption(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	Register(mux, hub, Options{MaxBody: 16})
	put := func(body io.Reader) int {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("PUT", LevelPath, body))
		return rec.Code
	}
	over := "off" + strings.Repeat(" ", 14) // 17 bytes
	if code := put(strings.NewReader(over)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("17 bytes with a length: status %d", code)
	}
	big := &countingReader{r: strings.NewReader(over + strings.Repeat(" ", 1<<20))}
	if code := put(big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("1 MiB without a length: status %d", code)
	}
	if n := big.n.Load(); n > 64<<10 {
		t.Errorf("read %d bytes of a body over a 16-byte limit", n)
	}
	if hub.Level() != gpuspans.LevelKernel {
		t.Fatalf("a refused body changed the level to %v", hub.Level())
	}
	if code := put(strings.NewReader(over[:16])); code != http.StatusOK || hub.Level() != gpuspans.LevelOff {
		t.Errorf("16 bytes: status %d, level %v", code, hub.Level())
	}
}

func TestNoBodyReadBeforeTheToken(t *testing.T) {
	_, h := newAPI(t, "the-token")
	for _, auth := range []string{"", "Bearer wrong", "Basic the-token"} {
		body := &countingReader{r: strings.NewReader(strings.Repeat("k", 1<<20))}
		req := httptest.NewRequest("PUT", KernelSpanEveryPath, body)
		req.ContentLength = -1
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized && rec.Code != http.StatusForbidden {
			t.Errorf("auth %q: status %d", auth, rec.Code)
		}
		if n := body.n.Load(); n != 0 {
			t.Errorf("auth %q: %d body bytes read before the token was checked", auth, n)
		}
	}
}

func TestAnswersEchoNoToken(t *testing.T) {
	const token, guess = "configured-s3cret", "guessed-s3cret"
	_, h := newAPI(t, token)
	for _, c := range []struct{ auth, accept string }{
		{"", ""},
		{"Bearer " + guess, ""},
		{"Bearer " + guess, "application/json"},
		{"Bearer " + token[:10], ""},
		{"Bearer " + token + "x", "application/json"},
	} {
		req := httptest.NewRequest("PUT", LevelPath, strings.NewReader("off"))
		req.Header.Set("Authorization", c.auth)
		req.Header.Set("Accept", c.accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		answer := rec.Body.String()
		for k, v := range rec.Header() {
			answer += k + ": " + strings.Join(v, ",") + "\n"
		}
		if rec.Code == http.StatusOK || strings.Contains(answer, "s3cret") {
			t.Errorf("auth %q: status %d, answer %q", c.auth, rec.Code, answer)
		}
	}
}

func TestCheckToken(t *testing.T) {
	for tok, ok := range map[string]bool{
		"": true, "s3cret": true, "a-b_c.d~e+f/g=": true, "ключ": true,
		" ": false, "\t\n": false, " s3cret": false, "a b": false, "a\x00b": false, "a\x7fb": false, "\xff": false,
	} {
		if err := CheckToken(tok); (err == nil) != ok {
			t.Errorf("CheckToken(%q) = %v", tok, err)
		}
	}
	// A blank token is no token: a public address is refused.
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 80}
	if err := CheckListen(addr, " "); err == nil {
		t.Error("CheckListen accepted a blank token on a public address")
	}
	if err := CheckListen(addr, "s3cret"); err != nil {
		t.Errorf("CheckListen with a token: %v", err)
	}
}

func TestProtect(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "metrics") })
	if Protect(inner, "") == nil {
		t.Fatal("Protect with no token")
	}
	h := Protect(inner, "s3cret")
	for auth, want := range map[string]int{"": 401, "Basic s3cret": 401, "Bearer nope": 403, "Bearer s3cret": 200, "bearer  s3cret ": 200} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want || (want == 200) != (rec.Body.String() == "metrics") || strings.Contains(rec.Body.String(), "s3cret") {
			t.Errorf("%q: %d %q, want %d", auth, rec.Code, rec.Body.String(), want)
		}
	}
}

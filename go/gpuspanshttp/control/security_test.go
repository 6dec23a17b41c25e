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
		mux.ServeHTTP(rec, localRequest("PUT", LevelPath, body))
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
		req := localRequest("PUT", KernelSpanEveryPath, body)
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
		req := localRequest("PUT", LevelPath, strings.NewReader("off"))
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
		req := localRequest("GET", "/metrics", nil)
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

// Without a token, what a web page of another site could send is refused
// before anything changes: another site's Host (DNS rebinding), a foreign
// or null Origin, a cross-site Sec-Fetch-Site, and a POST a form or a
// CORS-free fetch can make. What curl, scripts and same-origin pages send
// is served.
func TestCrossSiteRefusedWithoutToken(t *testing.T) {
	for _, c := range []struct {
		name, method, host, contentType string
		headers                         map[string]string
		status                          int
	}{
		{"form POST, text/plain, foreign Origin", "POST", "127.0.0.1:9464", "text/plain", map[string]string{"Origin": "https://evil.example"}, 403},
		{"form POST, no Origin (an old browser)", "POST", "127.0.0.1:9464", "application/x-www-form-urlencoded", nil, 415},
		{"fetch POST, text/plain, no Origin", "POST", "127.0.0.1:9464", "text/plain;charset=UTF-8", nil, 415},
		{"POST, multipart", "POST", "localhost:9464", "multipart/form-data; boundary=x", nil, 415},
		{"POST, no Content-Type", "POST", "127.0.0.1:9464", "", nil, 415},
		{"DNS rebinding", "PUT", "evil.example:9464", "", nil, 403},
		{"DNS rebinding, GET", "GET", "rebind.evil.example", "", nil, 403},
		{"null Origin", "PUT", "127.0.0.1:9464", "", map[string]string{"Origin": "null"}, 403},
		{"foreign Origin on a PUT", "PUT", "127.0.0.1:9464", "", map[string]string{"Origin": "http://127.0.0.1:8000"}, 403},
		{"Sec-Fetch-Site cross-site", "PUT", "127.0.0.1:9464", "application/json", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"Sec-Fetch-Site same-site", "PUT", "127.0.0.1:9464", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"curl PUT", "PUT", "127.0.0.1:9464", "application/x-www-form-urlencoded", nil, 200},
		{"PUT by localhost", "PUT", "localhost:9464", "", nil, 200},
		{"PUT by [::1]", "PUT", "[::1]:9464", "", nil, 200},
		{"PUT with no Host (HTTP/1.0)", "PUT", "", "", nil, 200},
		{"POST JSON", "POST", "127.0.0.1:9464", "application/json", nil, 200},
		{"same-origin page", "PUT", "127.0.0.1:9464", "", map[string]string{"Origin": "http://127.0.0.1:9464", "Sec-Fetch-Site": "same-origin"}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			hub, h := newAPI(t, "")
			body := "step"
			if strings.HasPrefix(c.contentType, "application/json") {
				body = `{"level":"step"}`
			}
			req := localRequest(c.method, LevelPath, strings.NewReader(body))
			req.Host = c.host
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Errorf("status %d, want %d: %s", rec.Code, c.status, rec.Body.String())
			}
			changed := hub.Level() == gpuspans.LevelStep
			if want := c.status == 200 && c.method != "GET"; changed != want {
				t.Errorf("level %v after the request (status %d)", hub.Level(), rec.Code)
			}
		})
	}
	// With a token the checks do not apply: the bearer header is the proof.
	hub, h := newAPI(t, "tok")
	req := localRequest("POST", LevelPath, strings.NewReader("step"))
	req.Host = "gpu-7.internal:9464"
	req.Header.Set("Authorization", "Bearer tok")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || hub.Level() != gpuspans.LevelStep {
		t.Errorf("with a token: status %d, level %v", rec.Code, hub.Level())
	}
}

// RefuseCrossSite puts another handler behind the same checks.
func TestRefuseCrossSite(t *testing.T) {
	called := 0
	h := RefuseCrossSite(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called++ }), "")
	req := localRequest("POST", "/control/sim", strings.NewReader("decode=2"))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Origin", "https://evil.example")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 403 || called != 0 {
		t.Errorf("cross-site POST: status %d, handler called %d times", rec.Code, called)
	}
	req = localRequest("POST", "/control/sim", strings.NewReader("decode=2"))
	req.Header.Set("Content-Type", "application/octet-stream")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if called != 1 {
		t.Errorf("a loopback POST was not served")
	}
	if g := RefuseCrossSite(h, "tok"); g == nil {
		t.Error("nil handler with a token")
	}
}

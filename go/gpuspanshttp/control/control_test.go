package control

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

func newAPI(t testing.TB, token string) (*gpuspans.Hub, http.Handler) {
	t.Helper()
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	Register(mux, hub, Options{Token: token})
	return hub, mux
}

// localRequest is httptest.NewRequest as a client of a loopback server
// sends it: Host 127.0.0.1 (httptest's example.com would be refused
// without a token, as a name that DNS rebinding could point here).
func localRequest(method, target string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	req.Host = "127.0.0.1:9464"
	return req
}

// unsized hides a body's length, as a chunked upload does, so that the
// size limit is enforced while reading rather than from Content-Length.
type unsized struct{ io.Reader }

func TestEndpoints(t *testing.T) {
	const token = "s3cret-token"
	big := strings.Repeat("k", DefaultMaxBody+1)
	type tc struct {
		name        string
		token       string // configured on the server
		method      string
		path        string
		contentType string
		accept      string
		auth        string
		body        io.Reader
		status      int
		contains    string
		level       string // after the request; "" for unchanged
		every       int    // after the request; 0 for unchanged
	}
	lvl, evy := gpuspans.LevelKernel, gpuspans.DefaultKernelSpanEvery
	cases := []tc{
		{name: "get level", method: "GET", path: LevelPath, status: 200, contains: "kernel\n"},
		{name: "head level", method: "HEAD", path: LevelPath, status: 200},
		{name: "get level as JSON", method: "GET", path: LevelPath, accept: "text/html, application/json;q=0.9", status: 200, contains: `{"level":"kernel"}`},
		{name: "put level", method: "PUT", path: LevelPath, body: strings.NewReader("step"), status: 200, contains: "step\n", level: "step"},
		{name: "put level, spaces and case", method: "PUT", path: LevelPath, body: strings.NewReader("  OFF\r\n"), status: 200, contains: "off\n", level: "off"},
		{name: "post level as text, with a token", token: token, auth: "Bearer " + token, method: "POST", path: LevelPath, contentType: "text/plain", body: strings.NewReader("off"), status: 200, level: "off"},
		{name: "form content type is text", method: "PUT", path: LevelPath, contentType: "application/x-www-form-urlencoded", body: strings.NewReader("step"), status: 200, level: "step"},
		{name: "bad level", method: "PUT", path: LevelPath, body: strings.NewReader("loud"), status: 400, contains: `bad level "loud": want off, step or kernel`},
		{name: "empty level", method: "PUT", path: LevelPath, body: strings.NewReader(""), status: 400, contains: "bad level"},
		{name: "level number", method: "PUT", path: LevelPath, body: strings.NewReader("2"), status: 400, contains: "bad level"},
		{name: "binary body", method: "PUT", path: LevelPath, body: strings.NewReader("k\x00\x01"), status: 400, contains: "not printable text"},
		{name: "invalid UTF-8", method: "PUT", path: LevelPath, body: strings.NewReader("\xff\xfe"), status: 400, contains: "not printable text"},
		{name: "long bad value is truncated", method: "PUT", path: LevelPath, body: strings.NewReader(strings.Repeat("x", 500)), status: 400, contains: strings.Repeat("x", 32) + `..."`},
		{name: "JSON level", method: "PUT", path: LevelPath, contentType: "application/json", body: strings.NewReader(`{"level":"step"}`), status: 200, contains: `{"level":"step"}`, level: "step"},
		{name: "JSON with charset", method: "POST", path: LevelPath, contentType: "application/json; charset=utf-8", body: strings.NewReader(`{"level":"off"}`), status: 200, level: "off"},
		{name: "JSON bad level", method: "PUT", path: LevelPath, contentType: "application/json", body: strings.NewReader(`{"level":"nope"}`), status: 400, contains: `{"error":"bad level \"nope\"`},
		{name: "JSON unknown field", method: "PUT", path: LevelPath, contentType: "application/json", body: strings.NewReader(`{"level":"step","x":1}`), status: 400, contains: "unknown field"},
		{name: "JSON wrong type", method: "PUT", path: LevelPath, contentType: "application/json", body: strings.NewReader(`{"level":2}`), status: 400, contains: "bad JSON body"},
		{name: "JSON missing field", method: "PUT", path: LevelPath, contentType: "application/json", body: strings.NewReader(`{}`), status: 400, contains: `no \"level\" field`},
		{name: "JSON null", method: "PUT", path: LevelPath, contentType: "application/json", body: strings.NewReader(`null`), status: 400, contains: "field"},
		{name: "JSON trailing data", method: "PUT", path: LevelPath, contentType: "application/json", body: strings.NewReader(`{"level":"step"} {}`), status: 400, contains: "data after the object"},
		{name: "JSON not JSON", method: "PUT", path: LevelPath, contentType: "application/json", body: strings.NewReader(`step`), status: 400, contains: "bad JSON body"},
		{name: "delete", method: "DELETE", path: LevelPath, status: 405, contains: "not allowed"},
		{name: "patch", method: "PATCH", path: KernelSpanEveryPath, body: strings.NewReader("4"), status: 405},
		{name: "body too large", method: "PUT", path: LevelPath, body: strings.NewReader(big), status: 413, contains: "body over 1024 bytes"},
		{name: "body too large, no length", method: "PUT", path: LevelPath, body: unsized{strings.NewReader(big)}, status: 413},
		{name: "body at the limit", method: "PUT", path: LevelPath, body: strings.NewReader("step" + strings.Repeat(" ", DefaultMaxBody-4)), status: 200, level: "step"},

		{name: "get every", method: "GET", path: KernelSpanEveryPath, status: 200, contains: "16\n"},
		{name: "put every", method: "PUT", path: KernelSpanEveryPath, body: strings.NewReader("4\n"), status: 200, contains: "4\n", every: 4},
		{name: "every max", method: "PUT", path: KernelSpanEveryPath, body: strings.NewReader("1000000"), status: 200, every: gpuspans.MaxKernelSpanEvery},
		{name: "every zero", method: "PUT", path: KernelSpanEveryPath, body: strings.NewReader("0"), status: 400, contains: "want an integer from 1 to 1000000"},
		{name: "every negative", method: "PUT", path: KernelSpanEveryPath, body: strings.NewReader("-3"), status: 400},
		{name: "every over max", method: "PUT", path: KernelSpanEveryPath, body: strings.NewReader("1000001"), status: 400},
		{name: "every overflow", method: "PUT", path: KernelSpanEveryPath, body: strings.NewReader("99999999999999999999999"), status: 400},
		{name: "every fraction", method: "PUT", path: KernelSpanEveryPath, body: strings.NewReader("1.5"), status: 400},
		{name: "every word", method: "PUT", path: KernelSpanEveryPath, body: strings.NewReader("often"), status: 400},
		{name: "every JSON", method: "POST", path: KernelSpanEveryPath, contentType: "application/json", body: strings.NewReader(`{"kernel_span_every":8}`), status: 200, contains: `{"kernel_span_every":8}`, every: 8},
		{name: "every JSON fraction", method: "POST", path: KernelSpanEveryPath, contentType: "application/json", body: strings.NewReader(`{"kernel_span_every":8.5}`), status: 400},
		{name: "every JSON exponent", method: "POST", path: KernelSpanEveryPath, contentType: "application/json", body: strings.NewReader(`{"kernel_span_every":1e3}`), status: 400},

		{name: "token: missing", token: token, method: "GET", path: LevelPath, status: 401, contains: "bearer token is required"},
		{name: "token: other scheme", token: token, method: "GET", path: LevelPath, auth: "Basic " + token, status: 401},
		{name: "token: scheme only", token: token, method: "GET", path: LevelPath, auth: "Bearer", status: 401},
		{name: "token: wrong", token: token, method: "PUT", path: LevelPath, auth: "Bearer nope", body: strings.NewReader("off"), status: 403, contains: "wrong token"},
		{name: "token: empty", token: token, method: "PUT", path: LevelPath, auth: "Bearer ", body: strings.NewReader("off"), status: 403},
		{name: "token: prefix of the right one", token: token, method: "PUT", path: LevelPath, auth: "Bearer s3cret", body: strings.NewReader("off"), status: 403},
		{name: "token: wrong, JSON", token: token, method: "PUT", path: LevelPath, auth: "Bearer nope", contentType: "application/json", body: strings.NewReader(`{"level":"off"}`), status: 403, contains: `{"error":"wrong token"}`},
		{name: "token: right", token: token, method: "PUT", path: LevelPath, auth: "Bearer " + token, body: strings.NewReader("off"), status: 200, level: "off"},
		{name: "token: right, any case scheme", token: token, method: "PUT", path: KernelSpanEveryPath, auth: "bearer " + token, body: strings.NewReader("2"), status: 200, every: 2},
		{name: "token: checked before the method", token: token, method: "DELETE", path: LevelPath, status: 401},
		{name: "token: right, bad value", token: token, method: "PUT", path: LevelPath, auth: "Bearer " + token, body: strings.NewReader("max"), status: 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hub, h := newAPI(t, c.token)
			body := c.body
			if body == nil {
				body = http.NoBody
			}
			req := localRequest(c.method, c.path, body)
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			if c.accept != "" {
				req.Header.Set("Accept", c.accept)
			}
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.status {
				t.Errorf("status %d, want %d; body %q", rec.Code, c.status, rec.Body.String())
			}
			if !strings.Contains(rec.Body.String(), c.contains) {
				t.Errorf("body %q does not contain %q", rec.Body.String(), c.contains)
			}
			switch rec.Code {
			case 401:
				if rec.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			case 405:
				if rec.Header().Get("Allow") != "GET, HEAD, PUT, POST" {
					t.Errorf("405 with Allow %q", rec.Header().Get("Allow"))
				}
			}
			wantLevel, wantEvery := lvl, evy
			if c.level != "" {
				wantLevel, _ = gpuspans.ParseLevel(c.level)
			}
			if c.every != 0 {
				wantEvery = c.every
			}
			if got := hub.Level(); got != wantLevel {
				t.Errorf("level %v after the request, want %v", got, wantLevel)
			}
			if got := hub.KernelSpanEvery(); got != wantEvery {
				t.Errorf("kernel_span_every %d after the request, want %d", got, wantEvery)
			}
		})
	}
}

// Responses to JSON requests are JSON, errors included, so scripts can
// parse every answer.
func TestJSONResponsesParse(t *testing.T) {
	_, h := newAPI(t, "")
	for _, body := range []string{`{"level":"step"}`, `{"level":"x"}`, `{`, strings.Repeat("{", 2000)} {
		req := localRequest("PUT", LevelPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var v map[string]interface{}
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Errorf("body %.20q: response %q is not JSON: %v", body, rec.Body.String(), err)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Errorf("body %.20q: Content-Type %q", body, ct)
		}
	}
}

func TestLogf(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel})
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	mux := http.NewServeMux()
	Register(mux, hub, Options{Logf: func(f string, a ...interface{}) { logged = append(logged, f) }})
	for _, v := range []string{"step", "step", "bad"} {
		mux.ServeHTTP(httptest.NewRecorder(), localRequest("PUT", LevelPath, strings.NewReader(v)))
	}
	if len(logged) != 1 {
		t.Errorf("logged %d changes, want 1 (a repeat and a refusal change nothing): %q", len(logged), logged)
	}
}

func TestCheckListen(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 9464} }
	for _, c := range []struct {
		addr  net.Addr
		token string
		ok    bool
	}{
		{tcp("127.0.0.1"), "", true},
		{tcp("127.0.0.2"), "", true},
		{tcp("::1"), "", true},
		{tcp("0.0.0.0"), "", false},
		{tcp("::"), "", false},
		{tcp("192.0.2.7"), "", false},
		{tcp("0.0.0.0"), "t", true},
		{tcp("192.0.2.7"), "t", true},
		{&net.UnixAddr{Name: "/tmp/x", Net: "unix"}, "", false},
	} {
		err := CheckListen(c.addr, c.token)
		if (err == nil) != c.ok {
			t.Errorf("CheckListen(%v, %q) = %v, want ok %v", c.addr, c.token, err, c.ok)
		}
	}
}

// A real listener on the default loopback address passes without a token.
func TestCheckListenLoopbackListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := CheckListen(ln.Addr(), ""); err != nil {
		t.Errorf("loopback listener refused: %v", err)
	}
}

func TestKernelTimingEndpoint(t *testing.T) {
	open := func(backend.TracerMode) (backend.KernelTracer, error) {
		return nil, errors.New("no CUPTI in this test")
	}
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, Logf: t.Logf, KernelTracer: open})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	Register(mux, hub, Options{})
	do := func(method, contentType, body string) (int, string) {
		req := localRequest(method, KernelTimingPath, strings.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, c := range []struct {
		method, contentType, body string
		status                    int
		contains                  string
		want                      gpuspans.KernelTiming
	}{
		{"GET", "", "", 200, "events\n", gpuspans.KernelTimingEvents},
		{"PUT", "", " Auto\n", 200, "auto\n", gpuspans.KernelTimingAuto},
		{"POST", "application/json", `{"kernel_timing":"cupti"}`, 200, `{"kernel_timing":"cupti"}`, gpuspans.KernelTimingCUPTI},
		{"PUT", "", "nvtx", 400, `bad kernel_timing "nvtx": want events, auto, cupti or attached`, gpuspans.KernelTimingCUPTI},
		{"POST", "text/plain", "events", 415, "", gpuspans.KernelTimingCUPTI}, // a form's POST, no token
		{"PUT", "", "events", 200, "events\n", gpuspans.KernelTimingEvents},
	} {
		status, body := do(c.method, c.contentType, c.body)
		if status != c.status || !strings.Contains(body, c.contains) {
			t.Errorf("%s %q: %d %q, want %d containing %q", c.method, c.body, status, body, c.status, c.contains)
		}
		if got := hub.KernelTiming(); got != c.want {
			t.Errorf("%s %q: kernel timing %v after, want %v", c.method, c.body, got, c.want)
		}
	}

	// Kernel windows on demand: refused at events, then requested at auto.
	win := func(method, body string) (int, string) {
		req := localRequest(method, KernelWindowPath, strings.NewReader(body))
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	if code, body := win("PUT", "open"); code != 400 || !strings.Contains(body, "kernel timing is events") {
		t.Errorf("a window at events: %d %q", code, body)
	}
	if err := hub.SetKernelTiming(gpuspans.KernelTimingAuto); err != nil {
		t.Fatal(err)
	}
	if code, body := win("PUT", "shut"); code != 400 || !strings.Contains(body, `bad kernel_window "shut": want open`) {
		t.Errorf("a bad window value: %d %q", code, body)
	}
	if code, body := win("PUT", " Open\n"); code != 200 || body != "requested\n" {
		t.Errorf("a window request: %d %q", code, body)
	}
	if code, body := win("GET", ""); code != 200 || body != "closed\n" {
		t.Errorf("GET kernel_window: %d %q", code, body)
	}
	hub.BeginStep() // the request meets a tracer that cannot open: events, and a reason
	if code, body := win("PUT", "open"); code != 400 || !strings.Contains(body, "no CUPTI in this test") {
		t.Errorf("a window after the fallback: %d %q", code, body)
	}

	// A hub that cannot trace says so, by the option that is missing.
	_, mux2 := newAPI(t, "")
	req := localRequest("PUT", KernelTimingPath, strings.NewReader("auto"))
	rec := httptest.NewRecorder()
	mux2.ServeHTTP(rec, req)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "no Options.KernelTracer") {
		t.Errorf("auto without a tracer: %d %q", rec.Code, rec.Body.String())
	}
}

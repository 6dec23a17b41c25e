// Package control serves a hub's runtime controls over HTTP, for operators
// who need to turn GPU spans up or down on a running server:
//
//	GET         /control/level              the level: off, step or kernel
//	PUT or POST /control/level              set it
//	GET         /control/kernel_span_every  arm kernel spans on one step in N
//	PUT or POST /control/kernel_span_every  set N (1..gpuspans.MaxKernelSpanEvery, the hub's bound)
//	GET         /control/kernel_timing      where kernel spans come from: events, auto, cupti or attached
//	PUT or POST /control/kernel_timing      set it: "events" releases CUPTI for a profiler,
//	                                        "auto" takes it again (gpuspans.Hub.SetKernelTiming)
//	GET         /control/kernel_window      "open" while a kernel window collects, else "closed"
//	PUT or POST /control/kernel_window      "open": a window at the next step, whatever the period
//	                                        (gpuspans.Hub.RequestKernelWindow); answers "requested"
//
// (Without a token, a POST must carry a Content-Type no HTML form can
// send, such as application/json: see Exposure below. PUT never needs one.)
//
// A request body is plain text ("kernel", "8"; surrounding white space
// ignored) unless its Content-Type is application/json, in which case it is
// an object with the one field named like the endpoint:
// {"level":"kernel"}, {"kernel_span_every":8}, {"kernel_timing":"auto"},
// {"kernel_window":"open"}. Responses are plain text
// ("kernel\n") unless the request's body was JSON or its Accept header asks
// for application/json; then they are the same JSON objects, and errors are
// {"error":"..."}.
//
// Status codes: 200 with the value now in force; 400 for a value that does
// not parse or is out of range, with the reason; 401 when a token is
// configured and the request has no bearer token; 403 when it has the wrong
// one; 405 for another method (the Allow header lists the right ones); 413
// for a body over Options.MaxBody bytes.
//
// Exposure: these endpoints change what a production server records, so
// CheckListen refuses a listener that other hosts can reach unless a token
// is set, and the token, once set, is required on every request, compared
// in constant time.
//
// Without a token (allowed on loopback only), the endpoints refuse what a
// web page in the operator's browser could send them, with 403 and the
// reason: a Host header that is not a loopback address or "localhost"
// (another site's name resolving to 127.0.0.1: DNS rebinding); an Origin
// header naming another origin than Host, or "null"; a Sec-Fetch-Site
// header other than same-origin or none; and a POST whose Content-Type is
// one an HTML form or a CORS-free fetch can send (none,
// application/x-www-form-urlencoded, multipart/form-data, text/plain),
// answered 415: send PUT, or POST with another Content-Type
// (application/json). curl, scripts and the live page are not affected;
// RefuseCrossSite puts another handler (the demo's /control/sim) behind
// the same checks. With a token none of this applies: a browser cannot
// send the bearer header to another site without a preflight these
// endpoints never grant.
//
// The package's functions and handlers are safe for concurrent use.
package control

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Paths of the endpoints.
const (
	LevelPath           = "/control/level"
	KernelSpanEveryPath = "/control/kernel_span_every"
	KernelTimingPath    = "/control/kernel_timing"
	KernelWindowPath    = "/control/kernel_window"
)

// DefaultMaxBody is Options.MaxBody's default: a value is a few bytes.
const DefaultMaxBody = 1 << 10

// Options configures the endpoints: a plain value, read once by Register.
type Options struct {
	// Token, when not empty, is required on every request as
	// "Authorization: Bearer <token>".
	Token string
	// MaxBody bounds request bodies in bytes (0: DefaultMaxBody).
	MaxBody int64
	// Logf, when set, is told of every change: what, from what, to what, and
	// the client's address.
	Logf func(format string, args ...interface{})
}

// Mux is where Register adds its handlers; *http.ServeMux is one. Register
// calls Handle from the caller's goroutine, before serving starts.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds the endpoints for hub to mux. The handlers are safe for
// concurrent use; they call only the hub's setters and getters, which are.
func Register(mux Mux, hub *gpuspans.Hub, o Options) {
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	a := &api{hub: hub, o: o}
	if o.Token != "" {
		sum := sha256.Sum256([]byte(o.Token))
		a.tokenSum = sum[:]
	}
	mux.Handle(LevelPath, a.endpoint("level", a.getLevel, a.setLevel))
	mux.Handle(KernelSpanEveryPath, a.endpoint("kernel_span_every", a.getEvery, a.setEvery))
	mux.Handle(KernelTimingPath, a.endpoint("kernel_timing", a.getTiming, a.setTiming))
	mux.Handle(KernelWindowPath, a.endpoint("kernel_window", a.getWindow, a.setWindow))
}

// CheckListen reports whether serving the endpoints on addr is allowed: a
// loopback address always is, any other only with a token. addr is the
// bound address (net.Listener.Addr), so "localhost" and ":0" have been
// resolved to the address actually used.
func CheckListen(addr net.Addr, token string) error {
	if err := CheckToken(token); err != nil {
		return err
	}
	if token != "" {
		return nil
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("control: %v is not a loopback address: other hosts could change the telemetry level; set a token (Options.Token) or listen on 127.0.0.1", addr)
}

// CheckToken reports whether token can serve as a bearer token: "" (none),
// or printable text without white space. A blank token, or one with white
// space or a control character, could never match what a client sends
// (the header's value is trimmed, and cannot hold a control character),
// yet would pass for a token at CheckListen.
func CheckToken(token string) error {
	if token == "" {
		return nil
	}
	if strings.TrimSpace(token) == "" {
		return errors.New("control: the token is blank")
	}
	if !utf8.ValidString(token) {
		return errors.New("control: the token is not valid UTF-8")
	}
	for _, r := range token {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("control: the token has white space or a control character (%U): no bearer header could carry it", r)
		}
	}
	return nil
}

// Protect returns h behind the same bearer token check as the endpoints:
// 401 without a token, 403 with a wrong one, both before h sees the
// request. With token "" it returns h. A serving binary uses it for the
// pages it serves next to the endpoints (/metrics, the live page) when it
// wants them private too. Check the token with CheckToken first.
func Protect(h http.Handler, token string) http.Handler {
	if token == "" {
		return h
	}
	sum := sha256.Sum256([]byte(token))
	a := &api{tokenSum: sum[:]}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.authorize(r); err != nil {
			a.fail(w, wantsJSON(r), err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// RefuseCrossSite returns h behind the checks the endpoints make when no
// token is set (see the package documentation): requests a web page of
// another site could make are answered 403 (415 for a form's POST) before
// h sees them. With a token it returns h, which should check the token.
func RefuseCrossSite(h http.Handler, token string) http.Handler {
	if token != "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := crossSite(r); err != nil {
			(&api{}).fail(w, wantsJSON(r), err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// crossSite returns why r may come from a web page of another site, or nil.
func crossSite(r *http.Request) error {
	if r.Host != "" && !loopbackHost(r.Host) {
		return &httpError{http.StatusForbidden, fmt.Sprintf("Host %q is not a loopback address or localhost: with no token set, only requests to this machine by its loopback name are served (a page of another site reaching it through DNS rebinding is not)", truncate(r.Host))}
	}
	if o, ok := r.Header["Origin"]; ok {
		if len(o) != 1 || !sameOrigin(o[0], r.Host) {
			return &httpError{http.StatusForbidden, fmt.Sprintf("Origin %q is not this server's: with no token set, cross-site requests are refused", truncate(strings.Join(o, ", ")))}
		}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return &httpError{http.StatusForbidden, fmt.Sprintf("Sec-Fetch-Site is %q: with no token set, cross-site requests are refused", truncate(site))}
	}
	if r.Method == http.MethodPost && formContentType(r.Header.Get("Content-Type")) {
		return &httpError{http.StatusUnsupportedMediaType, "a POST with no Content-Type or a form's (text/plain, application/x-www-form-urlencoded, multipart/form-data) could come from another site's page: send PUT, or POST with Content-Type: application/json"}
	}
	return nil
}

// loopbackHost reports whether a Host header names this machine by a name
// no DNS answer can change: a loopback IP, localhost, or a name under
// .localhost.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// sameOrigin reports whether an Origin header names the origin served at
// host (the request's Host header).
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null", or not an origin
	}
	if host == "" {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

// formContentType reports whether a request's Content-Type is one a form,
// or a fetch needing no CORS preflight, can send.
func formContentType(contentType string) bool {
	if strings.TrimSpace(contentType) == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return true // unparsable: a browser sends it as it is
	}
	switch mt {
	case "application/x-www-form-urlencoded", "multipart/form-data", "text/plain":
		return true
	}
	return false
}

// api holds the endpoints' shared state, fixed at Register.
type api struct {
	hub      *gpuspans.Hub
	o        Options
	tokenSum []byte // SHA-256 of the token, or nil when none is required
}

// httpError is an error with the status it maps to.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...interface{}) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// endpoint serves one control: GET reads it with get; PUT and POST parse
// the body for field and apply it with set, which returns the old value.
func (a *api) endpoint(field string, get func() string, set func(contentType string, body []byte) (old, now string, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		asJSON := wantsJSON(r)
		if a.tokenSum == nil {
			if err := crossSite(r); err != nil {
				a.fail(w, asJSON, err)
				return
			}
		}
		if err := a.authorize(r); err != nil {
			if e := (*httpError)(nil); errors.As(err, &e) && e.status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="gpuspans control"`)
			}
			a.fail(w, asJSON, err)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			a.reply(w, asJSON, field, get())
		case http.MethodPut, http.MethodPost:
			body, err := readBody(w, r, a.o.MaxBody)
			if err != nil {
				a.fail(w, asJSON, err)
				return
			}
			old, now, err := set(r.Header.Get("Content-Type"), body)
			if err != nil {
				a.fail(w, asJSON, err)
				return
			}
			if a.o.Logf != nil && old != now {
				a.o.Logf("control: %s %s -> %s (from %s)", field, old, now, r.RemoteAddr)
			}
			a.reply(w, asJSON, field, now)
		default:
			w.Header().Set("Allow", "GET, HEAD, PUT, POST")
			a.fail(w, asJSON, &httpError{http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: GET reads %s, PUT or POST sets it", r.Method, field)})
		}
	})
}

// authorize checks the bearer token, when one is required. Both sides are
// hashed first so that the constant-time comparison does not leak the
// token's length either.
func (a *api) authorize(r *http.Request) error {
	if a.tokenSum == nil {
		return nil
	}
	auth := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(auth, " ")
	if auth == "" || !ok || !strings.EqualFold(scheme, "Bearer") {
		return &httpError{http.StatusUnauthorized, "a bearer token is required: Authorization: Bearer <token>"}
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(sum[:], a.tokenSum) != 1 {
		return &httpError{http.StatusForbidden, "wrong token"}
	}
	return nil
}

// readBody reads at most max bytes of the body; more is a 413.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength > max {
		return nil, tooLarge(max)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(max)
		}
		return nil, badRequest("reading the body: %v", err)
	}
	return body, nil
}

func tooLarge(max int64) error {
	return &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("body over %d bytes", max)}
}

func (a *api) getLevel() string { return a.hub.Level().String() }

func (a *api) setLevel(contentType string, body []byte) (string, string, error) {
	l, err := ParseLevelRequest(contentType, body)
	if err != nil {
		return "", "", err
	}
	old := a.hub.Level()
	if err := a.hub.SetLevel(l); err != nil {
		return "", "", badRequest("%v", err)
	}
	return old.String(), l.String(), nil
}

func (a *api) getEvery() string { return strconv.Itoa(a.hub.KernelSpanEvery()) }

func (a *api) setEvery(contentType string, body []byte) (string, string, error) {
	n, err := ParseKernelSpanEveryRequest(contentType, body)
	if err != nil {
		return "", "", err
	}
	old := a.hub.KernelSpanEvery()
	if err := a.hub.SetKernelSpanEvery(n); err != nil {
		return "", "", badRequest("%v", err)
	}
	return strconv.Itoa(old), strconv.Itoa(n), nil
}

// ParseLevelRequest reads a level from a request body of the given
// Content-Type, as the level endpoint does. Errors say what was wrong and
// what is expected.
func ParseLevelRequest(contentType string, body []byte) (gpuspans.Level, error) {
	var v struct {
		Level *string `json:"level"`
	}
	text, err := valueText(contentType, body, "level", &v, func() (string, bool) {
		if v.Level == nil {
			return "", false
		}
		return *v.Level, true
	})
	if err != nil {
		return 0, err
	}
	l, err := gpuspans.ParseLevel(text)
	if err != nil {
		return 0, badRequest("bad level %q: want off, step or kernel", truncate(text))
	}
	return l, nil
}

func (a *api) getTiming() string { return a.hub.KernelTiming().String() }

func (a *api) setTiming(contentType string, body []byte) (string, string, error) {
	k, err := ParseKernelTimingRequest(contentType, body)
	if err != nil {
		return "", "", err
	}
	old := a.hub.KernelTiming()
	if err := a.hub.SetKernelTiming(k); err != nil {
		return "", "", badRequest("%v", err)
	}
	return old.String(), k.String(), nil
}

func (a *api) getWindow() string {
	if a.hub.KernelTimingStatus().Windows.Open {
		return "open"
	}
	return "closed"
}

func (a *api) setWindow(contentType string, body []byte) (string, string, error) {
	var v struct {
		Window *string `json:"kernel_window"`
	}
	text, err := valueText(contentType, body, "kernel_window", &v, func() (string, bool) {
		if v.Window == nil {
			return "", false
		}
		return *v.Window, true
	})
	if err != nil {
		return "", "", err
	}
	if !strings.EqualFold(strings.TrimSpace(text), "open") {
		return "", "", badRequest("bad kernel_window %q: want open", truncate(text))
	}
	old := a.getWindow()
	if err := a.hub.RequestKernelWindow(); err != nil {
		return "", "", badRequest("%v", err)
	}
	return old, "requested", nil
}

// ParseKernelTimingRequest reads kernel_timing from a request body of the
// given Content-Type, as its endpoint does: events, auto, cupti or attached.
func ParseKernelTimingRequest(contentType string, body []byte) (gpuspans.KernelTiming, error) {
	var v struct {
		Timing *string `json:"kernel_timing"`
	}
	text, err := valueText(contentType, body, "kernel_timing", &v, func() (string, bool) {
		if v.Timing == nil {
			return "", false
		}
		return *v.Timing, true
	})
	if err != nil {
		return 0, err
	}
	k, err := gpuspans.ParseKernelTiming(text)
	if err != nil {
		return 0, badRequest("bad kernel_timing %q: want events, auto, cupti or attached", truncate(text))
	}
	return k, nil
}

// ParseKernelSpanEveryRequest reads kernel_span_every from a request body
// of the given Content-Type, as its endpoint does: a decimal integer in
// 1..gpuspans.MaxKernelSpanEvery. Errors say what was wrong and what is expected.
func ParseKernelSpanEveryRequest(contentType string, body []byte) (int, error) {
	var v struct {
		Every *json.Number `json:"kernel_span_every"`
	}
	text, err := valueText(contentType, body, "kernel_span_every", &v, func() (string, bool) {
		if v.Every == nil {
			return "", false
		}
		return v.Every.String(), true
	})
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if err != nil || n < 1 || n > gpuspans.MaxKernelSpanEvery {
		return 0, badRequest("bad kernel_span_every %q: want an integer from 1 to %d", truncate(text), gpuspans.MaxKernelSpanEvery)
	}
	return int(n), nil
}

// valueText returns the value's text: the body itself for plain text, or
// the field of a JSON object (decoded into v and read back with get).
func valueText(contentType string, body []byte, field string, v interface{}, get func() (string, bool)) (string, error) {
	if !isJSON(contentType) {
		if !utf8Printable(body) {
			return "", badRequest("the body is not printable text; send the %s as plain text or as JSON {%q: ...}", field, field)
		}
		return strings.TrimSpace(string(body)), nil
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return "", badRequest("bad JSON body: %v; want {%q: ...}", err, field)
	}
	if dec.More() {
		return "", badRequest("bad JSON body: data after the object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", badRequest("bad JSON body: data after the object")
	}
	text, ok := get()
	if !ok {
		return "", badRequest("JSON body has no %q field", field)
	}
	return text, nil
}

// isJSON reports whether a Content-Type is application/json (parameters
// such as charset allowed).
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// wantsJSON reports whether the response should be JSON: the request sent
// JSON or asked for it.
func wantsJSON(r *http.Request) bool {
	if isJSON(r.Header.Get("Content-Type")) {
		return true
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "application/json" {
			return true
		}
	}
	return false
}

// utf8Printable reports whether b is text a person could have typed: valid
// UTF-8 without control characters other than white space.
func utf8Printable(b []byte) bool {
	s := string(b)
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f {
			return false
		}
	}
	return true
}

// truncate shortens s for an error message, so a large bad value is not
// echoed back whole.
func truncate(s string) string {
	const max = 32
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func (a *api) reply(w http.ResponseWriter, asJSON bool, field, value string) {
	if !asJSON {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, value+"\n")
		return
	}
	var v interface{} = value
	if n, err := strconv.Atoi(value); err == nil {
		v = n
	}
	writeJSON(w, http.StatusOK, map[string]interface{}{field: v})
}

func (a *api) fail(w http.ResponseWriter, asJSON bool, err error) {
	status := http.StatusInternalServerError
	var e *httpError
	if errors.As(err, &e) {
		status = e.status
	}
	if !asJSON {
		http.Error(w, err.Error(), status)
		return
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

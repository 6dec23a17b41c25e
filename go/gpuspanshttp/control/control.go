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
	"net/http"
	"strconv"
	"strings"

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
	l, err := parseLevelRequest(contentType, body)
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
	n, err := parseKernelSpanEveryRequest(contentType, body)
	if err != nil {
		return "", "", err
	}
	old := a.hub.KernelSpanEvery()
	if err := a.hub.SetKernelSpanEvery(n); err != nil {
		return "", "", badRequest("%v", err)
	}
	return strconv.Itoa(old), strconv.Itoa(n), nil
}

func (a *api) getTiming() string { return a.hub.KernelTiming().String() }

func (a *api) setTiming(contentType string, body []byte) (string, string, error) {
	k, err := parseKernelTimingRequest(contentType, body)
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

// Package debugpage serves a live page of a hub for people: per-lane and
// per-kernel latency histograms drawn as inline SVG on the server (no
// JavaScript library, no external asset: it works offline and behind any
// proxy), the count/p50/p99/max table, drops and errors, the level, the
// kernel span period and armed ratio, and every device's state and reason.
// The page refreshes itself: a few lines of inline script fetch the page
// again and swap its live part, with a meta refresh when scripts are off.
// It also serves the same snapshot as JSON for scripts.
package debugpage

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Paths of the page and of its JSON.
const (
	Path         = "/debug/gpuspans"
	SnapshotPath = "/debug/gpuspans/snapshot.json"
)

// DefaultRefresh is how often the page refreshes itself unless
// Options.Refresh says otherwise.
const DefaultRefresh = 2 * time.Second

// maxRefresh bounds the ?refresh= query parameter.
const maxRefresh = 10 * time.Minute

// Options configures the page: a plain value, read once by Register.
type Options struct {
	// Backend is one line saying what the hub records from ("simulated GPU",
	// "CUDA device 0"), shown at the top.
	Backend string
	// Refresh is how often the page reloads its data (0: DefaultRefresh; < 0:
	// never). A request may override it with ?refresh=<seconds>, 0 to stop.
	Refresh time.Duration
	// Now is the clock the page is stamped with (nil: time.Now).
	Now func() time.Time
}

// Mux is where Register adds its handlers; *http.ServeMux is one. Register
// calls Handle from the caller's goroutine, before serving starts.
type Mux interface {
	Handle(pattern string, handler http.Handler)
}

// Register adds the page (Path, and Path/ redirecting to it) and its JSON
// (SnapshotPath) for hub to mux. The handlers are safe for concurrent use:
// each request takes one hub snapshot and reads the hub's recent windows
// (the harvest lock, briefly, each) and renders them; the page shows the
// last minute's and five minutes' quantiles and drops from the windows,
// which the hub keeps whether or not anyone watches.
func Register(mux Mux, hub *gpuspans.Hub, o Options) {
	if o.Refresh == 0 {
		o.Refresh = DefaultRefresh
	}
	if o.Refresh < 0 {
		o.Refresh = 0
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &server{hub: hub, o: o, lanes: hub.Lanes()}
	mux.Handle(Path, http.HandlerFunc(s.page))
	mux.Handle(SnapshotPath, http.HandlerFunc(s.snapshot))
	// The page with a trailing slash is a common typo; anything else under
	// it is not a page.
	mux.Handle(Path+"/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != Path+"/" {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, Path, http.StatusMovedPermanently)
	}))
}

type server struct {
	hub   *gpuspans.Hub
	o     Options
	lanes []string
}

// readOnly answers anything but GET and HEAD with 405, and reports whether
// the request may go on.
func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method "+r.Method+" not allowed: this page is read-only; the control endpoints (/control/level, /control/kernel_span_every) change settings", http.StatusMethodNotAllowed)
	return false
}

// Content-Security-Policy of the page: everything it needs is inline, and
// the only request its script makes is for the page itself.
const csp = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (s *server) page(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	o := s.o
	if v := r.URL.Query().Get("refresh"); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || !(secs >= 0 && secs <= maxRefresh.Seconds()) { // also refuses NaN
			http.Error(w, "bad refresh "+strconv.Quote(v)+": want seconds from 0 (off) to 600", http.StatusBadRequest)
			return
		}
		o.Refresh = time.Duration(secs * float64(time.Second))
	}
	snap := s.hub.Snapshot()
	now := o.Now()
	p := newPage(&snap, s.lanes, &o, now)
	ws := s.hub.Windows()
	p.addWindows(ws)
	p.addTrends(ws)
	p.Host = r.Host
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		http.Error(w, "rendering the page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(buf.Bytes())
}

func (s *server) snapshot(w http.ResponseWriter, r *http.Request) {
	if !readOnly(w, r) {
		return
	}
	snap := s.hub.Snapshot()
	now := s.o.Now()
	b, err := MarshalSnapshotWindows(&snap, s.hub.Windows(), s.o.Backend, now)
	if err != nil {
		http.Error(w, "encoding the snapshot: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(append(b, '\n'))
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"f":    func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"pct":  func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" },
	"secs": func(ms int64) string { return strconv.FormatInt((ms+999)/1000, 10) },
	"ms":   func(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 1, 64) },
}).Parse(pageHTML))

// MarshalSnapshot encodes s as SnapshotPath serves it (the schema's
// Snapshot under its protojson field names, see docs/design.md), stamped
// now, with backend as its "backend" field (omitted when empty), so that
// bindings for other languages (package capi) hand out the same document;
// s is only read. It has no "recent_windows": MarshalSnapshotWindows adds
// them.
func MarshalSnapshot(s *gpuspans.Snapshot, backend string, now time.Time) ([]byte, error) {
	return json.MarshalIndent(toJSON(s, backend, now), "", "  ")
}

// MarshalSnapshotWindows is MarshalSnapshot with the hub's recent windows
// (gpuspans.Hub.Windows) as its "recent_windows" field, as SnapshotPath
// serves it.
func MarshalSnapshotWindows(s *gpuspans.Snapshot, ws []gpuspans.Window, backend string, now time.Time) ([]byte, error) {
	j := toJSON(s, backend, now)
	j.RecentWindows = windowsJSON(ws)
	return json.MarshalIndent(j, "", "  ")
}

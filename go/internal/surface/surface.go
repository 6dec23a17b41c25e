// Package surface is the HTTP surface a serving binary exposes for a hub:
// /metrics, the live page and the control endpoints, in one handler. The
// demo and the C ABI's gs_hub_serve both serve it.
package surface

import (
	"log"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuspans/gpuspans/go/control"
	"github.com/gpuspans/gpuspans/go/debugpage"
	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Options configures New: a plain value, read once.
type Options struct {
	Backend string // what the hub records from, for the live page
	Token   string // the control endpoints' bearer token, or "" for none
	// ProtectReads requires Token on /metrics and the live page too.
	ProtectReads bool
	// Logf is told of every change made through the control endpoints.
	Logf func(format string, args ...interface{})
	// Extra handlers by path (the demo's /control/sim): each checks its
	// token itself; without a token they are put behind
	// control.RefuseCrossSite, as the control endpoints are.
	Extra map[string]http.Handler
	// Collectors are registered on /metrics beside the hub's (the OTLP
	// exporter's drop counters, say).
	Collectors []prometheus.Collector
}

// protectedMux registers handlers behind control.Protect.
type protectedMux struct {
	mux   *http.ServeMux
	token string
}

func (m protectedMux) Handle(pattern string, h http.Handler) {
	m.mux.Handle(pattern, control.Protect(h, m.token))
}

// New returns the HTTP surface for hub: /metrics (the hub's collector and
// the Go runtime and process collectors, on a registry of their own), the
// live page and its JSON under /debug/gpuspans, and the control endpoints
// under /control/, plus o.Extra. "/" redirects to the live page. With
// ProtectReads, /metrics and the live page require the token as the control
// endpoints do. The handler is safe for concurrent use.
func New(hub *gpuspans.Hub, o Options) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		prom.NewCollector(hub),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	reg.MustRegister(o.Collectors...)
	mux := http.NewServeMux()
	reads := control.Mux(mux)
	if o.ProtectReads {
		reads = protectedMux{mux, o.Token}
	}
	reads.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	debugpage.Register(reads, hub, debugpage.Options{Backend: o.Backend})
	control.Register(mux, hub, control.Options{Token: o.Token, Logf: o.Logf})
	for path, h := range o.Extra {
		mux.Handle(path, control.RefuseCrossSite(h, o.Token))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, debugpage.Path, http.StatusFound)
	})
	return mux
}

// NewServer returns an http.Server for h with timeouts, so that a slow or
// stuck client cannot hold connections open for good. errorLog may be nil
// (the log package's standard logger).
func NewServer(h http.Handler, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          errorLog,
	}
}

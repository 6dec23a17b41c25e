package demo

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuspans/gpuspans/go/control"
	"github.com/gpuspans/gpuspans/go/debugpage"
	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// HandlerOptions configures NewHandler: a plain value, read once.
type HandlerOptions struct {
	Backend string // what the hub records from, for the live page
	Token   string // the control endpoints' bearer token, or "" for none
	// ProtectReads requires Token on /metrics and the live page too.
	ProtectReads bool
	// Logf is told of every change made through the control endpoints.
	Logf func(format string, args ...interface{})
	// Engine, when set, gets SimPath to change its lanes' durations.
	Engine *Engine
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

// NewHandler returns the HTTP surface a serving binary exposes for hub:
// /metrics (the hub's collector and the Go runtime and process collectors,
// on a registry of their own), the live page and its JSON under
// /debug/gpuspans, and the control endpoints under /control/. "/" redirects
// to the live page; with o.Engine, SimPath too. With ProtectReads, /metrics
// and the live page require the token as the control endpoints do. The
// handler is safe for concurrent use.
func NewHandler(hub *gpuspans.Hub, o HandlerOptions) http.Handler {
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
	if o.Engine != nil {
		mux.Handle(SimPath, simHandler(o.Engine, o.Token, o.Logf))
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

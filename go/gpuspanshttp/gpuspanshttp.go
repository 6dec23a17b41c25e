// Package gpuspanshttp serves a hub over HTTP: the one handler a serving
// binary mounts to expose its GPU spans, as promhttp does for a Prometheus
// registry. The gpuspans command's demo and the C ABI's gs_hub_serve serve
// exactly this handler; a Go engine mounts it on its own server:
//
//	http.Handle("/", gpuspanshttp.New(hub, gpuspanshttp.Options{Token: token}))
//
// # Paths
//
//	GET         /metrics                          Prometheus exposition of the hub (package prom),
//	                                              the Go runtime and the process: text, protobuf,
//	                                              or OpenMetrics (with exemplars), as the scraper asks
//	GET         /debug/gpuspans                   the live page (package debugpage)
//	GET         /debug/gpuspans/snapshot.json     the same snapshot as JSON
//	GET, PUT    /control/level                    off, step or kernel (package control)
//	GET, PUT    /control/kernel_span_every        arm kernel spans on one step in N
//	GET, PUT    /control/kernel_timing            events, auto, cupti or attached
//	GET, PUT    /control/kernel_window            "open": a kernel window at the next step
//	GET         /                                 redirects to /debug/gpuspans
//
// plus Options.Extra. POST is accepted wherever PUT is, under the rules
// of package control.
//
// # Parameters
//
// The live page takes ?refresh=<seconds> (0 stops it). The control
// endpoints take a plain-text body ("kernel", "8") or, with Content-Type
// application/json, an object named like the endpoint ({"level":"kernel"});
// they answer in kind, and with {"error":"..."} and a 4xx status on bad
// input. Package control has every status code.
//
// # JSON schema
//
// snapshot.json is a hub snapshot in the field names of the wire schema
// (proto/gpuspans/v1 Snapshot, as protojson writes it with UseProtoNames),
// numbers as JSON numbers, enums as lowercase short names, plus a few
// page-only fields; package debugpage lists them. Fields may be added.
//
// # Exposure
//
// The control endpoints change what a production server records. Without
// Options.Token they answer loopback requests only and refuse what a web
// page could send (control.CheckListen, control.RefuseCrossSite); with a
// token every control request needs it, and with ProtectReads the reads
// need it too.
package gpuspanshttp

import (
	"log"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/debugpage"
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
	// Registry, when set, is the registry /metrics serves: New registers
	// the hub's collector and Collectors on it, so that an engine's own
	// metrics sit beside them, and leaves the Go runtime and process
	// collectors to its owner. Nil: a registry of New's own with both.
	Registry *prometheus.Registry
	// Prom configures the hub's collector: kernel histograms, classic
	// buckets, exemplars (an OTLP exporter's). The zero value is prom's
	// default.
	Prom prom.Options
	// ConstLabels go on every series of the hub's collector and of
	// Collectors (not the Go runtime's and the process's): a model name,
	// say. prom.CheckConstLabels says which are allowed; New panics on
	// others, as MustRegister does.
	ConstLabels prometheus.Labels
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
// the Go runtime and process collectors, on a registry of their own unless
// Options.Registry is set), the
// live page and its JSON under /debug/gpuspans, and the control endpoints
// under /control/, plus o.Extra. "/" redirects to the live page. With
// ProtectReads, /metrics and the live page require the token as the control
// endpoints do. The handler is safe for concurrent use.
func New(hub *gpuspans.Hub, o Options) http.Handler {
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
	}
	if err := prom.CheckConstLabels(o.ConstLabels); err != nil {
		panic("gpuspanshttp.New: " + err.Error())
	}
	ours := prometheus.WrapRegistererWith(o.ConstLabels, reg)
	ours.MustRegister(prom.NewCollector(hub, o.Prom))
	ours.MustRegister(o.Collectors...)
	mux := http.NewServeMux()
	reads := control.Mux(mux)
	if o.ProtectReads {
		reads = protectedMux{mux, o.Token}
	}
	reads.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true}))
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

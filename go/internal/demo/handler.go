package demo

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/surface"
)

// HandlerOptions configures NewHandler: a plain value, read once.
type HandlerOptions struct {
	Backend      string // what the hub records from, for the live page
	Token        string // the control endpoints' bearer token, or "" for none
	ProtectReads bool   // /metrics and the live page require Token too
	// Logf is told of every change made through the control endpoints.
	Logf func(format string, args ...interface{})
	// Engine, when set, gets SimPath to change its lanes' durations.
	Engine *Engine
	// Collectors are registered on /metrics beside the hub's.
	Collectors []prometheus.Collector
}

// NewHandler returns the demo's HTTP surface: surface.New's, plus SimPath
// with o.Engine.
func NewHandler(hub *gpuspans.Hub, o HandlerOptions) http.Handler {
	so := surface.Options{Backend: o.Backend, Token: o.Token, ProtectReads: o.ProtectReads, Logf: o.Logf, Collectors: o.Collectors}
	if o.Engine != nil {
		so.Extra = map[string]http.Handler{SimPath: simHandler(o.Engine, o.Token, o.Logf)}
	}
	return surface.New(hub, so)
}

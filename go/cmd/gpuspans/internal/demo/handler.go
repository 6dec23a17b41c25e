package demo

import (
	"net/http"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp"
)

// HandlerOptions configures NewHandler: gpuspanshttp's options, and the engine
// whose lanes SimPath changes.
type HandlerOptions struct {
	gpuspanshttp.Options
	Engine *Engine // when set, SimPath changes its lanes' durations
}

// NewHandler returns the demo's HTTP surface: gpuspanshttp.New's, plus SimPath
// with o.Engine.
func NewHandler(hub *gpuspans.Hub, o HandlerOptions) http.Handler {
	if o.Engine != nil {
		extra := map[string]http.Handler{SimPath: simHandler(o.Engine, o.Token, o.Logf)}
		for path, h := range o.Extra {
			extra[path] = h
		}
		o.Extra = extra
	}
	return gpuspanshttp.New(hub, o.Options)
}

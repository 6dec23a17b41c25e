package demo

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
)

// SimPath is the demo's own control endpoint: it changes the simulated
// workload, not the telemetry. GET answers "prefill=1 decode=1"; POST a
// plain-text body "decode=1.2" makes every decode kernel 20% longer from
// the next step on (factors MinScale..MaxScale). It takes the same bearer
// token, checked by the same code, as the hub's control endpoints
// (control.Protect: 401 without it, 403 with a wrong one).
const SimPath = "/control/sim"

// maxSimBody bounds a /control/sim request body.
const maxSimBody = 256

// simHandler serves SimPath for eng.
func simHandler(eng *Engine, token string, logf func(string, ...interface{})) http.Handler {
	return control.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			body, err := io.ReadAll(io.LimitReader(r.Body, maxSimBody+1))
			if err != nil {
				http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
				return
			}
			if len(body) > maxSimBody {
				http.Error(w, fmt.Sprintf("body over %d bytes", maxSimBody), http.StatusRequestEntityTooLarge)
				return
			}
			lane, factor, err := parseSim(string(body))
			if err == nil {
				err = eng.SetScale(lane, factor)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if logf != nil {
				logf("%s: lane %s kernel durations now x%v", SimPath, lane, factor)
			}
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			http.Error(w, "method "+r.Method+" not allowed on "+SimPath, http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "%s=%v %s=%v\n", LanePrefill, eng.Scale(LanePrefill), LaneDecode, eng.Scale(LaneDecode))
	}), token)
}

// parseSim reads "lane=factor".
func parseSim(body string) (string, float64, error) {
	lane, v, ok := strings.Cut(strings.TrimSpace(body), "=")
	if !ok {
		return "", 0, fmt.Errorf("body %q: want lane=factor, as decode=1.2", truncateBody(body))
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return "", 0, fmt.Errorf("factor %q: not a number", truncateBody(v))
	}
	return strings.TrimSpace(lane), f, nil
}

func truncateBody(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

package prom

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuspans/gpuspans/go/internal/golden"
)

// The /metrics text exposition of the fixture's hub: every series, in the
// registry's order.
func TestGoldenMetrics(t *testing.T) {
	f := golden.NewFixture(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(f.Hub))
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	golden.Check(t, "testdata/metrics.golden.txt", rec.Body.Bytes())
}

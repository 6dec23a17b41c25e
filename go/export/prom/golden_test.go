package prom

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/golden"
)

// The /metrics text exposition of the fixture's hub: every series, in the
// registry's order.
func TestGoldenMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(golden.NewFixture(t).Hub, Options{}))
	golden.Check(t, "testdata/metrics.golden.txt", golden.Get(t, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), "/metrics"))
}

// Command gpuspans runs the gpuspans demo serving loop and tools.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
)

func main() {
	addr := flag.String("listen", "127.0.0.1:9464", "address for /metrics")
	flag.Parse()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gpuspans_schema_info", Help: "Wire schema in use.", ConstLabels: prometheus.Labels{"version": "v1"},
	}, func() float64 { return float64(len(gpuspansv1.SpanKind_name)) }))
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	fmt.Fprintf(os.Stderr, "gpuspans: serving /metrics on %s\n", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}

package demo

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/gpuspans/gpuspans/go/export/otlp"
)

// grpcCollector is an in-process OTLP/gRPC receiver: the service.name of
// every span it got.
type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu       sync.Mutex
	services map[string]int
}

func (g *grpcCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		name := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				name = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			g.services[name] += len(ss.Spans)
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestOTLPFromEnv: with no --otlp, the OTel variables alone turn OTLP on
// (here over gRPC) and name the service; --otlp=off turns it off whatever
// they say; a malformed variable fails the run up front, named.
func TestOTLPFromEnv(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &grpcCollector{services: make(map[string]int)}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, col)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_SERVICE_NAME":           "env-demo",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	cfg := fastConfig(t)
	cfg.Steps = 100
	cfg.OTLPSampleEvery = 4
	cfg.LookupEnv = lookup
	var out syncBuffer
	res, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	tg := res.OTLPTarget
	if tg.Protocol != otlp.ProtocolGRPC || tg.EndpointFrom != "OTEL_EXPORTER_OTLP_ENDPOINT" || res.OTLP.Exported == 0 || res.OTLPError != nil {
		t.Errorf("target %+v, stats %+v, error %v", tg, res.OTLP, res.OTLPError)
	}
	if !strings.Contains(out.String(), "over grpc (endpoint from OTEL_EXPORTER_OTLP_ENDPOINT, protocol from OTEL_EXPORTER_OTLP_PROTOCOL)") {
		t.Errorf("the start line does not say where the settings came from:\n%s", out.String())
	}
	col.mu.Lock()
	if len(col.services) != 1 || uint64(col.services["env-demo"]) != res.OTLP.Exported {
		t.Errorf("the collector got %v, the demo exported %d", col.services, res.OTLP.Exported)
	}
	col.mu.Unlock()

	// The flags beat the variables: --otlp=off.
	cfg.OTLP = OTLPOff
	out = syncBuffer{}
	if res, err = Run(context.Background(), cfg, &out); err != nil || res.OTLPTarget != (otlp.Target{}) || strings.Contains(out.String(), "OTLP:") {
		t.Errorf("--otlp=off with an endpoint in the environment: %v, %+v\n%s", err, res.OTLPTarget, out.String())
	}
	// Nothing anywhere: no exporter, no complaint.
	cfg.OTLP, cfg.LookupEnv = "", func(string) (string, bool) { return "", false }
	if err := cfg.Validate(); err != nil {
		t.Errorf("no OTLP anywhere: %v", err)
	}
	// Without OTEL_SERVICE_NAME, the demo's own name.
	if o, on, err := cfg.otlpOptions(); on || err != nil || o.DefaultServiceName != OTLPServiceName {
		t.Errorf("otlpOptions with nothing set: %+v, %v, %v", o, on, err)
	}
	// A malformed variable: Validate names it.
	env["OTEL_EXPORTER_OTLP_TIMEOUT"] = "5s"
	cfg.LookupEnv = lookup
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `OTEL_EXPORTER_OTLP_TIMEOUT "5s"`) {
		t.Errorf("bad OTEL_EXPORTER_OTLP_TIMEOUT: %v", err)
	}
	cfg.OTLPProtocol = "udp"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `otlp_protocol "udp"`) {
		t.Errorf("bad --otlp_protocol: %v", err)
	}
}

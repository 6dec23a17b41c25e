package otlp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk"
)

// resolved is what a test compares of a config.
type resolved struct {
	protocol, url, endpointFrom, protocolFrom string
	headers                                   string
	timeout                                   time.Duration
	gzip                                      bool
	service                                   string
}

func summary(c *config) resolved {
	var h []string
	for k, v := range c.headers {
		h = append(h, k+"="+v)
	}
	sort.Strings(h)
	return resolved{
		c.target.Protocol, c.target.URL, c.target.EndpointFrom, c.target.ProtocolFrom,
		strings.Join(h, ","), c.timeout, c.gzip, c.serviceName,
	}
}

// TestEnvPrecedence: Options beat the traces variables, which beat the
// generic ones, which beat the defaults; each setting on its own.
func TestEnvPrecedence(t *testing.T) {
	const (
		P  = "OTEL_EXPORTER_OTLP_PROTOCOL"
		TP = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
		E  = "OTEL_EXPORTER_OTLP_ENDPOINT"
		TE = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	)
	def := func(r resolved) resolved {
		if r.timeout == 0 {
			r.timeout = DefaultExportTimeout
		}
		if r.service == "" {
			r.service = DefaultServiceName
		}
		return r
	}
	for _, c := range []struct {
		name string
		o    Options
		env  map[string]string
		want resolved
	}{
		{"option endpoint, no path", Options{Endpoint: "http://c:4318"}, nil,
			resolved{protocol: ProtocolHTTP, url: "http://c:4318/v1/traces", endpointFrom: "Options.Endpoint", protocolFrom: "default"}},
		{"option endpoint beats both variables", Options{Endpoint: "https://opt:443/x/traces"}, map[string]string{E: "http://gen:4318", TE: "http://tr:4318"},
			resolved{protocol: ProtocolHTTP, url: "https://opt:443/x/traces", endpointFrom: "Options.Endpoint", protocolFrom: "default"}},
		{"generic endpoint: v1/traces appended", Options{}, map[string]string{E: "http://gen:4318"},
			resolved{protocol: ProtocolHTTP, url: "http://gen:4318/v1/traces", endpointFrom: E, protocolFrom: "default"}},
		{"generic endpoint with a path: appended to it", Options{}, map[string]string{E: "http://gen:4318/otlp/"},
			resolved{protocol: ProtocolHTTP, url: "http://gen:4318/otlp/v1/traces", endpointFrom: E, protocolFrom: "default"}},
		{"traces endpoint as given, beats generic", Options{}, map[string]string{E: "http://gen:4318", TE: "http://tr:4318/custom"},
			resolved{protocol: ProtocolHTTP, url: "http://tr:4318/custom", endpointFrom: TE, protocolFrom: "default"}},
		{"traces endpoint without a path: the root", Options{}, map[string]string{TE: "http://tr:4318"},
			resolved{protocol: ProtocolHTTP, url: "http://tr:4318/", endpointFrom: TE, protocolFrom: "default"}},
		{"an empty traces endpoint is unset", Options{}, map[string]string{TE: " ", E: "http://gen:4318"},
			resolved{protocol: ProtocolHTTP, url: "http://gen:4318/v1/traces", endpointFrom: E, protocolFrom: "default"}},
		{"generic protocol", Options{}, map[string]string{E: "http://gen:4317", P: "grpc"},
			resolved{protocol: ProtocolGRPC, url: "http://gen:4317", endpointFrom: E, protocolFrom: P}},
		{"traces protocol beats generic", Options{}, map[string]string{E: "http://gen:4318", P: "grpc", TP: "http/protobuf"},
			resolved{protocol: ProtocolHTTP, url: "http://gen:4318/v1/traces", endpointFrom: E, protocolFrom: TP}},
		{"option protocol beats both", Options{Protocol: ProtocolGRPC}, map[string]string{E: "https://gen:4317/", P: "http/protobuf", TP: "http/protobuf"},
			resolved{protocol: ProtocolGRPC, url: "https://gen:4317", endpointFrom: E, protocolFrom: "Options.Protocol"}},
		{"grpc host:port: TLS", Options{Protocol: ProtocolGRPC, Endpoint: "c:4317"}, nil,
			resolved{protocol: ProtocolGRPC, url: "https://c:4317", endpointFrom: "Options.Endpoint", protocolFrom: "Options.Protocol"}},
		{"grpc host:port, insecure variable", Options{}, map[string]string{E: "c:4317", P: "grpc", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true"},
			resolved{protocol: ProtocolGRPC, url: "http://c:4317", endpointFrom: E, protocolFrom: P}},
		{"grpc host:port, Options.Insecure", Options{Protocol: ProtocolGRPC, Endpoint: "c:4317", Insecure: true}, nil,
			resolved{protocol: ProtocolGRPC, url: "http://c:4317", endpointFrom: "Options.Endpoint", protocolFrom: "Options.Protocol"}},
		{"insecure does not override a scheme", Options{}, map[string]string{E: "https://c:4317", P: "grpc", "OTEL_EXPORTER_OTLP_INSECURE": "true"},
			resolved{protocol: ProtocolGRPC, url: "https://c:4317", endpointFrom: E, protocolFrom: P}},
		{"generic headers, percent-decoded", Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b%2Cc, x-tenant = t1"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default", headers: "api-key=a b,c,x-tenant=t1"}},
		{"traces headers replace generic ones", Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_HEADERS": "a=1,b=2", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=3"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default", headers: "b=3"}},
		{"option headers replace the variables", Options{Headers: map[string]string{}}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=3"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default"}},
		{"timeouts in ms, traces first", Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "750"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default", timeout: 750 * time.Millisecond}},
		{"option timeout beats the variables", Options{ExportTimeout: 3 * time.Second}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default", timeout: 3 * time.Second}},
		{"gzip", Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default", gzip: true}},
		{"option compression beats the variable", Options{Compression: "none"}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default"}},
		{"OTEL_SERVICE_NAME beats the resource's service.name", Options{DefaultServiceName: "prog"}, map[string]string{E: "http://c:1", "OTEL_SERVICE_NAME": "svc", "OTEL_RESOURCE_ATTRIBUTES": "service.name=res"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default", service: "svc"}},
		{"the resource's service.name beats the program's default", Options{DefaultServiceName: "prog"}, map[string]string{E: "http://c:1", "OTEL_RESOURCE_ATTRIBUTES": "service.name=res"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default", service: "res"}},
		{"the program's default", Options{DefaultServiceName: "prog"}, map[string]string{E: "http://c:1"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default", service: "prog"}},
		{"Options.ServiceName beats everything", Options{ServiceName: "opt", DefaultServiceName: "prog"}, map[string]string{E: "http://c:1", "OTEL_SERVICE_NAME": "svc", "OTEL_RESOURCE_ATTRIBUTES": "service.name=res"},
			resolved{protocol: ProtocolHTTP, url: "http://c:1/v1/traces", endpointFrom: E, protocolFrom: "default", service: "opt"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.LookupEnv = mapEnv(c.env)
			got, err := c.o.resolve()
			if err != nil {
				t.Fatal(err)
			}
			if s, want := summary(got), def(c.want); s != want {
				t.Errorf("resolved\n%+v\nwant\n%+v", s, want)
			}
		})
	}
}

// TestEnvErrors: a malformed value is an error naming the variable and the
// value; nothing falls back silently.
// checkWithin is o.Check, failing the test if it does not return within
// 10 s (a certificate variable naming a FIFO once hung it).
func checkWithin(t *testing.T, o Options) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- o.Check() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("Check hung with %+v", o)
		return nil
	}
}

func TestEnvErrors(t *testing.T) {
	const E = "OTEL_EXPORTER_OTLP_ENDPOINT"
	dir := t.TempDir()
	notPEM, big, fifo, zero := filepath.Join(dir, "ca.txt"), filepath.Join(dir, "big.pem"), filepath.Join(dir, "fifo"), filepath.Join(dir, "zero")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Create(big); err != nil || f.Truncate(5<<20) != nil || f.Close() != nil {
		t.Fatal("cannot make a 5 MiB file", err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	// Every file variable, in both forms, opened as the token file is:
	// a FIFO, a device behind a link, a file too big, each refused by name.
	var files []struct {
		o    Options
		env  map[string]string
		want string
	}
	for _, v := range []string{"CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"} {
		for _, form := range []string{"OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_"} {
			name := form + v
			for path, want := range map[string]string{fifo: "is not a regular file", zero: "is not a regular file", "/dev/zero": "is not a regular file", big: "is 5242880 bytes, more than 4194304"} {
				env := map[string]string{E: "https://c:1", name: path}
				if v != "CERTIFICATE" { // the pair's other half, a good path: only name's file is at fault
					other := map[string]string{"CLIENT_CERTIFICATE": "CLIENT_KEY", "CLIENT_KEY": "CLIENT_CERTIFICATE"}[v]
					env["OTEL_EXPORTER_OTLP_"+other] = notPEM
				}
				files = append(files, struct {
					o    Options
					env  map[string]string
					want string
				}{Options{}, env, name + ` "` + path + `": ` + want})
			}
		}
	}
	cases := append([]struct {
		o    Options
		env  map[string]string
		want string
	}{
		{Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "udp"}, `OTEL_EXPORTER_OTLP_PROTOCOL "udp": want http/protobuf or grpc`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL "http/json": http/json is not supported`},
		{Options{Protocol: "gRPC"}, nil, `Options.Protocol "gRPC"`},
		{Options{}, map[string]string{E: "collector:4318"}, `OTEL_EXPORTER_OTLP_ENDPOINT "collector:4318": scheme "collector"`},
		{Options{}, map[string]string{E: "grpc://c:4317"}, `scheme "grpc", want http:// (plaintext) or https:// (TLS), with the protocol set to grpc`},
		{Options{}, map[string]string{E: "http://c"}, `OTEL_EXPORTER_OTLP_ENDPOINT "http://c" has no port (the collector's port for http/protobuf is usually 4318)`},
		{Options{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:99999"}, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "http://c:99999": port "99999"`},
		{Options{}, map[string]string{E: "http://c:4317/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, `OTEL_EXPORTER_OTLP_ENDPOINT "http://c:4317/v1/traces": a gRPC endpoint has no path`},
		{Options{Protocol: ProtocolGRPC}, map[string]string{E: "c:port"}, `OTEL_EXPORTER_OTLP_ENDPOINT "c:port": port "port"`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_INSECURE": "yes please"}, `OTEL_EXPORTER_OTLP_INSECURE "yes please": want true or false`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_HEADERS": "token"}, `OTEL_EXPORTER_OTLP_HEADERS "token": "token" is not key=value`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "a=1,b c=2"}, `OTEL_EXPORTER_OTLP_TRACES_HEADERS "a=1,b c=2": "b c=2" is not key=value`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_HEADERS": "a=%zz"}, `OTEL_EXPORTER_OTLP_HEADERS "a=%zz": the value of a`},
		{Options{Headers: map[string]string{"bad key": "v"}}, map[string]string{E: "http://c:1"}, `Options.Headers: "bad key" is not a valid header name`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, `OTEL_EXPORTER_OTLP_TIMEOUT "10s": want milliseconds, 1..3600000`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "0"}, `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT "0": want milliseconds`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, `OTEL_EXPORTER_OTLP_COMPRESSION "zstd": want gzip or none`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_RESOURCE_ATTRIBUTES": "a=1,novalue"}, `OTEL_RESOURCE_ATTRIBUTES "a=1,novalue": "novalue" is not key=value`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_RESOURCE_ATTRIBUTES": "=x"}, `OTEL_RESOURCE_ATTRIBUTES "=x": "=x" is not key=value`},
		{Options{}, map[string]string{E: "http://c:1", "OTEL_RESOURCE_ATTRIBUTES": "a=%g0"}, `OTEL_RESOURCE_ATTRIBUTES "a=%g0": the value of a`},
		{Options{}, map[string]string{E: "https://c:1", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, `OTEL_EXPORTER_OTLP_CERTIFICATE "/nonexistent/ca.pem": stat /nonexistent/ca.pem`},
		{Options{}, map[string]string{E: "https://c:1", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": notPEM}, `OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE "` + notPEM + `": no PEM certificate in it`},
		{Options{}, map[string]string{E: "https://c:1", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/x.pem"}, `OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE "/x.pem" without OTEL_EXPORTER_OTLP_CLIENT_KEY`},
		{Options{Resource: []attribute.KeyValue{attribute.String("service.name", "x")}}, map[string]string{E: "http://c:1"}, "Options.Resource has service.name: set Options.ServiceName"},
		{Options{Compression: "lz4"}, map[string]string{E: "http://c:1"}, `Options.Compression "lz4"`},
	}, files...)
	for _, c := range cases {
		c.o.LookupEnv = mapEnv(c.env)
		err := checkWithin(t, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v with %v: %v\nwant an error with %s", c.o, c.env, err, c.want)
		}
	}
	// No endpoint anywhere: ErrNoEndpoint, naming where to set one.
	err := Options{LookupEnv: noEnv}.Check()
	if !errors.Is(err, ErrNoEndpoint) || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Errorf("no endpoint: %v", err)
	}
	// A malformed variable that an option overrides is not read.
	if err := (Options{Endpoint: "http://c:1", Protocol: ProtocolHTTP, LookupEnv: mapEnv(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "::", "OTEL_EXPORTER_OTLP_PROTOCOL": "udp"})}).Check(); err != nil {
		t.Errorf("overridden variables: %v", err)
	}
	// With a SpanExporter, the transport's settings are not needed.
	if err := (Options{SpanExporter: nopExporter{}, LookupEnv: noEnv}).Check(); err != nil {
		t.Errorf("with a SpanExporter: %v", err)
	}
}

// TestResource: what the process knows of itself, under the environment's
// attributes, under the options'.
func TestResource(t *testing.T) {
	res := func(o Options) map[string]string {
		t.Helper()
		c, err := o.resolve()
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[string]string)
		set := attribute.NewSet(c.resource...)
		for _, kv := range set.ToSlice() {
			m[string(kv.Key)] = kv.Value.String()
		}
		return m
	}
	base := Options{Endpoint: "http://c:1", LookupEnv: noEnv}
	a, b := res(base), res(base)
	host, _ := os.Hostname()
	exe, _ := os.Executable()
	want := map[string]string{
		"service.name": DefaultServiceName, "host.name": host, "process.pid": fmt.Sprint(os.Getpid()),
		"process.executable.name": filepath.Base(exe), "process.runtime.name": "go",
		"telemetry.sdk.name": "opentelemetry", "telemetry.sdk.language": "go", "telemetry.sdk.version": sdk.Version(),
	}
	for k, v := range want {
		if a[k] != v {
			t.Errorf("%s = %q, want %q", k, a[k], v)
		}
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(a["service.instance.id"]) || a["service.instance.id"] == b["service.instance.id"] {
		t.Errorf("service.instance.id %q, then %q: want a new random UUID per exporter", a["service.instance.id"], b["service.instance.id"])
	}
	if _, ok := a["service.version"]; ok {
		t.Errorf("service.version %q in a test binary (no module version)", a["service.version"])
	}

	o := base
	o.LookupEnv = mapEnv(map[string]string{
		"OTEL_RESOURCE_ATTRIBUTES": "host.name=pod-7, service.instance.id=engine-0,deployment.environment.name=prod%2Ceu,k8s.pod.name=p,service.version=1.0",
	})
	o.ServiceVersion = "2.0"
	o.Resource = []attribute.KeyValue{attribute.String("k8s.pod.name", "from-options"), attribute.Int("gpuspans.shard", 3)}
	got := res(o)
	for k, v := range map[string]string{
		"host.name": "pod-7", "service.instance.id": "engine-0", "deployment.environment.name": "prod,eu",
		"k8s.pod.name": "from-options", "gpuspans.shard": "3", "service.version": "2.0", "process.pid": fmt.Sprint(os.Getpid()),
	} {
		if got[k] != v {
			t.Errorf("with the environment and options: %s = %q, want %q", k, got[k], v)
		}
	}
}

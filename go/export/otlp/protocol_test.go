package otlp

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// nopExporter is a SpanExporter that accepts everything.
type nopExporter struct{}

func (nopExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (nopExporter) Shutdown(context.Context) error                             { return nil }

// sendOne sends one span through a new exporter and closes it: its Stats,
// log lines and LastError.
func sendOne(t *testing.T, o Options) (Stats, []string, error) {
	t.Helper()
	var mu sync.Mutex
	var logs []string
	o.Logf = func(f string, a ...interface{}) { mu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); mu.Unlock() }
	if o.LookupEnv == nil {
		o.LookupEnv = noEnv
	}
	if o.ExportTimeout == 0 {
		o.ExportTimeout = 10 * time.Minute // a request that waits it out fails the callers' bounds
	}
	e, err := New(context.Background(), newHub(t), o)
	if err != nil {
		t.Fatal(err)
	}
	_, s := e.TracerProvider().Tracer("t").Start(context.Background(), "x")
	s.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_ = e.Close(ctx)
	mu.Lock()
	defer mu.Unlock()
	return e.Stats(), logs, e.LastError()
}

// TestProtocolMismatch: each protocol sent to a listener of the other
// fails with ErrProtocolMismatch and a message naming what the listener
// speaks and the fix, counted and logged, within the request timeout.
func TestProtocolMismatch(t *testing.T) {
	grpcRcv := newGRPCReceiver(t, nil)
	httpRcv := newReceiver(t)
	// An HTTP/2 server without TLS that is not gRPC (Envoy, or a Go
	// server with h2c): gRPC gets an HTTP/2 answer of the wrong kind.
	h2c := httptest.NewUnstartedServer(http.NotFoundHandler())
	h2c.Config.Protocols = new(http.Protocols)
	h2c.Config.Protocols.SetUnencryptedHTTP2(true)
	h2c.Start()
	t.Cleanup(h2c.Close)

	// An HTTP/1.0 server (Python's http.server) answers the HTTP/2
	// preface with a status line and closes.
	http10, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { http10.Close() })
	go func() {
		for {
			c, err := http10.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.ReadFull(c, make([]byte, len("PRI * HTTP/2.0\r\n")))
				_, _ = c.Write([]byte("HTTP/1.0 505 HTTP Version Not Supported\r\nContent-Length: 0\r\n\r\n"))
				time.Sleep(100 * time.Millisecond)
			}()
		}
	}()

	hostOf := func(u string) string { return u[strings.Index(u, "//")+2:] }
	for _, c := range []struct {
		name, protocol, endpoint, want string
	}{
		{"http to grpc", ProtocolHTTP, grpcRcv.url, "protocol mismatch: the collector at " + hostOf(grpcRcv.url) + " speaks gRPC, not OTLP/HTTP: use protocol grpc for this port, or its OTLP/HTTP port (4318 by default)"},
		{"grpc to http/1", ProtocolGRPC, httpRcv.url, "protocol mismatch: the collector at " + hostOf(httpRcv.url) + " speaks OTLP/HTTP, not gRPC: use protocol http/protobuf for this port, or its gRPC port (4317 by default)"},
		{"grpc to http/1.0", ProtocolGRPC, "http://" + http10.Addr().String(), "protocol mismatch: the collector at " + http10.Addr().String() + " speaks OTLP/HTTP, not gRPC: use protocol http/protobuf"},
		{"grpc to h2c", ProtocolGRPC, h2c.URL, "protocol mismatch: the collector at " + hostOf(h2c.URL) + " speaks OTLP/HTTP, not gRPC: use protocol http/protobuf"},
		{"https to plaintext", ProtocolHTTP, strings.Replace(httpRcv.url, "http:", "https:", 1), "does not speak TLS: use an http:// endpoint"},
		{"grpc tls to plaintext", ProtocolGRPC, strings.Replace(grpcRcv.url, "http:", "https:", 1), "does not speak TLS: use an http:// endpoint"},
	} {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			start := time.Now()
			st, logs, err := sendOne(t, Options{Protocol: c.protocol, Endpoint: c.endpoint})
			if !errors.Is(err, ErrProtocolMismatch) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("LastError() = %v\nwant ErrProtocolMismatch with %q", err, c.want)
			}
			if st.ExportErrors != 1 || st.ExportFailed != 1 || st.Exported != 0 {
				t.Errorf("Stats %+v: want the request failed and its span dropped, counted", st)
			}
			if len(logs) != 1 || !strings.Contains(logs[0], c.want) {
				t.Errorf("logged %q: want one line with %q", logs, c.want)
			}
			// Far below the request's timeout, beyond what load delays.
			if d := time.Since(start); d > 2*time.Minute {
				t.Errorf("took %v: the mismatch was not seen before the request timed out", d)
			}
		})
	}
	// Failures that are not a mismatch are not called one.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	for _, p := range []string{ProtocolHTTP, ProtocolGRPC} {
		st, _, err := sendOne(t, Options{Protocol: p, Endpoint: "http://" + addr})
		if err == nil || errors.Is(err, ErrProtocolMismatch) || st.ExportErrors != 1 {
			t.Errorf("%s to a closed port: %v, %+v", p, err, st)
		}
	}
}

// lockedBuffer is a bytes.Buffer for the standard logger's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestNoStrayLogLines: OTLP/HTTP sent to a gRPC port names the mismatch
// through the exporter's logger and writes nothing to the process's
// standard logger, where net/http reported each gRPC greeting as
// "Unsolicited response received on idle HTTP channel" (28 lines in 15 s).
func TestNoStrayLogLines(t *testing.T) {
	var buf lockedBuffer
	log.SetOutput(&buf)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	grpcRcv := newGRPCReceiver(t, nil)
	for i := 0; i < 5; i++ {
		_, logs, err := sendOne(t, Options{Protocol: ProtocolHTTP, Endpoint: grpcRcv.url})
		if !errors.Is(err, ErrProtocolMismatch) || len(logs) != 1 || !strings.Contains(logs[0], "speaks gRPC, not OTLP/HTTP") {
			t.Errorf("send %d: %v, logged %q: want the mismatch named once", i, err, logs)
		}
	}
	time.Sleep(200 * time.Millisecond) // net/http's read loops log on their own goroutines
	if s := buf.String(); s != "" {
		t.Errorf("the standard logger got:\n%s", s)
	}

	// Against a server that greets as a gRPC port does, at once: whether
	// net/http reads the greeting before its request is out (and logs it)
	// is a race. Unguarded, the control, the line shows within some tries;
	// guarded, no try logs, and each request fails with errHTTP2Greeting.
	greeter, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { greeter.Close() })
	go func() {
		for {
			c, err := greeter.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x05\x00\x00\x40\x00")) // SETTINGS
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	post := func(dial func(ctx context.Context, network, addr string) (net.Conn, error)) (string, error) {
		before := len(buf.String())
		tr := &http.Transport{DialContext: dial}
		_, err := (&http.Client{Transport: tr, Timeout: 150 * time.Millisecond}).Post(
			"http://"+greeter.Addr().String()+"/v1/traces", "application/x-protobuf", strings.NewReader("x"))
		tr.CloseIdleConnections()
		time.Sleep(20 * time.Millisecond)
		return buf.String()[before:], err
	}
	plain := (&net.Dialer{}).DialContext
	provoked := false
	for i := 0; i < 10 && !provoked; i++ {
		logged, _ := post(plain)
		provoked = strings.Contains(logged, "Unsolicited response")
	}
	if !provoked {
		t.Log("control: 10 unguarded requests logged no line this time")
	}
	for i := 0; i < 10; i++ {
		if logged, err := post(guardedDial(plain)); logged != "" || err == nil || !strings.Contains(err.Error(), errHTTP2Greeting.Error()) {
			t.Errorf("guarded request %d: logged %q, err %v: want nothing logged and %v", i, logged, err, errHTTP2Greeting)
		}
	}
}

// TestEnvEndToEnd: an exporter configured by the environment alone sends
// over each protocol with its headers, and the resource names the service.
func TestEnvEndToEnd(t *testing.T) {
	for _, p := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(strings.ReplaceAll(p, "/", "_"), func(t *testing.T) {
			rcv := newProtocolReceiver(t, p)
			env := map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":        rcv.url,
				"OTEL_EXPORTER_OTLP_PROTOCOL":        "http/protobuf",
				"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": p,
				"OTEL_EXPORTER_OTLP_HEADERS":         "x-tenant=t%201",
				"OTEL_EXPORTER_OTLP_TIMEOUT":         "5000",
				"OTEL_SERVICE_NAME":                  "env-engine",
				"OTEL_RESOURCE_ATTRIBUTES":           "service.name=loses,deployment.environment.name=ci",
			}
			st, logs, err := sendOne(t, Options{LookupEnv: mapEnv(env), DefaultServiceName: "prog"})
			if err != nil || st.Exported != 1 || len(logs) != 0 {
				t.Fatalf("%+v, %v, %q", st, err, logs)
			}
			got := rcv.spans(t)
			if len(got) != 1 || got[0].resource["service.name"] != "env-engine" || got[0].resource["deployment.environment.name"] != "ci" {
				t.Errorf("received %+v", got)
			}
			if h := rcv.header("x-tenant"); h != "t 1" {
				t.Errorf("x-tenant header %q, want %q", h, "t 1")
			}
		})
	}
}

// TestSDKEnvOverridden: the SDK's transports read OTEL_* from the process
// themselves; every such setting is given explicitly, so a process
// variable that Options.LookupEnv does not show changes nothing.
func TestSDKEnvOverridden(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-leak=1")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", "/nonexistent/ca.pem")
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "false")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://127.0.0.1:1")
	for _, p := range []string{ProtocolHTTP, ProtocolGRPC} {
		rcv := newProtocolReceiver(t, p)
		st, _, err := sendOne(t, Options{Protocol: p, Endpoint: rcv.url, LookupEnv: noEnv})
		if err != nil || st.Exported != 1 {
			t.Fatalf("%s: %+v, %v", p, st, err)
		}
		if h := rcv.header("x-leak"); h != "" {
			t.Errorf("%s: the process's OTEL_EXPORTER_OTLP_HEADERS leaked: x-leak %q", p, h)
		}
		if p == ProtocolHTTP && rcv.header("content-encoding") != "" {
			t.Errorf("%s: the process's OTEL_EXPORTER_OTLP_COMPRESSION leaked: %q", p, rcv.header("content-encoding"))
		}
	}
	// And the same variables through LookupEnv are honoured (gzip: the
	// HTTP receiver decodes it).
	rcv := newReceiver(t)
	st, _, err := sendOne(t, Options{Endpoint: rcv.url, LookupEnv: mapEnv(map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"})})
	if err != nil || st.Exported != 1 || rcv.header("content-encoding") != "gzip" {
		t.Errorf("gzip: %+v, %v, Content-Encoding %q", st, err, rcv.header("content-encoding"))
	}
}

// TestTLS: https:// endpoints of both protocols, trusted through
// OTEL_EXPORTER_OTLP_CERTIFICATE; without it the system's roots refuse
// the test's certificate.
func TestTLS(t *testing.T) {
	httpsRcv := &receiver{protocol: ProtocolHTTP}
	httpsRcv.srv = httptest.NewTLSServer(http.HandlerFunc(httpsRcv.serve))
	t.Cleanup(httpsRcv.srv.Close)
	httpsRcv.url = httpsRcv.srv.URL
	grpcsRcv := newGRPCReceiver(t, credentials.NewTLS(&tls.Config{Certificates: httpsRcv.srv.TLS.Certificates}))
	grpcsRcv.url = strings.Replace(grpcsRcv.url, "http:", "https:", 1)

	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: httpsRcv.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*receiver{httpsRcv, grpcsRcv} {
		st, _, err := sendOne(t, Options{Protocol: r.protocol, Endpoint: r.url,
			LookupEnv: mapEnv(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": ca})})
		if err != nil || st.Exported != 1 || len(r.spans(t)) != 1 {
			t.Errorf("%s over TLS with the CA: %+v, %v", r.protocol, st, err)
		}
		st, _, err = sendOne(t, Options{Protocol: r.protocol, Endpoint: r.url})
		if err == nil || !strings.Contains(err.Error(), "certificate") || st.ExportFailed != 1 {
			t.Errorf("%s over TLS without the CA: %+v, %v; want a certificate error", r.protocol, st, err)
		}
	}
}

// TestGRPCPartialSuccess: a partial success over gRPC counts only the
// rejected spans, as over HTTP (TestPartialSuccess).
func TestGRPCPartialSuccess(t *testing.T) {
	r := &receiver{protocol: ProtocolGRPC}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, grpcTraces{r: r, partial: &coltracepb.ExportTracePartialSuccess{RejectedSpans: 1, ErrorMessage: "too old"}})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	st, _, lastErr := sendOne(t, Options{Protocol: ProtocolGRPC, Endpoint: "http://" + lis.Addr().String()})
	if st.Exported != 0 || st.ExportFailed != 1 || st.ExportErrors != 0 || lastErr != nil {
		t.Errorf("one span, rejected: %+v, %v", st, lastErr)
	}
}

// TestSpeaksHTTP2: the probe that explains an OTLP/HTTP request whose
// connection a gRPC server greeted before the request was written (the
// greeting then reads as "readLoopPeekFailLocked", not as a malformed
// response).
func TestSpeaksHTTP2(t *testing.T) {
	grpcRcv := newGRPCReceiver(t, nil)
	httpRcv := newReceiver(t)
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	host := func(u string) string { return u[len("http://"):] }
	start := time.Now()
	if !speaksHTTP2(host(grpcRcv.url), time.Second) || speaksHTTP2(host(httpRcv.url), time.Second) ||
		speaksHTTP2(hung.Addr().String(), 100*time.Millisecond) {
		t.Error("speaksHTTP2: want true for the gRPC server only")
	}
	if d := time.Since(start); d > time.Minute {
		t.Errorf("probes took %v, with timeouts of 1 s and 100 ms", d)
	}
	e := &Exporter{target: Target{Protocol: ProtocolHTTP, URL: grpcRcv.url + "/v1/traces"}, host: host(grpcRcv.url), timeout: time.Second}
	peek := errors.New(`traces export: Post "x": readLoopPeekFailLocked: %!w(<nil>)`)
	if err := e.diagnose(peek); !errors.Is(err, ErrProtocolMismatch) || !strings.Contains(err.Error(), "speaks gRPC") {
		t.Errorf("diagnose(%v) = %v", peek, err)
	}
	e.target.URL, e.host = httpRcv.url+"/v1/traces", host(httpRcv.url)
	if err := e.diagnose(peek); err != peek {
		t.Errorf("diagnose at an HTTP/1 server = %v, want it unchanged", err)
	}
}

// TestCloseWithNoTime: Close with a context that is done stops either
// transport and returns nil; the spans it had no time for are counted.
func TestCloseWithNoTime(t *testing.T) {
	for _, p := range []string{ProtocolHTTP, ProtocolGRPC} {
		rcv := newProtocolReceiver(t, p)
		e, err := New(context.Background(), newHub(t), Options{Protocol: p, Endpoint: rcv.url, LookupEnv: noEnv, PollEvery: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		_, s := e.TracerProvider().Tracer("t").Start(context.Background(), "x")
		s.End()
		done, cancel := context.WithCancel(context.Background())
		cancel()
		if err := e.Close(done); err != nil {
			t.Errorf("%s: Close with no time: %v", p, err)
		}
		if st := e.Stats(); st.Exported+st.Shutdown+st.ExportFailed != 1 {
			t.Errorf("%s: %+v: the span neither sent nor counted", p, st)
		}
	}
}

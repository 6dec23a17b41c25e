package otlp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
)

// newTransport makes the OpenTelemetry SDK's exporter for c. Every setting
// that the SDK would also read from the environment is given explicitly,
// so that the SDK's own reading of OTEL_* never differs from ours (nor
// from Options.LookupEnv's). Retries are off: a failed batch is dropped
// and counted, as retrying would hold the queue behind a collector that
// is down. Nothing here touches the network: gRPC connects at the first
// send.
//
// stop closes every connection the transport made, at once and for good
// (nil where the SDK's own client or gRPC holds them: their shutdown does).
func newTransport(ctx context.Context, c *config) (exp sdktrace.SpanExporter, stop func(), err error) {
	// nil for plaintext: the SDK refuses an http:// endpoint with a TLS
	// configuration, which it would otherwise take from the environment.
	var tlsCfg *tls.Config
	if strings.HasPrefix(c.target.URL, "https:") {
		if tlsCfg = c.tls; tlsCfg == nil {
			tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	if c.target.Protocol == ProtocolGRPC {
		creds := insecure.NewCredentials()
		if tlsCfg != nil {
			creds = credentials.NewTLS(tlsCfg)
		}
		compressor := grpc.UseCompressor(encoding.Identity)
		opts := []otlptracegrpc.Option{
			otlptracegrpc.WithEndpoint(c.host),
			otlptracegrpc.WithTLSCredentials(creds),
			otlptracegrpc.WithHeaders(c.headers),
			otlptracegrpc.WithTimeout(c.timeout),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}),
			// Reconnect within seconds of a collector's return (gRPC's
			// default backoff grows to two minutes).
			otlptracegrpc.WithDialOption(grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
				MinConnectTimeout: 5 * time.Second,
			})),
		}
		if c.gzip {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		} else {
			// The SDK turns gzip on when its environment says so; this
			// call option comes after its own.
			opts = append(opts, otlptracegrpc.WithDialOption(grpc.WithDefaultCallOptions(compressor)))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	} else {
		comp := otlptracehttp.NoCompression
		if c.gzip {
			comp = otlptracehttp.GzipCompression
		}
		opts := []otlptracehttp.Option{
			otlptracehttp.WithEndpointURL(c.target.URL), // host, path, and TLS by the scheme
			otlptracehttp.WithURLPath(c.path),
			otlptracehttp.WithTLSClientConfig(tlsCfg),
			otlptracehttp.WithHeaders(c.headers),
			otlptracehttp.WithTimeout(c.timeout),
			otlptracehttp.WithCompression(comp),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
		}
		if tlsCfg == nil {
			// Takes precedence over the timeout option: the client has it.
			cs := new(conns)
			stop = cs.closeAll
			opts = append(opts, otlptracehttp.WithHTTPClient(plaintextClient(c.timeout, cs)))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("otlp: %s endpoint %s: %w", c.target.Protocol, c.target.URL, err)
	}
	return exp, stop, nil
}

// errHTTP2Greeting is what a plaintext OTLP/HTTP connection reads when the
// server spoke first with an HTTP/2 frame: a gRPC port's SETTINGS.
var errHTTP2Greeting = errors.New("otlp: the server sent an HTTP/2 frame before any request: it speaks gRPC")

// plaintextClient is the SDK's own client for http:// endpoints (its
// transport's settings) whose connections refuse an HTTP/2 greeting: a
// gRPC port sends its SETTINGS frame as soon as it accepts, and net/http,
// reading bytes on a connection with no request out, writes them to the
// process's standard logger ("Unsolicited response received on idle HTTP
// channel ...") once per connection, for every send. The guard turns them
// into errHTTP2Greeting with nothing read, which net/http reports to the
// send instead, and diagnose names the mismatch once.
func plaintextClient(timeout time.Duration, cs *conns) *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           guardedDial(cs.dial(d.DialContext)),
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: 1 * time.Second,
		},
	}
}

// conns are a client's connections, so that the exporter's stop can close
// every one: the SDK's Stop closes none, and a dial that completes after
// its request was cancelled (a hung collector, a loaded machine) parks its
// connection among the idle ones for IdleConnTimeout, with net/http's two
// goroutines for it.
type conns struct {
	mu     sync.Mutex
	closed bool
	open   map[*trackedConn]struct{}
}

var errStopped = errors.New("otlp: the exporter stopped")

// dial wraps dial so that its connections are tracked, and none is made
// or kept once closeAll has run.
func (cs *conns) dial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cs.mu.Lock()
		closed := cs.closed
		cs.mu.Unlock()
		if closed {
			return nil, errStopped
		}
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		t := &trackedConn{Conn: conn, cs: cs}
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if cs.closed {
			conn.Close()
			return nil, errStopped
		}
		if cs.open == nil {
			cs.open = map[*trackedConn]struct{}{}
		}
		cs.open[t] = struct{}{}
		return t, nil
	}
}

// closeAll closes every connection, and every one dialled from now on.
func (cs *conns) closeAll() {
	cs.mu.Lock()
	cs.closed = true
	open := cs.open
	cs.open = nil
	cs.mu.Unlock()
	for t := range open {
		t.Conn.Close()
	}
}

type trackedConn struct {
	net.Conn
	cs *conns
}

func (t *trackedConn) Close() error {
	t.cs.mu.Lock()
	delete(t.cs.open, t)
	t.cs.mu.Unlock()
	return t.Conn.Close()
}

// guardedDial wraps dial's connections in an h2Guard.
func guardedDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &h2Guard{Conn: conn}, nil
	}
}

// h2Guard is a plaintext connection whose first bytes, if they begin an
// HTTP/2 frame (a zero byte: an HTTP/1 response begins "HTTP/"), are
// refused. net/http then closes the connection, and a request being
// written meanwhile fails too: its write error says the same, so the send
// is diagnosed whichever failure it reports. net/http reads a connection
// from one goroutine and writes it from another.
type h2Guard struct {
	net.Conn
	seen    bool // read goroutine only
	greeted atomic.Bool
}

func (g *h2Guard) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if !g.seen && n > 0 {
		g.seen = true
		if p[0] == 0 {
			g.greeted.Store(true)
			return 0, errHTTP2Greeting
		}
	}
	return n, err
}

func (g *h2Guard) Write(p []byte) (int, error) {
	n, err := g.Conn.Write(p)
	if err != nil && g.greeted.Load() {
		err = errHTTP2Greeting
	}
	return n, err
}

package otlp

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
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
func newTransport(ctx context.Context, c *config) (sdktrace.SpanExporter, error) {
	// nil for plaintext: the SDK refuses an http:// endpoint with a TLS
	// configuration, which it would otherwise take from the environment.
	var tlsCfg *tls.Config
	if strings.HasPrefix(c.target.URL, "https:") {
		if tlsCfg = c.tls; tlsCfg == nil {
			tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
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
		exp, err = otlptracehttp.New(ctx,
			otlptracehttp.WithEndpointURL(c.target.URL), // host, path, and TLS by the scheme
			otlptracehttp.WithURLPath(c.path),
			otlptracehttp.WithTLSClientConfig(tlsCfg),
			otlptracehttp.WithHeaders(c.headers),
			otlptracehttp.WithTimeout(c.timeout),
			otlptracehttp.WithCompression(comp),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
		)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp: %s endpoint %s: %w", c.target.Protocol, c.target.URL, err)
	}
	return exp, nil
}

// Command otelcol is the OpenTelemetry Collector that the end-to-end test
// of go/export/otlp runs (tools/e2e/otelcol.sh): the collector's own
// command (otelcol.NewCommand: --config, validate, components) with only
// the components that test needs: the OTLP receiver (gRPC and HTTP) and
// the file exporter, which writes what arrives as OTLP JSON lines.
//
// It is a module of its own (go.mod beside this file), so that the
// collector's dependencies stay out of the main module's graph, go.sum and
// deps.bzl; `go build ./...` and Bazel at the repository root skip it.
//
//	cd tools/otelcol && go build -o ../../out/otelcol/otelcol .
//	out/otelcol/otelcol --config=config.yaml
package main

import (
	"context"
	"os"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol",
			Description: "OpenTelemetry Collector for gpuspans' end-to-end tests: OTLP receiver, file exporter",
			Version:     "0.165.0",
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				// ${VAR} in the config is an environment variable, as
				// with the stock collector.
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
				DefaultScheme:     "env",
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		os.Exit(1) // the command printed the error
	}
}

func components() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory()); err != nil {
		return f, err
	}
	f.Telemetry = telemetry.NewFactory(
		func() component.Config { return new(telemetryConfig) },
		telemetry.WithCreateLogger(newLogger),
	)
	return f, nil
}

// telemetryConfig is the "service.telemetry" section: empty. The
// collector's own telemetry here is its log on stderr, nothing else (no
// metrics, traces or resource detection: the stock factory's detectors
// would add a cloud SDK to the build and may reach for the network).
type telemetryConfig struct{}

// newLogger logs to stderr at info level: enough to see the receivers
// start and what the exporters refuse.
func newLogger(_ context.Context, set telemetry.LoggerSettings, _ component.Config) (*zap.Logger, component.ShutdownFunc, error) {
	cfg := zap.NewProductionConfig()
	cfg.Sampling = nil
	cfg.Encoding = "console"
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	build := set.BuildZapLogger
	if build == nil {
		build = zap.Config.Build
	}
	l, err := build(cfg)
	if err != nil {
		return nil, nil, err
	}
	return l, func(context.Context) error { _ = l.Sync(); return nil }, nil
}

package otlp

import (
	crand "crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// resolveResource sets c's resource by the precedence of the package doc:
// what the process knows of itself, then OTEL_RESOURCE_ATTRIBUTES, then
// Options.ServiceVersion and Options.Resource, and service.name last
// (Options.ServiceName, OTEL_SERVICE_NAME, the service.name of
// OTEL_RESOURCE_ATTRIBUTES, Options.DefaultServiceName, DefaultServiceName).
// Later attributes replace earlier ones of the same key.
func (c *config) resolveResource(o *Options, e env) error {
	attrs, err := processAttributes()
	if err != nil {
		return err
	}
	var envName string
	if v, n := lookupOne(e, envAttributes); n != "" {
		kvs, err := parseAttributes(v, n)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			if kv.Key == semconv.ServiceNameKey {
				envName = kv.Value.AsString()
				continue
			}
			attrs = append(attrs, kv)
		}
	}
	if o.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.ServiceVersion))
	}
	for _, kv := range o.Resource {
		if kv.Key == semconv.ServiceNameKey {
			return fmt.Errorf("otlp: Options.Resource has %s: set Options.ServiceName", semconv.ServiceNameKey)
		}
		if !kv.Valid() {
			return fmt.Errorf("otlp: Options.Resource: %q is not a valid attribute", kv.Key)
		}
	}
	attrs = append(attrs, o.Resource...)

	c.serviceName = o.ServiceName
	if c.serviceName == "" {
		c.serviceName, _ = lookupOne(e, envService)
	}
	for _, name := range []string{envName, o.DefaultServiceName, DefaultServiceName} {
		if c.serviceName == "" {
			c.serviceName = name
		}
	}
	c.resource = append(attrs, semconv.ServiceName(c.serviceName))
	return nil
}

// processAttributes are what the process knows of itself without asking
// anyone: no detector that could block or reach the network. The
// service.instance.id is new for every exporter: a random (version 4)
// UUID, as the semantic conventions suggest when nothing stabler is known.
func processAttributes() ([]attribute.KeyValue, error) {
	var id [16]byte
	if _, err := crand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("otlp: reading a random service.instance.id: %w", err)
	}
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	attrs := []attribute.KeyValue{
		semconv.ServiceInstanceID(fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])),
		semconv.ProcessPID(os.Getpid()),
		semconv.ProcessRuntimeName("go"),
		semconv.ProcessRuntimeVersion(runtime.Version()),
		semconv.TelemetrySDKName("opentelemetry"),
		semconv.TelemetrySDKLanguageGo,
		semconv.TelemetrySDKVersion(sdk.Version()),
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		attrs = append(attrs, semconv.HostName(h))
	}
	if exe, err := os.Executable(); err == nil {
		attrs = append(attrs, semconv.ProcessExecutableName(filepath.Base(exe)))
	} else if len(os.Args) > 0 && os.Args[0] != "" {
		attrs = append(attrs, semconv.ProcessExecutableName(filepath.Base(os.Args[0])))
	}
	if v := programVersion(); v != "" {
		attrs = append(attrs, semconv.ServiceVersion(v))
	}
	return attrs, nil
}

// programVersion is the main module's version when the program is a Go
// executable built from a versioned module: a library built as a C
// archive or shared library (the C ABI) is not the service, so it claims
// no version.
func programVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "-buildmode" && s.Value != "exe" && s.Value != "pie" {
			return ""
		}
	}
	return bi.Main.Version
}

package otlp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/gpuspans/gpuspans/go/internal/smallfile"
)

// The protocols, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	// ProtocolHTTP is OTLP/HTTP with protobuf bodies, to port 4318 by
	// convention: the default, as the OpenTelemetry specification makes it.
	ProtocolHTTP = "http/protobuf"
	// ProtocolGRPC is OTLP/gRPC, to port 4317 by convention.
	ProtocolGRPC = "grpc"
)

// ErrNoEndpoint is returned (wrapped) by New and Options.Check when neither
// Options.Endpoint nor the environment names a collector. Unlike the
// OpenTelemetry SDKs, the exporter does not default to localhost: a
// program that exports by default would send to whatever listens there.
var ErrNoEndpoint = errors.New("otlp: no endpoint")

// Target is where an exporter sends, as resolved from Options and the
// environment.
type Target struct {
	Protocol string // ProtocolHTTP or ProtocolGRPC
	// URL is what requests go to: http://host:port/v1/traces (with the
	// path used) for OTLP/HTTP; http://host:port or https://host:port for
	// gRPC.
	URL string
	// EndpointFrom and ProtocolFrom name the settings that chose them:
	// "Options.Endpoint", an environment variable, or "default".
	EndpointFrom, ProtocolFrom string
}

// config is Options resolved against the environment: what New runs with.
type config struct {
	target      Target
	host        string // host:port
	path        string // OTLP/HTTP's URL path
	tls         *tls.Config
	headers     map[string]string
	timeout     time.Duration
	gzip        bool
	serviceName string
	resource    []attribute.KeyValue // the environment's and Options', service.name last
}

// Environment variable names (the OpenTelemetry specification's).
const (
	envPrefix     = "OTEL_EXPORTER_OTLP_"
	envTraces     = "OTEL_EXPORTER_OTLP_TRACES_"
	envService    = "OTEL_SERVICE_NAME"
	envAttributes = "OTEL_RESOURCE_ATTRIBUTES"
)

// env reads the OTel variables through a lookup function, so that tests
// give theirs.
type env func(string) (string, bool)

// get returns the variable's value and name, the signal's own variable
// (OTEL_EXPORTER_OTLP_TRACES_X) before the generic one
// (OTEL_EXPORTER_OTLP_X); an empty value counts as unset, as the
// specification says.
func (e env) get(x string) (value, name string) {
	for _, n := range []string{envTraces + x, envPrefix + x} {
		if v, ok := e(n); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), n
		}
	}
	return "", ""
}

// resolve checks o and reads the environment by the precedence the package
// doc states.
func (o *Options) resolve() (*config, error) {
	e := env(o.LookupEnv)
	if e == nil {
		e = os.LookupEnv
	}
	c := &config{}
	if o.SpanExporter == nil {
		if err := c.resolveTransport(o, e); err != nil {
			return nil, err
		}
	}
	c.timeout = o.ExportTimeout
	if c.timeout == 0 {
		c.timeout = DefaultExportTimeout
		if v, n := e.get("TIMEOUT"); n != "" {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 1 || ms > int64(time.Hour/time.Millisecond) {
				return nil, fmt.Errorf("otlp: %s %q: want milliseconds, 1..%d", n, v, time.Hour/time.Millisecond)
			}
			c.timeout = time.Duration(ms) * time.Millisecond
		}
	}
	if err := c.resolveResource(o, e); err != nil {
		return nil, err
	}
	return c, nil
}

// resolveTransport resolves where and how to send.
func (c *config) resolveTransport(o *Options, e env) error {
	// The protocol first: the endpoint's rules depend on it.
	c.target.Protocol, c.target.ProtocolFrom = o.Protocol, "Options.Protocol"
	if c.target.Protocol == "" {
		c.target.Protocol, c.target.ProtocolFrom = e.get("PROTOCOL")
	}
	if c.target.Protocol == "" {
		c.target.Protocol, c.target.ProtocolFrom = ProtocolHTTP, "default"
	}
	switch c.target.Protocol {
	case ProtocolHTTP, ProtocolGRPC:
	case "http/json":
		return fmt.Errorf("otlp: %s %q: http/json is not supported: want %s or %s", c.target.ProtocolFrom, c.target.Protocol, ProtocolHTTP, ProtocolGRPC)
	default:
		return fmt.Errorf("otlp: %s %q: want %s or %s", c.target.ProtocolFrom, c.target.Protocol, ProtocolHTTP, ProtocolGRPC)
	}
	grpc := c.target.Protocol == ProtocolGRPC

	insecure := o.Insecure
	if v, n := e.get("INSECURE"); n != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("otlp: %s %q: want true or false", n, v)
		}
		insecure = insecure || b
	}

	// The endpoint: Options.Endpoint (no path: /v1/traces), the traces
	// variable (used as given; no path: /), the generic one (v1/traces
	// appended to its path).
	raw, from, kind := o.Endpoint, "Options.Endpoint", "option"
	if raw == "" {
		raw, from = lookupOne(e, envTraces+"ENDPOINT")
		kind = "traces"
	}
	if raw == "" {
		raw, from = lookupOne(e, envPrefix+"ENDPOINT")
		kind = "generic"
	}
	if raw == "" {
		return fmt.Errorf("%w: set Options.Endpoint or %sENDPOINT (http://host:4318 for %s, http://host:4317 for %s)", ErrNoEndpoint, envPrefix, ProtocolHTTP, ProtocolGRPC)
	}
	c.target.EndpointFrom = from
	u, err := parseEndpoint(raw, from, grpc)
	if err != nil {
		return err
	}
	if u.Scheme == "" { // a gRPC endpoint without a scheme: TLS unless insecure
		u.Scheme = "https"
		if insecure {
			u.Scheme = "http"
		}
	}
	c.host = u.Host
	if grpc {
		u.Path = ""
	} else {
		switch kind {
		case "option":
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/traces"
			}
		case "traces":
			if u.Path == "" {
				u.Path = "/"
			}
		case "generic":
			u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		}
		c.path = u.Path
	}
	c.target.URL = u.String()

	if u.Scheme == "https" {
		if c.tls, err = o.tlsConfig(e); err != nil {
			return err
		}
	}

	// Headers: Options.Headers as a whole, else one variable's as a whole.
	if o.Headers != nil {
		c.headers = make(map[string]string, len(o.Headers))
		for k, v := range o.Headers {
			if !validHeaderName(k) {
				return fmt.Errorf("otlp: Options.Headers: %q is not a valid header name", k)
			}
			c.headers[k] = v
		}
	} else if v, n := e.get("HEADERS"); n != "" {
		if c.headers, err = parseHeaders(v, n); err != nil {
			return err
		}
	} else {
		c.headers = map[string]string{}
	}

	comp, compFrom := o.Compression, "Options.Compression"
	if comp == "" {
		comp, compFrom = e.get("COMPRESSION")
	}
	switch comp {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return fmt.Errorf("otlp: %s %q: want gzip or none", compFrom, comp)
	}
	return nil
}

// lookupOne reads one variable, trimmed; empty counts as unset.
func lookupOne(e env, name string) (value, from string) {
	if v, ok := e(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), name
	}
	return "", ""
}

// parseEndpoint checks an endpoint URL; from names the setting it came
// from, for errors. A gRPC endpoint may be host:port without a scheme
// (the specification's form for OTEL_EXPORTER_OTLP_INSECURE); its scheme
// is then empty.
func parseEndpoint(raw, from string, grpc bool) (*url.URL, error) {
	if grpc && !strings.Contains(raw, "://") {
		host, port, err := net.SplitHostPort(raw)
		if err != nil || host == "" {
			return nil, fmt.Errorf("otlp: %s %q: want http://host:port, https://host:port or host:port", from, raw)
		}
		if !validPort(port) {
			return nil, fmt.Errorf("otlp: %s %q: port %q, want 1..65535", from, raw, port)
		}
		return &url.URL{Host: raw}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("otlp: %s %q: %w", from, raw, errors.Unwrap(err))
	}
	port := "4318"
	if grpc {
		port = "4317"
	}
	switch {
	case u.Scheme == "grpc" || u.Scheme == "grpcs":
		return nil, fmt.Errorf("otlp: %s %q: scheme %q, want http:// (plaintext) or https:// (TLS), with the protocol set to %s", from, raw, u.Scheme, ProtocolGRPC)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("otlp: %s %q: scheme %q, want http:// (plaintext) or https:// (TLS)", from, raw, u.Scheme)
	case u.Hostname() == "":
		return nil, fmt.Errorf("otlp: %s %q has no host", from, raw)
	case u.Port() == "":
		return nil, fmt.Errorf("otlp: %s %q has no port (the collector's port for %s is usually %s)", from, raw, map[bool]string{true: ProtocolGRPC, false: ProtocolHTTP}[grpc], port)
	case !validPort(u.Port()):
		return nil, fmt.Errorf("otlp: %s %q: port %q, want 1..65535", from, raw, u.Port())
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("otlp: %s %q: want no user, query or fragment (headers carry credentials)", from, raw)
	case grpc && u.Path != "" && u.Path != "/":
		return nil, fmt.Errorf("otlp: %s %q: a gRPC endpoint has no path", from, raw)
	}
	return u, nil
}

// maxCertFile bounds a certificate or key file named by the environment: a
// CA bundle is some hundreds of KiB.
const maxCertFile = 4 << 20

// tlsConfig is Options.TLSConfig, else one built from the certificate
// variables, else nil (the system's roots). The files are read as
// smallfile reads them: a FIFO or /dev/zero is refused, naming the
// variable, before the SDK would read them too.
func (o *Options) tlsConfig(e env) (*tls.Config, error) {
	if o.TLSConfig != nil {
		return o.TLSConfig.Clone(), nil
	}
	ca, caVar := e.get("CERTIFICATE")
	cert, certVar := e.get("CLIENT_CERTIFICATE")
	key, keyVar := e.get("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := readCert(caVar, ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("otlp: %s %q: no PEM certificate in it", caVar, ca)
		}
	}
	switch {
	case cert != "" && key != "":
		certPEM, err := readCert(certVar, cert)
		if err != nil {
			return nil, err
		}
		keyPEM, err := readCert(keyVar, key)
		if err != nil {
			return nil, err
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("otlp: %s %q, %s %q: %w", certVar, cert, keyVar, key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case cert != "":
		return nil, fmt.Errorf("otlp: %s %q without %sCLIENT_KEY", certVar, cert, envPrefix)
	case key != "":
		return nil, fmt.Errorf("otlp: %s %q without %sCLIENT_CERTIFICATE", keyVar, key, envPrefix)
	}
	return cfg, nil
}

// readCert reads the certificate or key file that variable v names.
func readCert(v, path string) ([]byte, error) {
	b, err := smallfile.Read(path, maxCertFile)
	if err != nil {
		return nil, fmt.Errorf("otlp: %s %q: %w", v, path, err)
	}
	return b, nil
}

// parseHeaders parses the HEADERS variables: comma-separated key=value
// pairs, values percent-encoded (the W3C Baggage format).
func parseHeaders(v, name string) (map[string]string, error) {
	m := make(map[string]string)
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || !validHeaderName(k) {
			return nil, fmt.Errorf("otlp: %s %q: %q is not key=value with a header name for key", name, v, strings.TrimSpace(kv))
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("otlp: %s %q: the value of %s: %w", name, v, k, err)
		}
		m[k] = dec
	}
	return m, nil
}

// parseAttributes parses OTEL_RESOURCE_ATTRIBUTES: comma-separated
// key=value pairs, values percent-encoded; all are strings.
func parseAttributes(v, name string) ([]attribute.KeyValue, error) {
	var out []attribute.KeyValue
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("otlp: %s %q: %q is not key=value", name, v, strings.TrimSpace(kv))
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("otlp: %s %q: the value of %s: %w", name, v, k, err)
		}
		out = append(out, attribute.String(k, dec))
	}
	return out, nil
}

// validHeaderName reports whether k is an HTTP token (RFC 9110), as
// header names and gRPC metadata keys must be.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// Package otlp exports a hub's landed spans as OpenTelemetry traces over
// OTLP, gRPC or HTTP, so that GPU time shows up in the same tracing
// backend, and linked to the same requests, as a serving engine's request
// traces.
//
// # Where to, and how
//
// Options names the collector, or the standard environment variables do,
// as the OpenTelemetry specification defines them. For each setting the
// first that is set wins (an empty variable is unset):
//
//	setting       Options         environment, traces first                                   default
//	protocol      Protocol        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL   http/protobuf
//	endpoint      Endpoint        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT   none: an error
//	headers       Headers         OTEL_EXPORTER_OTLP_TRACES_HEADERS, OTEL_EXPORTER_OTLP_HEADERS     none
//	timeout       ExportTimeout   OTEL_EXPORTER_OTLP_TRACES_TIMEOUT, OTEL_EXPORTER_OTLP_TIMEOUT     10 s
//	compression   Compression     OTEL_EXPORTER_OTLP_TRACES_COMPRESSION, OTEL_EXPORTER_OTLP_COMPRESSION  none
//	TLS           TLSConfig       OTEL_EXPORTER_OTLP_[TRACES_]CERTIFICATE, _CLIENT_CERTIFICATE, _CLIENT_KEY  system roots
//	plaintext     Insecure        OTEL_EXPORTER_OTLP_TRACES_INSECURE, OTEL_EXPORTER_OTLP_INSECURE   false
//	service.name  ServiceName     OTEL_SERVICE_NAME, then service.name in OTEL_RESOURCE_ATTRIBUTES  DefaultServiceName, then "gpuspans"
//	resource      Resource        OTEL_RESOURCE_ATTRIBUTES                                      the process's, below
//
// Protocols are "grpc" (port 4317 by convention) and "http/protobuf"
// (4318). Endpoints are URLs with a port: http:// sends in plaintext,
// https:// with TLS; a gRPC endpoint may also be host:port, with TLS unless
// Insecure (or an INSECURE variable) is true. The path of an OTLP/HTTP
// endpoint follows the specification: Options.Endpoint and the traces
// variable are used as given (with no path, Options.Endpoint posts to
// /v1/traces and the variable to /), and the generic variable is a base to
// which v1/traces is appended; gRPC endpoints have no path. Headers and
// resource attributes in variables are key=value pairs separated by
// commas, values percent-encoded; timeouts are milliseconds. A malformed
// value makes New fail with an error naming the variable and the value.
// Unlike the SDKs, nothing defaults to localhost: with no endpoint
// anywhere New returns ErrNoEndpoint. Options.LookupEnv replaces the
// process environment (tests; an engine with its own configuration).
//
// A send that fails because the collector speaks another protocol (the
// HTTP exporter at a gRPC port answers "malformed HTTP response", the gRPC
// one at an HTTP port "frame header looked like an HTTP/1.1 header") fails
// with ErrProtocolMismatch and a message that names what the collector
// speaks and the fix; so does plaintext sent to TLS, and the reverse.
//
// The resource carries, later ones replacing earlier ones of the same key:
// what the process knows of itself (host.name, process.pid,
// process.executable.name, process.runtime.name and .version,
// telemetry.sdk.name, .language and .version, service.version when the
// program is a Go executable of a versioned module, and service.instance.id,
// a random UUID per exporter), then OTEL_RESOURCE_ATTRIBUTES, then
// Options.ServiceVersion and Options.Resource, then service.name. No
// resource detector runs: nothing can block or reach the network.
//
// # What is sent
//
// One trace per sampled engine step: a root span "gpu step" covering the
// step's spans on every device, under it the lane spans ("lane decode"), and
// under each lane the kernel spans ("kernel attn") of its device that lie
// inside it in time (a kernel inside no lane hangs off the root). Spans keep
// their host-clock start (gpuspans.Span.StartNs) and their GPU duration, to
// the nanosecond. The step's trace and root span ids are derived from the
// step number and a random per-exporter key, and the other span ids from
// the span's landing Seq, so a span that lands after its step was sent still
// joins its trace. Spans the backend could not place on the host clock
// (StartNs 0, as with gpuspans.StartTimesNever) are not sent: a span at
// the Unix epoch, or at the time the exporter read it, would be a lie on a
// timeline. They are counted (Stats.Unplaced).
//
// Attributes, with semantic-convention names where they exist
// (hardware/GPU conventions; all other names under "gpuspans."):
//
//	hw.type                "gpu"
//	hw.id                  the GPU UUID, as DCGM and nvidia-smi write it (when known)
//	hw.model               the product name, "NVIDIA H200" (when known)
//	gpuspans.device        the device ordinal (int)
//	gpuspans.pci_bus_id    "00000000:19:00.0" (when known)
//	gpuspans.driver        the driver's CUDA version, "13.0" (when known)
//	gpuspans.stream        the stream, "0x..."
//	gpuspans.kind          "lane" or "kernel"
//	gpuspans.lane          the lane name, on lane spans
//	gpuspans.kernel        the kernel name, on kernel spans
//	gpuspans.step          the engine step (int)
//
// A kernel window's lane spans add GPU time (gpuspans.Span, docs/design.md),
// in ns: gpuspans.gpu.busy_ns and idle_ns as the window measured the span;
// where the window settled, gpuspans.gpu.served_ns (the lane's time outside
// windows, the step the engine serves), window_cost_ns (the rest: what the
// window added) and the served idle by cause, gpuspans.gpu.idle.host_ns,
// launch_ns, copy_ns, wait_ns and other_ns.
//
// # Requests
//
// LinkStep tells the exporter which requests (their span contexts) a step
// serves; the lane spans of that step then carry OTel links to them, at most
// Options.MaxLinks per step (the rest counted, and sent as the span's
// dropped-links count). It copies into a fixed ring and allocates nothing.
// TracerProvider gives the engine a tracer whose spans (its request spans,
// in the demo) go out through the same queue and connection.
//
// A request whose RequestWork carried its span context (TraceID, SpanID:
// gpuspans.Hub.ServeRequests) gets, once it finished and its spans landed,
// a span RequestSpanName ("gpu time") under its own span: from its first
// lane span's begin to its last one's end, with what the hub attributed to
// it (gpuspans.RequestRecord) as attributes: gpuspans.gpu.time_ns, its
// input_ns and output_ns parts, busy_ns over busy_time_ns where kernel
// windows measured its lanes, gpuspans.gpu.lane.<lane>.time_ns per lane,
// gpuspans.request.id, steps, new_tokens and decoded_tokens, and
// gpuspans.served_model, adapter and tenant where given. Every finished
// request with a span context is sent, whatever the step sampling.
//
// # Cost and safety
//
// Nothing here runs on the serving path but LinkStep. A goroutine reads
// Hub.RecentSpans every Options.PollEvery, keeps the spans of one step in
// Options.SampleEvery (steps whose number is a multiple of it: every lane
// span of those steps, and their kernel spans when the step was armed), and
// every kernel window's step whatever the sampling (its GPU time), and
// puts them on a bounded queue without ever waiting; another goroutine sends
// the queue in batches. A full queue drops spans, a failed send drops its
// batch (no retries: the next batch tries again), and both are counted and
// exported as Prometheus metrics by Collector. A partial success (the
// collector rejected some of a batch's spans) counts only the rejected
// spans as failed. An unreachable collector
// therefore costs one failed request per batch and counted drops, and
// nothing in the engine waits for it.
package otlp

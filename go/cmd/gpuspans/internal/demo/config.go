package demo

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuspans/gpuspans/go/export/otlp"
	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
	"github.com/gpuspans/gpuspans/go/internal/optname"
)

// Config configures Run: a plain value, which Run copies. DefaultConfig
// is a demo a newcomer can start without flags.
type Config struct {
	Backend string // BackendAuto, BackendSim or BackendCUDA
	Device  int    // the GPU ordinal
	Engine  EngineConfig

	Rate     float64       // engine steps per second; 0: as fast as the GPU allows
	Steps    int           // stop after this many steps; 0: no limit
	Duration time.Duration // stop after this long; 0: no limit

	// Hub are the hub's options. Run sets Lanes, RecentSpans, Logf and
	// KernelTracer itself, and a KernelTiming other than events falls back
	// to events on a backend with no CUPTI to see its kernels.
	Hub gpuspans.Options

	Listen string // HTTP address; "" serves nothing
	Token  string // bearer token of the control endpoints; required off loopback
	// ProtectReads requires Token on /metrics and the live page as well.
	ProtectReads bool
	// KernelHistograms adds a histogram per kernel to /metrics
	// (prom.Options.KernelHistograms); ClassicBuckets is the classic buckets
	// per doubling of its histograms (prom.Options.ClassicBuckets).
	KernelHistograms bool
	ClassicBuckets   int
	// MetricLabels go on every gpuspans series /metrics serves
	// (gpuspanshttp.Options.ConstLabels): a model name, say.
	MetricLabels map[string]string

	// TracePath is the timeline trace written on exit; "" writes none. A
	// "*" in its last element makes a new file at start, the "*" replaced
	// by a random string (os.CreateTemp), and the trace goes there; the
	// same holds for SpansPath.
	TracePath  string
	TraceSpans int // the trace keeps the last this many spans
	// Command is how hints name the gpuspans command, as the user ran it
	// (tools/gpuspans.sh from a checkout); "" is "gpuspans".
	Command   string
	SpansPath string // the span file, written as spans land; "" writes none

	// OTLP is the OpenTelemetry collector to send GPU spans to, with
	// synthetic request spans they link to: its endpoint (http://host:4318,
	// or http://host:4317 with OTLPProtocol grpc); "" sends where the OTel
	// environment variables say (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT), or
	// nothing when they name no endpoint; OTLPOff sends nothing.
	OTLP string
	// OTLPProtocol is "grpc" or "http/protobuf"; "": the environment's
	// (OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL), else http/protobuf.
	OTLPProtocol string
	// LookupEnv reads the OTel environment variables (nil: the process's).
	LookupEnv func(key string) (string, bool)
	// OTLPSampleEvery sends the spans of one step in this many.
	OTLPSampleEvery int
	// Requests is how many simulated requests each step serves (with OTLP
	// or Tenants).
	Requests int
	// Tenants, when not 0, has the simulated requests come from this many
	// tenants and says them to the hub every step (whose GPU time): tenant
	// t1's with long prompts and contexts, the others' short; each lane
	// runs one more kernel whose time its batch sets.
	Tenants int

	// Profile keeps the build's GPU profile in a file and compares it with
	// another build's found there (Hub.StartProfile); Path "": none.
	// ProfileNote, when set, is said at start: how kernel timing serves it.
	Profile     gpuspans.ProfileOptions
	ProfileNote string

	// StatusEvery is the status line's period (0: twice a second on a
	// terminal, every five seconds otherwise; < 0: no status line).
	StatusEvery time.Duration
	// OnListen, when set, is called with the bound address once the HTTP
	// server is up (the port, when Listen asked for port 0).
	OnListen func(net.Addr)
}

// Defaults of DefaultConfig.
const (
	DefaultListen     = "127.0.0.1:9464"
	DefaultRate       = 100
	DefaultTraceSpans = 100000
	// MinRate and MaxRate bound Config.Rate (but for 0): one step in
	// 1000 s to one a microsecond.
	MinRate       = 1e-3
	MaxRate       = 1e6
	DefaultJitter = 0.25
	// MaxOTLPSampleEvery bounds Config.OTLPSampleEvery.
	MaxOTLPSampleEvery = 1 << 20
	// OTLPOff as Config.OTLP sends no spans, whatever the environment says.
	OTLPOff = "off"
	// OTLPServiceName is the demo's service.name, unless the environment
	// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) names another.
	OTLPServiceName = "gpuspans-demo"
	// recentSpans sizes the hub's recent-span ring that the trace and the
	// span file are fed from: several seconds of spans at any sane rate,
	// between polls every pollEvery.
	recentSpans = 1 << 16
	pollEvery   = 200 * time.Millisecond
)

// DefaultTracePath is where the demo writes its trace unless told: in the
// system's temporary directory, so that a run from a checkout leaves no
// file in it, under a new name each run (the "*", see Config.TracePath), so
// that it never replaces a file someone else made, nor an earlier run's.
var DefaultTracePath = filepath.Join(os.TempDir(), "gpuspans-trace-*.json")

// DefaultKernels are the demo's kernels: a prefill lane of about 860 us and
// a decode lane of about 185 us plus a 35 us graph.
var (
	DefaultPrefill = Kernels{{"embed", 60 * time.Microsecond}, {"attn_prefill", 450 * time.Microsecond}, {"mlp_prefill", 350 * time.Microsecond}}
	DefaultDecode  = Kernels{{"attn_decode", 90 * time.Microsecond}, {"mlp_decode", 70 * time.Microsecond}, {"sample", 25 * time.Microsecond}}
	DefaultGraph   = Kernels{{"norm", 15 * time.Microsecond}, {"rope", 10 * time.Microsecond}, {"residual", 10 * time.Microsecond}}
)

// DefaultConfig returns the demo's defaults: auto backend, 100 steps a
// second until interrupted, level kernel with the library's kernel span
// period, the HTTP surface on 127.0.0.1:9464, and a trace on exit. Each
// call returns a new value; safe from any goroutine.
func DefaultConfig() Config {
	return Config{
		Backend: BackendAuto,
		Engine: EngineConfig{
			Prefill: append(Kernels(nil), DefaultPrefill...),
			Decode:  append(Kernels(nil), DefaultDecode...),
			Graph:   append(Kernels(nil), DefaultGraph...),
			Jitter:  DefaultJitter,
			Seed:    1,
		},
		Rate: DefaultRate,
		Hub: gpuspans.Options{
			Level:             gpuspans.LevelKernel,
			KernelSpanEvery:   gpuspans.DefaultKernelSpanEvery,
			Slots:             gpuspans.DefaultSlots,
			KernelWindowEvery: gpuspans.DefaultKernelWindowEvery,
			KernelWindowSteps: gpuspans.DefaultKernelWindowSteps,
			KernelLabels:      gpuspans.DefaultKernelLabels,
		},
		Listen:          DefaultListen,
		ClassicBuckets:  prom.DefaultClassicBuckets,
		TracePath:       DefaultTracePath,
		TraceSpans:      DefaultTraceSpans,
		OTLPSampleEvery: otlp.DefaultSampleEvery,
		Requests:        DefaultRequests,
	}
}

func (c *Config) command() string {
	if c.Command == "" {
		return "gpuspans"
	}
	return c.Command
}

// Validate reports the first setting out of range. It reads c, and the
// OTel environment variables through c.LookupEnv.
func (c *Config) Validate() error {
	switch {
	case c.Rate != 0 && !(c.Rate >= MinRate && c.Rate <= MaxRate): // NaN fails both
		return fmt.Errorf("rate %v: want 0 (steps back to back) or %v..%v steps per second", c.Rate, MinRate, MaxRate)
	case !(c.Engine.Jitter >= 0 && c.Engine.Jitter <= 0.9):
		return fmt.Errorf("jitter %v: want 0..0.9", c.Engine.Jitter)
	case c.Engine.HostGap < 0 || c.Engine.HostGap > MaxHostGap:
		return fmt.Errorf("host_gap %v: want 0..%v", c.Engine.HostGap, MaxHostGap)
	case c.Steps < 0:
		return fmt.Errorf("steps %d: want >= 0", c.Steps)
	case c.Duration < 0:
		return fmt.Errorf("duration %v: want >= 0", c.Duration)
	case c.Profile.Path == "" && c.Profile.Build != "":
		return fmt.Errorf("build %q without profile: the build identity tags a profile; give --profile too", c.Profile.Build)
	case c.Profile.Path != "" && c.Profile.Build == "":
		return fmt.Errorf("profile %s without build: give the engine's build identity (--build, or a version or build label in --metric_labels)", c.Profile.Path)
	case c.Profile.Path != "" && c.Profile.Check() != nil:
		return errors.New(strings.TrimPrefix(c.Profile.Check().Error(), "gpuspans: "))
	case c.TracePath != "" && c.TraceSpans < 1:
		return fmt.Errorf("trace spans %d: want >= 1", c.TraceSpans)
	case len(c.Engine.Prefill)+len(c.Engine.Decode)+len(c.Engine.Graph) == 0:
		return errors.New("no kernels: give the prefill or decode lane at least one")
	case c.ProtectReads && c.Token == "":
		return errors.New("protect_reads: there is no token to require (--token, --token_file or GPUSPANS_TOKEN)")
	case c.OTLPSampleEvery < 1 || c.OTLPSampleEvery > MaxOTLPSampleEvery:
		return fmt.Errorf("otlp_sample_every %d: want 1..%d", c.OTLPSampleEvery, MaxOTLPSampleEvery)
	case c.Requests < 1 || c.Requests > MaxRequests:
		return fmt.Errorf("requests %d: want 1..%d", c.Requests, MaxRequests)
	case c.Tenants < 0 || c.Tenants > MaxTenants:
		return fmt.Errorf("tenants %d: want 0..%d", c.Tenants, MaxTenants)
	}
	if err := c.Hub.Validate(); err != nil {
		return errors.New(optname.Rewrite(err.Error(), func(f string) string { return "--" + optname.Snake(f) }))
	}
	if err := prom.CheckClassicBuckets(c.ClassicBuckets); err != nil {
		return fmt.Errorf("classic_buckets %d: want 1, 2, 4 or 8", c.ClassicBuckets)
	}
	if err := prom.CheckConstLabels(c.MetricLabels); err != nil {
		return fmt.Errorf("metric_labels: %w", err)
	}
	if _, _, err := c.otlpOptions(); err != nil {
		return err // it names the flag's option or the variable, after "otlp:"
	}
	if err := control.CheckToken(c.Token); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	return nil
}

// otlpOptions returns the OTLP exporter's options, and whether to start
// one: with OTLP set (but OTLPOff), or with an endpoint in the
// environment.
func (c *Config) otlpOptions() (otlp.Options, bool, error) {
	o := otlp.Options{
		Protocol:           c.OTLPProtocol,
		DefaultServiceName: OTLPServiceName,
		SampleEvery:        c.OTLPSampleEvery,
		LookupEnv:          c.LookupEnv,
	}
	if c.OTLP == OTLPOff {
		return o, false, nil
	}
	// The flags first, so that errors name them.
	switch c.OTLPProtocol {
	case "", otlp.ProtocolGRPC, otlp.ProtocolHTTP:
	default:
		return o, false, fmt.Errorf("otlp_protocol %q: want %s or %s", c.OTLPProtocol, otlp.ProtocolGRPC, otlp.ProtocolHTTP)
	}
	if c.OTLP != "" {
		if err := otlp.CheckEndpoint(c.OTLPProtocol, c.OTLP); err != nil {
			return o, false, err // it names the endpoint, after "otlp:"
		}
	}
	o.Endpoint = c.OTLP
	err := o.Check()
	if c.OTLP == "" && errors.Is(err, otlp.ErrNoEndpoint) {
		return o, false, nil
	}
	return o, err == nil, err
}

// flagName names an OTLP setting's source as a user of the command knows
// it: the flag for an option, else the variable or "default".
func flagName(from string) string {
	switch from {
	case "Options.Endpoint":
		return "--otlp"
	case "Options.Protocol":
		return "--otlp_protocol"
	}
	return from
}

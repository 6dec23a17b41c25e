// Over 600 lines: the demo's tests, each running Run or its engine on the
// simulated GPU with the fast configuration below.

package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/cmd/gpuspans/internal/summary"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp"
)

// fastConfig is a demo on the simulator that runs steps back to back with
// short kernels, so a few hundred steps take well under a second.
func fastConfig(t *testing.T) Config {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Backend = BackendSim
	cfg.Rate = 0
	cfg.Listen = "127.0.0.1:0"
	cfg.StatusEvery = -1
	cfg.TracePath = filepath.Join(dir, "trace.json")
	cfg.SpansPath = filepath.Join(dir, "demo.spans")
	cfg.Engine.Prefill = Kernels{{"embed", 20 * time.Microsecond}, {"attn_prefill", 40 * time.Microsecond}}
	cfg.Engine.Decode = Kernels{{"attn_decode", 10 * time.Microsecond}, {"sample", 5 * time.Microsecond}}
	cfg.Engine.Graph = Kernels{{"norm", 5 * time.Microsecond}, {"rope", 5 * time.Microsecond}}
	cfg.Hub.KernelSpanEvery = 4
	return cfg
}

// syncBuffer is an output the test reads while Run writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunOnTheSimulator(t *testing.T) {
	cfg := fastConfig(t)
	cfg.Steps = 300
	var out syncBuffer
	res, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	text := out.String()
	if first := strings.SplitN(text, "\n", 2)[0]; !strings.Contains(first, "using the simulated GPU (--backend=sim)") {
		t.Errorf("first line %q does not say the simulator runs", first)
	}
	if res.Steps != 300 || res.StoppedWhy != "--steps" {
		t.Errorf("ran %d steps, stopped by %q", res.Steps, res.StoppedWhy)
	}

	s := &res.Snapshot
	c := &s.Counters
	// 300 steps of two lanes, kernel spans on one step in 4 (the capture
	// step, armed on purpose, is step 1 and has no lanes).
	if c.Landed < 600 || c.Errored != 0 || c.InFlight != 0 || c.Dropped[gpuspans.DropSlotBusy] != 0 {
		t.Errorf("counters %+v", *c)
	}
	if err := gpuspanstest.Accounting(s); err != nil {
		t.Error(err)
	}
	if res.Capture.Kernels != 2 || res.Capture.Refused != 2 || c.Dropped[gpuspans.DropCapturing] != 2 {
		t.Errorf("capture %+v, dropped capturing %d: want both graph kernels refused", res.Capture, c.Dropped[gpuspans.DropCapturing])
	}
	withSpans := 0
	for _, a := range s.Kernels {
		if a.Count > 0 {
			withSpans++
		}
	}
	// Every registered kernel is listed, those with no span (the graph's,
	// "other") with zeros.
	if len(s.Lanes) != 2 || len(s.Kernels) != 7 || withSpans != 4 {
		t.Errorf("%d lane and %d kernel aggregates (%d with spans), want 2 and 7 (4)", len(s.Lanes), len(s.Kernels), withSpans)
	}
	for _, a := range s.Lanes {
		if a.Count != 300 {
			t.Errorf("lane %s: %d spans, want 300", a.Name, a.Count)
		}
	}

	// The trace is JSON with a complete event per span.
	raw, err := os.ReadFile(cfg.TracePath)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Ph   string  `json:"ph"`
			Name string  `json:"name"`
			Cat  string  `json:"cat"`
			Dur  float64 `json:"dur"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(raw, &tr); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	events := map[string]int{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" {
			events[e.Cat+"/"+e.Name]++
		}
	}
	if events["lane/prefill"] != 300 || events["lane/decode"] != 300 || events["kernel/attn_prefill"] == 0 {
		t.Errorf("trace events %v", events)
	}
	if uint64(len(tr.TraceEvents)) < res.TraceSpans || res.TraceSpans != c.Landed {
		t.Errorf("trace has %d events for %d spans written, %d landed", len(tr.TraceEvents), res.TraceSpans, c.Landed)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(cfg.TracePath), ".*.tmp"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	// The span file holds every span, and its summary is the exit summary.
	f, err := os.Open(cfg.SpansPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, st, err := summary.ReadSpanFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if st.Spans != c.Landed || res.FileSpans != c.Landed {
		t.Errorf("span file has %d spans (%d reported), %d landed", st.Spans, res.FileSpans, c.Landed)
	}
	var table bytes.Buffer
	if err := summary.Write(&table, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, table.String()) {
		t.Errorf("exit summary is not the span file's table:\n%s\nwant within it:\n%s", text, table.String())
	}
}

// While the demo runs, its HTTP surface serves the page, the metrics and
// the controls, and a control change reaches the engine's hub.
func TestRunServesWhileRunning(t *testing.T) {
	cfg := fastConfig(t)
	cfg.Rate = 500
	cfg.TracePath, cfg.SpansPath = "", ""
	addrc := make(chan net.Addr, 1)
	cfg.OnListen = func(a net.Addr) { addrc <- a }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	type result struct {
		res Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := Run(ctx, cfg, &out)
		done <- result{res, err}
	}()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a.String()
	case r := <-done:
		t.Fatalf("Run ended early: %v\n%s", r.err, out.String())
	case <-time.After(10 * time.Second):
		t.Fatal("no listen address")
	}
	client := &http.Client{Timeout: 5 * time.Second}
	fetch := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	bars := regexp.MustCompile(`<svg class="hist" data-kind="lane" data-name="(prefill|decode)" data-device="0" data-count="[1-9]`)
	deadline := time.Now().Add(time.Minute)
	for {
		code, page := fetch("GET", "/debug/gpuspans", "")
		if code == 200 && len(bars.FindAllString(page, -1)) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lane histograms with spans on the page after 10 s: %d\n%s", code, page)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _ := fetch("GET", "/", ""); code != 200 { // redirected to the page
		t.Errorf("GET / = %d", code)
	}
	code, metrics := fetch("GET", "/metrics", "")
	for _, want := range []string{`gpuspans_lane_duration_seconds_bucket{device="0",lane="decode",le=`, "gpuspans_spans_landed_total", "go_goroutines", "process_"} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics (%d) lacks %q", code, want)
		}
	}
	if code, body := fetch("PUT", "/control/kernel_span_every", "3"); code != 200 || body != "3\n" {
		t.Errorf("PUT kernel_span_every: %d %q", code, body)
	}
	if code, body := fetch("PUT", "/control/level", "step"); code != 200 || body != "step\n" {
		t.Errorf("PUT level: %d %q", code, body)
	}
	if code, _ := fetch("PUT", "/control/level", "loud"); code != 400 {
		t.Errorf("PUT level loud: %d", code)
	}
	code, js := fetch("GET", "/debug/gpuspans/snapshot.json", "")
	var snap struct {
		Level           string `json:"level"`
		KernelSpanEvery int    `json:"kernel_span_every"`
	}
	if err := json.Unmarshal([]byte(js), &snap); code != 200 || err != nil || snap.Level != "step" || snap.KernelSpanEvery != 3 {
		t.Errorf("snapshot.json after the changes: %d %v %+v", code, err, snap)
	}
	cancel()
	r := <-done
	if r.err != nil || r.res.StoppedWhy != "interrupted" {
		t.Errorf("Run: %v, stopped by %q", r.err, r.res.StoppedWhy)
	}
	if r.res.Snapshot.Level != gpuspans.LevelStep {
		t.Errorf("level %v at the end, want step", r.res.Snapshot.Level)
	}
	if !strings.Contains(out.String(), "control: level kernel -> step") {
		t.Errorf("the change was not logged:\n%s", out.String())
	}
}

func TestRunRefusesAPublicAddressWithoutAToken(t *testing.T) {
	cfg := fastConfig(t)
	cfg.Listen = "0.0.0.0:0"
	cfg.Steps = 1
	var out bytes.Buffer
	_, err := Run(context.Background(), cfg, &out)
	if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("Run on 0.0.0.0 without a token: %v", err)
	}
	if _, statErr := os.Stat(cfg.TracePath); !os.IsNotExist(statErr) {
		t.Errorf("a refused run left a trace: %v", statErr)
	}
	cfg.Token = "t0ken"
	if _, err := Run(context.Background(), cfg, &out); err != nil {
		t.Errorf("Run on 0.0.0.0 with a token: %v", err)
	}
}

func TestRunBadPaths(t *testing.T) {
	cfg := fastConfig(t)
	cfg.Steps = 1
	cfg.TracePath = filepath.Join(t.TempDir(), "missing", "trace.json")
	if _, err := Run(context.Background(), cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "--trace") {
		t.Errorf("trace in a missing directory: %v", err)
	}
	cfg = fastConfig(t)
	cfg.Steps = 1
	cfg.SpansPath = filepath.Join(t.TempDir(), "missing", "x.spans")
	if _, err := Run(context.Background(), cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "--spans") {
		t.Errorf("span file in a missing directory: %v", err)
	}
}

// TestRunDefaultTraceIsANewFile: the default trace path is a pattern, so
// each run writes a file of its own and never one that was there (someone
// else's, or an earlier run's); a run that fails leaves nothing behind.
func TestRunDefaultTraceIsANewFile(t *testing.T) {
	if !isPattern(DefaultTracePath) || filepath.Dir(DefaultTracePath) != os.TempDir() {
		t.Fatalf("DefaultTracePath %s: want a pattern in %s", DefaultTracePath, os.TempDir())
	}
	dir := t.TempDir()
	pattern := filepath.Join(dir, "gpuspans-trace-*.json")
	theirs := filepath.Join(dir, "gpuspans-trace-x.json")
	if err := os.WriteFile(theirs, []byte("not ours"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		cfg := fastConfig(t)
		cfg.Steps, cfg.Listen, cfg.SpansPath, cfg.TracePath = 20, "", "", pattern
		var out syncBuffer
		res, err := Run(context.Background(), cfg, &out)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := filepath.Glob(pattern)
		if len(m) != i+2 {
			t.Fatalf("run %d: files %q: want a new one each run", i, m)
		}
		if !strings.Contains(out.String(), "spans written to "+filepath.Join(dir, "gpuspans-trace-")) {
			t.Errorf("run %d: output does not name the trace:\n%s", i, out.String())
		}
		if res.TraceSpans == 0 {
			t.Errorf("run %d: no spans in the trace", i)
		}
	}
	if b, _ := os.ReadFile(theirs); string(b) != "not ours" {
		t.Errorf("%s changed: %q", theirs, b)
	}

	// A run that fails after the outputs are made removes the new file.
	cfg := fastConfig(t)
	cfg.Steps, cfg.Listen, cfg.TracePath = 1, "", filepath.Join(dir, "fail-*.json")
	cfg.SpansPath = filepath.Join(dir, "missing", "x.spans")
	if _, err := Run(context.Background(), cfg, io.Discard); err == nil {
		t.Fatal("span file in a missing directory: no error")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "fail-*")); len(m) != 0 {
		t.Errorf("left behind: %q", m)
	}
}

// TestRunOutputsReplaceOnlyRegularFiles: a FIFO, a device or a symbolic
// link at an output path, or the two outputs naming one file, is refused by
// name before anything is created or emptied.
func TestRunOutputsReplaceOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "kept")
	if err := os.WriteFile(kept, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(kept, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, trace, spans, want string
	}{
		{"trace /dev/null", "/dev/null", "", "--trace /dev/null is not a regular file"},
		{"spans /dev/null", "", "/dev/null", "--spans /dev/null is not a regular file"},
		{"trace FIFO", fifo, "", "not a regular file"},
		{"trace symlink", link, "", "symbolic link"},
		{"spans symlink", "", link, "symbolic link"},
		{"same file", kept, kept, "are the same file"},
		{"same file, not there yet", filepath.Join(dir, "new"), filepath.Join(dir, ".", "new"), "are the same file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := fastConfig(t)
			cfg.Steps = 1
			cfg.TracePath, cfg.SpansPath = c.trace, c.spans
			if _, err := Run(context.Background(), cfg, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("/dev/null is no longer a device: %v %v", fi.Mode(), err)
	}
	if b, err := os.ReadFile(kept); err != nil || string(b) != "keep" {
		t.Errorf("an output was emptied or replaced: %q %v", b, err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestRunUnwritableTraceNamesIt(t *testing.T) {
	// A directory that is a file: unwritable even for root.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig(t)
	cfg.Steps = 1
	cfg.TracePath = filepath.Join(notDir, "trace.json")
	_, err := Run(context.Background(), cfg, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--trace "+cfg.TracePath+":") || strings.Contains(err.Error(), ".tmp") {
		t.Errorf("error %v: want it to name %s, not a temporary file", err, cfg.TracePath)
	}
}

func TestRunPacesSteps(t *testing.T) {
	cfg := fastConfig(t)
	cfg.Rate = 200
	cfg.Duration = 300 * time.Millisecond
	cfg.Listen, cfg.TracePath, cfg.SpansPath = "", "", ""
	res, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// 60 steps at most; fewer on a loaded machine, but not a handful.
	if res.Steps < 15 || res.Steps > 62 || res.StoppedWhy != "--duration" {
		t.Errorf("%d steps in 300 ms at 200/s, stopped by %q", res.Steps, res.StoppedWhy)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Config)
	}{
		{"negative rate", func(c *Config) { c.Rate = -1 }},
		{"negative steps", func(c *Config) { c.Steps = -1 }},
		{"negative every", func(c *Config) { c.Hub.KernelSpanEvery = -1 }},
		{"negative slots", func(c *Config) { c.Hub.Slots = -1 }},
		{"window period under 1ms", func(c *Config) { c.Hub.KernelWindowEvery = time.Microsecond }},
		{"no kernels", func(c *Config) { c.Engine = EngineConfig{} }},
		{"no trace spans", func(c *Config) { c.TraceSpans = 0 }},
		{"NaN rate", func(c *Config) { c.Rate = math.NaN() }},
		{"infinite rate", func(c *Config) { c.Rate = math.Inf(1) }},
		{"tiny rate", func(c *Config) { c.Rate = 1e-300 }},
		{"NaN jitter", func(c *Config) { c.Engine.Jitter = math.NaN() }},
		{"blank token", func(c *Config) { c.Token = " " }},
		{"protected reads without a token", func(c *Config) { c.ProtectReads = true }},
		{"OTLP without a port", func(c *Config) { c.OTLP = "http://collector" }},
		{"OTLP over gRPC", func(c *Config) { c.OTLP = "grpc://collector:4317" }},
		{"zero OTLP sampling", func(c *Config) { c.OTLPSampleEvery = 0 }},
		{"no requests", func(c *Config) { c.Requests = 0 }},
		{"3 classic buckets per doubling", func(c *Config) { c.ClassicBuckets = 3 }},
		{"no classic buckets", func(c *Config) { c.ClassicBuckets = 0 }},
		{"a build without a profile", func(c *Config) { c.Profile.Build = "v1" }},
		{"a profile without a build", func(c *Config) { c.Profile.Path = "p.json" }},
		{"a build of two lines", func(c *Config) { c.Profile = gpuspans.ProfileOptions{Path: "p.json", Build: "v1\nv2"} }},
	} {
		cfg := DefaultConfig()
		c.mod(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Errorf("default listen %q is not a loopback address", cfg.Listen)
	}
	// The default trace goes to the temporary directory, not wherever the
	// demo was started (a checkout).
	if filepath.Dir(cfg.TracePath) != os.TempDir() {
		t.Errorf("default trace %q is not in %s", cfg.TracePath, os.TempDir())
	}
}

func TestHandlerProtectReads(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, protect := range []bool{false, true} {
		h := NewHandler(hub, HandlerOptions{Options: gpuspanshttp.Options{Token: "s3cret", ProtectReads: protect}})
		for _, path := range []string{"/metrics", "/debug/gpuspans", "/debug/gpuspans/snapshot.json", "/control/level"} {
			for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret"} {
				req := httptest.NewRequest("GET", path, nil)
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				want := 200
				if protect || path == "/control/level" {
					switch auth {
					case "":
						want = 401
					case "Bearer wrong":
						want = 403
					}
				}
				if rec.Code != want {
					t.Errorf("protect %v, GET %s with %q: %d, want %d", protect, path, auth, rec.Code, want)
				}
			}
		}
	}
}

func TestEngineCapture(t *testing.T) {
	for _, c := range []struct {
		level   gpuspans.Level
		refused uint64
	}{{gpuspans.LevelKernel, 3}, {gpuspans.LevelStep, 0}} {
		hub, err := gpuspans.New(gpuspans.Options{Lanes: []string{LanePrefill, LaneDecode}, Level: c.level, KernelSpanEvery: 8, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		gpu := NewSimGPU(0)
		if err := hub.Install(0, gpu.Stream(), gpu.Opener()); err != nil {
			t.Fatal(err)
		}
		eng, err := NewEngine(hub, gpu, EngineConfig{Decode: Kernels{{"d", time.Microsecond}}, Graph: DefaultGraph})
		if err != nil {
			t.Fatal(err)
		}
		res, err := eng.Capture()
		if err != nil {
			t.Fatal(err)
		}
		if res.Kernels != 3 || res.Refused != c.refused {
			t.Errorf("level %v: capture %+v, want 3 kernels, %d refused", c.level, res, c.refused)
		}
		if hub.KernelSpanEvery() != 8 {
			t.Errorf("kernel_span_every %d after the capture, want it restored to 8", hub.KernelSpanEvery())
		}
		if res, err := eng.Capture(); err != nil || res.Kernels != 0 {
			t.Errorf("second capture: %+v, %v: want none", res, err)
		}
	}
}

func TestNewEngineNeedsTheLanes(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{Lanes: []string{"decode"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewEngine(hub, NewSimGPU(0), EngineConfig{}); err == nil {
		t.Error("an engine on a hub without a prefill lane")
	}
}

func TestParseKernels(t *testing.T) {
	good := map[string]Kernels{
		"":                          {},
		"a=1ms":                     {{"a", time.Millisecond}},
		" a = 450us , b=1.5ms ":     {{"a", 450 * time.Microsecond}, {"b", 1500 * time.Microsecond}},
		"attn.v2=10µs":              {{"attn.v2", 10 * time.Microsecond}},
		"x=1s":                      {{"x", time.Second}},
		"long name with spaces=1us": {{"long name with spaces", time.Microsecond}},
	}
	for in, want := range good {
		got, err := ParseKernels(in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ParseKernels(%q) = %v, %v; want %v", in, got, err, want)
		}
		if again, err := ParseKernels(got.String()); err != nil || fmt.Sprint(again) != fmt.Sprint(got) {
			t.Errorf("round trip of %q: %v, %v", in, again, err)
		}
	}
	for _, in := range []string{"a", "=1ms", "a=", "a=fast", "a=0s", "a=-1ms", "a=2s", "a=1ms,a=2ms", "a=1ms,,b=1ms", strings.Repeat("k=1us,", 64) + "z=1us"} {
		if _, err := ParseKernels(in); err == nil {
			t.Errorf("ParseKernels(%.40q) accepted", in)
		}
	}
	var k Kernels
	if err := k.Set("a=1ms,b=2ms"); err != nil || k.Total() != 3*time.Millisecond {
		t.Errorf("Set: %v, total %v", err, k.Total())
	}
}

func TestSpanRing(t *testing.T) {
	r := spanRing{max: 3}
	mk := func(seqs ...uint64) []gpuspans.Span {
		var s []gpuspans.Span
		for _, q := range seqs {
			s = append(s, gpuspans.Span{Seq: q})
		}
		return s
	}
	seqs := func() (out []uint64) {
		for _, s := range r.ordered() {
			out = append(out, s.Seq)
		}
		return out
	}
	r.add(mk(1, 2))
	if got := fmt.Sprint(seqs()); got != "[1 2]" {
		t.Errorf("got %s", got)
	}
	r.add(mk(3, 4, 5, 6, 7))
	if got := fmt.Sprint(seqs()); got != "[5 6 7]" {
		t.Errorf("got %s", got)
	}
	r.add(mk(8))
	if got := fmt.Sprint(seqs()); got != "[6 7 8]" {
		t.Errorf("got %s", got)
	}
}

func TestOpenGPU(t *testing.T) {
	if _, _, err := OpenGPU("tpu", 0); err == nil {
		t.Error("unknown backend accepted")
	}
	g, note, err := OpenGPU(BackendAuto, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Describe() == "simulated GPU" && !strings.HasSuffix(note, "; using the simulated GPU") {
		t.Errorf("auto chose the simulator and said %q", note)
	}
}

func TestStatusLine(t *testing.T) {
	s := gpuspans.Snapshot{Level: gpuspans.LevelKernel, KernelSpanEvery: 16, Step: 99}
	s.Counters.Landed, s.Counters.InFlight, s.Counters.Dropped[gpuspans.DropCapturing] = 2468, 2, 3
	want := "step 1234 (99.9/s) | spans landed 2468 (+250/s), dropped 3, errored 0, in flight 2 | level kernel, kernel spans 1 in 16"
	if got := statusLine(&s, 1234, 99.94, 249.6); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestConsoleOffATerminal(t *testing.T) {
	var b bytes.Buffer
	c := newConsole(&b)
	c.Status("s1")
	c.Printf("log %d", 1)
	c.Status("s2")
	c.EndStatus()
	if b.String() != "s1\nlog 1\ns2\n" {
		t.Errorf("got %q", b.String())
	}
}

func TestConsoleOnATerminal(t *testing.T) {
	var b bytes.Buffer
	c := &console{w: &b, tty: true, width: func() int { return 5 }}
	c.Status("s1")
	c.Printf("log")
	c.Status("status cut to the width")
	c.EndStatus()
	want := eraseLine + "s1" + eraseLine + "log\ns1" + eraseLine + "stat\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

// At level off the hub counts no step; the status line still shows the
// engine's progress.
func TestStatusCountsEngineStepsAtLevelOff(t *testing.T) {
	cfg := fastConfig(t)
	cfg.Hub.Level = gpuspans.LevelOff
	cfg.Rate = 1000
	cfg.Duration = 400 * time.Millisecond
	cfg.StatusEvery = 100 * time.Millisecond
	cfg.Listen, cfg.TracePath, cfg.SpansPath = "", "", ""
	var out syncBuffer
	res, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot.Step != 0 {
		t.Errorf("hub counted %d steps at level off", res.Snapshot.Step)
	}
	m := regexp.MustCompile(`(?m)^step ([1-9][0-9]*) \([0-9.]+/s\) .* level off,`).FindStringSubmatch(out.String())
	if m == nil {
		t.Errorf("no status line with engine steps at level off:\n%s", out.String())
	}
}

// On the simulator, kernel windows see the engine's kernels, graph
// replays included, and GPU time measures its lanes from them.
func TestSimKernelWindowsMeasureGPUTime(t *testing.T) {
	hub := windowedSimSteps(t, 0, 40)
	g := hub.GPUTime()
	if g.Windows == 0 || len(g.Lanes) == 0 {
		t.Fatalf("GPU time after 40 steps: %+v", g)
	}
	names := map[string]bool{}
	for _, tl := range g.Timelines {
		for _, k := range tl.Kernels {
			names[k.Kernel] = true
		}
	}
	for _, want := range []string{"attn_decode", "norm", "residual"} {
		if !names[want] {
			t.Errorf("the timeline lacks %s (eager and graph kernels): %v", want, names)
		}
	}
	for _, l := range g.Lanes {
		if l.Busy <= 0 || l.Busy > l.Time {
			t.Errorf("lane %s: busy %v of %v", l.Lane, l.Busy, l.Time)
		}
	}
}

// On the simulator, whose tracer records launch calls, a host stall before
// the graph replay reads as idle because of the host: 2 ms of host work
// after about 1 ms of queued kernels (prefill's and decode's).
func TestSimGPUTimeSaysTheHostStalled(t *testing.T) {
	hub := windowedSimSteps(t, 2*time.Millisecond, 20)
	for _, l := range hub.GPUTime().Lanes {
		if l.Lane != LaneDecode {
			continue
		}
		// Causes split the served idle, of the windows whose served time
		// was estimated.
		c, idle := l.Causes, l.Served-l.ServedBusy
		if l.ServedSpans == 0 || idle < 500*time.Microsecond*time.Duration(l.ServedSpans) || c.Host < idle*9/10 || c.Total() != idle {
			t.Errorf("decode: %d spans served, idle %v split %+v, want at least the stall, 90%% of it the host's", l.ServedSpans, idle, c)
		}
		return
	}
	t.Fatal("decode not measured")
}

// windowedSimSteps runs the simulated engine (host work hostGap between
// its steps) for steps steps with a kernel window at every chance, then
// closes the tracer and harvests until the windows are analysed.
func windowedSimSteps(t *testing.T, hostGap time.Duration, steps int) *gpuspans.Hub {
	t.Helper()
	gpu := NewSimGPU(0)
	hub, err := gpuspans.New(gpuspans.Options{Lanes: []string{LanePrefill, LaneDecode}, Level: gpuspans.LevelKernel, Logf: t.Logf,
		KernelTiming: gpuspans.KernelTimingAuto, KernelTracer: gpu.Tracer(), KernelWindowEvery: gpuspans.MinKernelWindowEvery})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Install(0, gpu.Stream(), gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	eng, err := NewEngine(hub, gpu, EngineConfig{Prefill: DefaultPrefill, Decode: DefaultDecode, Graph: DefaultGraph, HostGap: hostGap})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Capture(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < steps; i++ {
		if err := eng.Step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := hub.CloseKernelTracer(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		hub.Harvest()
	}
	return hub
}

// Builds restarted on one profile, as a deploy does: a kernel 20% slower is
// named alone, a renamed one is new and gone, the same build names nothing.
func TestProfileAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "decode.profile")
	run := func(build string, decode Kernels) string {
		t.Helper()
		cfg := fastConfig(t)
		cfg.Listen, cfg.TracePath, cfg.SpansPath = "", "", ""
		cfg.Engine.Decode = decode
		cfg.Hub.Level = gpuspans.LevelKernel
		cfg.Hub.KernelTiming = gpuspans.KernelTimingAuto
		cfg.Hub.KernelWindowEvery = 10 * time.Millisecond
		cfg.Duration = 700 * time.Millisecond
		cfg.Profile = gpuspans.ProfileOptions{Path: path, Build: build}
		var out syncBuffer
		if _, err := Run(context.Background(), cfg, &out); err != nil {
			t.Fatalf("%s: %v\n%s", build, err, out.String())
		}
		var since []string // the comparison's lines
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, "since build") {
				since = append(since, l)
			}
		}
		return strings.Join(since, "\n")
	}
	base := Kernels{{"attn_decode", 200 * time.Microsecond}, {"mlp_decode", 150 * time.Microsecond}, {"sample", 50 * time.Microsecond}}
	if out := run("v1", base); strings.Contains(out, "since build") {
		t.Fatalf("v1 compared with something:\n%s", out)
	}
	if out := run("v1", base); strings.Contains(out, "since build") {
		t.Errorf("v1 again compared:\n%s", out)
	}
	slow := Kernels{{"attn_decode", 240 * time.Microsecond}, {"mlp_decode", 150 * time.Microsecond}, {"sample", 50 * time.Microsecond}}
	out := run("v2", slow)
	if !strings.Contains(out, `since build "v1": WORSE: lane "decode"`) || !strings.Contains(out, "attn_decode grew") ||
		strings.Contains(out, "mlp_decode") || strings.Contains(out, "sample ") {
		t.Errorf("v2, attn_decode 20%% slower:\n%s", out)
	}
	renamed := Kernels{{"attn_decode", 240 * time.Microsecond}, {"mlp_v2", 150 * time.Microsecond}, {"sample", 50 * time.Microsecond}}
	out = run("v3", renamed)
	if !strings.Contains(out, "mlp_decode gone") || !strings.Contains(out, "mlp_v2 new") || strings.Contains(out, "attn_decode grew") {
		t.Errorf("v3, mlp_decode renamed:\n%s", out)
	}
}

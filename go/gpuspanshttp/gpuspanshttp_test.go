package gpuspanshttp

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// TestSurface: each path answers, reads are protected only when asked,
// and extra handlers are mounted.
func TestSurface(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{})
	if err != nil {
		t.Fatal(err)
	}
	extra := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "extra") })
	for _, protect := range []bool{false, true} {
		srv := httptest.NewServer(New(hub, Options{Token: "s3cret", ProtectReads: protect, Extra: map[string]http.Handler{"/x": extra}}))
		for _, c := range []struct {
			path, token string
			want        int
			body        string
		}{
			{"/metrics", "", map[bool]int{false: 200, true: 401}[protect], ""},
			{"/metrics", "s3cret", 200, "gpuspans_"},
			{"/debug/gpuspans", "", map[bool]int{false: 200, true: 401}[protect], ""},
			{"/control/level", "", 401, ""},
			{"/x", "", 200, "extra"},
			{"/nope", "", 404, ""},
		} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+c.path, nil)
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want || !strings.Contains(string(body), c.body) {
				t.Errorf("protect=%v GET %s (token %q): %d %.80q, want %d with %q", protect, c.path, c.token, resp.StatusCode, body, c.want, c.body)
			}
		}
		srv.Close()
	}
	if s := NewServer(http.NotFoundHandler(), nil); s.ReadHeaderTimeout == 0 || s.WriteTimeout == 0 {
		t.Errorf("server without timeouts: %+v", s)
	}
}

// Without a token, extra handlers (the demo's /control/sim) refuse a
// cross-site form's POST as the control endpoints do.
func TestExtraRefusesCrossSite(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{})
	if err != nil {
		t.Fatal(err)
	}
	called := 0
	extra := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called++ })
	srv := httptest.NewServer(New(hub, Options{Extra: map[string]http.Handler{"/x": extra}}))
	defer srv.Close()
	for _, c := range []struct {
		contentType, origin string
		want                int
	}{
		{"text/plain", "https://evil.example", 403},
		{"application/x-www-form-urlencoded", "", 415},
		{"application/octet-stream", "", 200},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/x", strings.NewReader("decode=9"))
		req.Header.Set("Content-Type", c.contentType)
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("POST %s from %q: %d, want %d", c.contentType, c.origin, resp.StatusCode, c.want)
		}
	}
	if called != 1 {
		t.Errorf("the handler ran %d times, want 1", called)
	}
}

// With Options.Registry, /metrics serves the engine's registry: its own
// metrics beside the hub's, and no Go runtime collector registered twice.
func TestEngineRegistry(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector())
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "engine_requests_total", Help: "Requests."}))
	srv := httptest.NewServer(New(hub, Options{Registry: reg}))
	defer srv.Close()
	body := get(t, srv.URL+"/metrics")
	for _, want := range []string{"engine_requests_total 0", "gpuspans_level ", "go_goroutines "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
	if strings.Contains(body, "process_cpu_seconds_total") {
		t.Error("New registered a process collector on the engine's registry")
	}
}

// get returns the body of a GET of url.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// Options.ConstLabels go on every series of the hub's families and of
// Collectors, and on no Go runtime or process series; bad ones panic,
// naming the label.
func TestConstLabels(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{})
	if err != nil {
		t.Fatal(err)
	}
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuspans_otlp_exports_total", Help: "Exports."})
	srv := httptest.NewServer(New(hub, Options{ConstLabels: prometheus.Labels{"model_name": "llama"}, Collectors: []prometheus.Collector{extra}}))
	defer srv.Close()
	body := get(t, srv.URL+"/metrics")
	n := 0
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		labelled := strings.Contains(line, `model_name="llama"`)
		if ours := strings.HasPrefix(line, "gpuspans_"); ours != labelled {
			t.Errorf("labelled %v: %s", labelled, line)
		}
		if labelled {
			n++
		}
	}
	if n < 5 {
		t.Errorf("%d labelled series:\n%s", n, body)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `"lane"`) {
			t.Errorf("a clashing label: recovered %v", r)
		}
	}()
	New(hub, Options{ConstLabels: prometheus.Labels{"lane": "x"}})
}

// /metrics answers OpenMetrics (where exemplars travel) when asked, and
// Options.Prom reaches the hub's collector.
func TestOpenMetricsAndPromOptions(t *testing.T) {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	gpu := sim.New(sim.Options{Now: clock.Now})
	stream := gpu.NewStream()
	if err := hub.Install(0, stream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	hub.BeginStep()
	hub.LaneBegin(0)
	hub.KernelEnd(hub.KernelBegin(1, stream))
	gpu.Launch(stream, time.Millisecond)
	hub.LaneEnd(0)
	clock.Advance(time.Second)
	hub.BeginStep()
	hub.Harvest()
	for _, c := range []struct {
		opts          prom.Options
		accept, ctype string
		want, not     string
	}{
		{prom.Options{}, "", "text/plain", `gpuspans_lane_duration_seconds_count{device="0",lane="prefill"} 1`, "gpuspans_kernel_duration_seconds"},
		{prom.Options{KernelHistograms: true}, "application/openmetrics-text; version=1.0.0", "application/openmetrics-text",
			`gpuspans_kernel_duration_seconds_count{device="0",kernel="other"} 1`, ""},
	} {
		srv := httptest.NewServer(New(hub, Options{Prom: c.opts}))
		req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		ct := resp.Header.Get("Content-Type")
		if !strings.HasPrefix(ct, c.ctype) || !strings.Contains(string(body), c.want) || c.not != "" && strings.Contains(string(body), c.not) {
			t.Errorf("Accept %q: Content-Type %q; want %q in\n%.2000s", c.accept, ct, c.want, body)
		}
		if c.ctype == "application/openmetrics-text" && !strings.HasSuffix(string(body), "# EOF\n") {
			t.Errorf("OpenMetrics without # EOF")
		}
	}
}

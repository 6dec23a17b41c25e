package debugpage

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// newHub runs a few steps of a serving loop on a simulated GPU: lanes
// prefill and decode, a kernel span on every second step.
func newHub(t *testing.T, lanes []string, kernelName string) *gpuspans.Hub {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	stream := gpu.NewStream()
	hub, err := gpuspans.New(gpuspans.Options{Lanes: lanes, Level: gpuspans.LevelKernel, KernelSpanEvery: 2, Now: clock.Now, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Install(0, stream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	if err := hub.RegisterKernel(1, kernelName); err != nil {
		t.Fatal(err)
	}
	for step := 0; step < 50; step++ {
		hub.BeginStep()
		for lane := range lanes {
			hub.LaneBegin(lane)
			sp := hub.KernelBegin(1, stream)
			gpu.Launch(stream, time.Duration(100+10*step)*time.Microsecond)
			hub.KernelEnd(sp)
			gpu.Launch(stream, time.Duration(lane+1)*time.Millisecond)
			hub.LaneEnd(lane)
		}
		clock.Advance(20 * time.Millisecond)
	}
	hub.Harvest()
	return hub
}

func get(t *testing.T, h http.Handler, method, url string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, url, nil))
	return rec
}

func serve(hub *gpuspans.Hub, o Options) http.Handler {
	mux := http.NewServeMux()
	Register(mux, hub, o)
	return mux
}

var (
	svgRe = regexp.MustCompile(`(?s)<svg class="hist" data-kind="([a-z]+)" data-name="([^"]*)".*?</svg>`)
	barRe = regexp.MustCompile(`<rect class="bar[^"]*" [^>]*data-count="(\d+)"`)
)

// svgs maps "kind/name" to the number of bars with spans in its histogram.
func svgs(t *testing.T, page string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range svgRe.FindAllStringSubmatch(page, -1) {
		n := 0
		for _, b := range barRe.FindAllStringSubmatch(m[0], -1) {
			if c, _ := strconv.Atoi(b[1]); c > 0 {
				n++
			}
		}
		out[m[1]+"/"+m[2]] = n
	}
	return out
}

func TestPageHasAHistogramPerLaneAndKernel(t *testing.T) {
	hub := newHub(t, []string{"prefill", "decode"}, "attn")
	rec := get(t, serve(hub, Options{Backend: "simulated GPU"}), "GET", Path)
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	page := rec.Body.String()
	got := svgs(t, page)
	for _, want := range []string{"lane/prefill", "lane/decode", "kernel/attn"} {
		if got[want] == 0 {
			t.Errorf("no histogram with bars for %s (found %v)", want, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("histograms %v, want 3", got)
	}
	for _, want := range []string{
		"<title>gpuspans: simulated GPU</title>",
		`<b id="level">kernel</b>`,
		`1 step in 2`,
		`25 of 50 steps armed (50.0%)`,
		`<table id="summary">`,
		`<td class="l">prefill</td>`,
		"dropped: slot_busy", "dropped: capturing", "dropped: leaked", "errored",
		"pool panics", "harvest failures", "abandoned pools",
		`<td class="l state-open">open</td>`,
		`class="marker p50"`, `class="marker p99"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	h := rec.Header()
	if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("CSP %q", h.Get("Content-Security-Policy"))
	}
	// Nothing is fetched from anywhere but the page itself.
	for _, bad := range []string{"src=\"http", "href=\"http", "@import", "<link"} {
		if strings.Contains(page, bad) {
			t.Errorf("page refers to an external asset: %q", bad)
		}
	}
}

// Lanes with no span yet still get a histogram, empty, so the page's shape
// does not change as the first spans land.
func TestPageBeforeAnySpan(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := get(t, serve(hub, Options{}), "GET", Path).Body.String()
	got := svgs(t, page)
	if n, ok := got["lane/prefill"]; !ok || n != 0 {
		t.Errorf("histograms %v: want empty ones for both lanes", got)
	}
	if _, ok := got["lane/decode"]; !ok {
		t.Errorf("histograms %v: want empty ones for both lanes", got)
	}
	for _, want := range []string{"no spans yet", "No kernel span yet", "No device installed", "No span has landed yet"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// Names come from the engine; the page escapes them wherever they appear.
func TestPageEscapesNames(t *testing.T) {
	hub := newHub(t, []string{`<script>alert(1)</script>`, `a"b`}, `<img src=x onerror=alert(2)>`)
	page := get(t, serve(hub, Options{Backend: "<b>gpu</b>"}), "GET", Path).Body.String()
	for _, bad := range []string{"<script>alert", "<img src=x", `data-name="a"b"`, "<b>gpu</b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains unescaped %q", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("lane name not shown escaped")
	}
}

func TestDeviceReasonShown(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	failing := func(int) (backend.Pool, error) {
		return nil, fmt.Errorf("loading libcuda.so.1: %w", backend.ErrNoDriver)
	}
	if err := hub.Install(0, 0, failing); err != nil {
		t.Fatal(err)
	}
	hub.BeginStep()
	h := serve(hub, Options{})
	page := get(t, h, "GET", Path).Body.String()
	if !strings.Contains(page, `state-failed">failed</td>`) || !strings.Contains(page, "loading libcuda.so.1") {
		t.Error("the failed device and its reason are not on the page")
	}
	var snap snapshotJSON
	if err := json.Unmarshal(get(t, h, "GET", SnapshotPath).Body.Bytes(), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Devices) != 1 || snap.Devices[0].State != "failed" || !strings.Contains(snap.Devices[0].Reason, "libcuda") {
		t.Errorf("devices %+v", snap.Devices)
	}
	if snap.Counters.InstallFailures != 1 {
		t.Errorf("install failures %d", snap.Counters.InstallFailures)
	}
}

func TestSnapshotJSON(t *testing.T) {
	hub := newHub(t, []string{"prefill", "decode"}, "attn")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := get(t, serve(hub, Options{Backend: "sim", Now: func() time.Time { return now }}), "GET", SnapshotPath)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	for _, key := range []string{`"dropped_leaked":`, `"pool_panics":`, `"harvest_failures":`, `"pools_abandoned":`} {
		if !strings.Contains(rec.Body.String(), key) {
			t.Errorf("the JSON lacks %s", key)
		}
	}
	var s snapshotJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Level != "kernel" || s.KernelSpanEvery != 2 || s.Step != 50 || s.ArmedRatio != 0.5 || s.TakenUnixNs != now.UnixNano() || s.Backend != "sim" {
		t.Errorf("header fields %+v", s)
	}
	// "other" has no span, and is there with zeros.
	if len(s.Lanes) != 2 || len(s.Kernels) != 2 || s.Kernels[0].Name != "other" || s.Kernels[0].Count != 0 {
		t.Fatalf("lanes %d kernels %d", len(s.Lanes), len(s.Kernels))
	}
	d := s.Lanes[1]
	if d.Name != "decode" || d.Count != 50 || d.MinNs > d.P50Ns || d.P50Ns > d.P99Ns || d.P99Ns > d.MaxNs {
		t.Errorf("decode %+v", d)
	}
	var inBuckets uint64
	for i, c := range d.BucketCounts {
		inBuckets += c
		if c == 0 || (i > 0 && d.BucketUpperNs[i] <= d.BucketUpperNs[i-1]) || d.BucketUpperNs[i] < d.MinNs {
			t.Errorf("bucket %d: %d spans, upper bound %dns", i, c, d.BucketUpperNs[i])
		}
	}
	if len(d.BucketUpperNs) != len(d.BucketCounts) || inBuckets != d.Count || s.Schema != 5 {
		t.Errorf("%d spans in %d buckets (%d bounds) of schema %d, count %d", inBuckets, len(d.BucketCounts), len(d.BucketUpperNs), s.Schema, d.Count)
	}
	if s.Counters.Landed != s.Counters.Begun || s.Counters.DroppedCapturing != 0 {
		t.Errorf("counters %+v", s.Counters)
	}
	// The simulated device names itself and its driver, and reports its
	// event offset (0).
	if len(s.Devices) != 1 || !strings.HasPrefix(s.Devices[0].UUID, "GPU-") || s.Devices[0].PCIBusID == "" ||
		s.Devices[0].Name != "gpuspans simulated GPU" || s.Devices[0].Driver != "13.0" || s.Devices[0].EventOffsetNs != 0 {
		t.Errorf("devices %+v", s.Devices)
	}
	page := get(t, serve(hub, Options{}), "GET", Path).Body.String()
	if !strings.Contains(page, s.Devices[0].UUID) {
		t.Error("the page does not show the device's UUID")
	}
	if !strings.Contains(page, `<td class="l">13.0</td>`) {
		t.Error("the page does not show the device's driver")
	}
}

func TestReadOnly(t *testing.T) {
	h := serve(newHub(t, []string{"decode"}, "k"), Options{})
	for _, path := range []string{Path, SnapshotPath} {
		for _, m := range []string{"POST", "PUT", "DELETE"} {
			rec := get(t, h, m, path)
			if rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q", m, path, rec.Code, rec.Header().Get("Allow"))
			}
		}
		if rec := get(t, h, "HEAD", path); rec.Code != 200 {
			t.Errorf("HEAD %s: %d", path, rec.Code)
		}
	}
}

func TestRefresh(t *testing.T) {
	h := serve(newHub(t, []string{"decode"}, "k"), Options{Refresh: 5 * time.Second})
	page := get(t, h, "GET", Path).Body.String()
	if !strings.Contains(page, "var ms =  5000 ;") || !strings.Contains(page, `<meta http-equiv="refresh" content="5">`) {
		t.Error("page does not refresh every 5 s")
	}
	page = get(t, h, "GET", Path+"?refresh=0").Body.String()
	if !strings.Contains(page, "var ms =  0 ;") || strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, "not refreshing") {
		t.Error("?refresh=0 still refreshes")
	}
	for _, bad := range []string{"-1", "x", "601", "NaN"} {
		if rec := get(t, h, "GET", Path+"?refresh="+bad); rec.Code != 400 {
			t.Errorf("?refresh=%s: %d, want 400", bad, rec.Code)
		}
	}
	off := serve(newHub(t, []string{"decode"}, "k"), Options{Refresh: -1})
	if page := get(t, off, "GET", Path).Body.String(); !strings.Contains(page, "not refreshing") {
		t.Error("Refresh < 0 still refreshes")
	}
}

func TestMultiDeviceLabels(t *testing.T) {
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	for dev := 0; dev < 2; dev++ {
		g := sim.New(sim.Options{Device: dev})
		if err := hub.Install(dev, g.NewStream(), g.Opener()); err != nil {
			t.Fatal(err)
		}
	}
	page := get(t, serve(hub, Options{}), "GET", Path).Body.String()
	if !strings.Contains(page, "prefill (GPU 1)") || strings.Count(page, `data-name="prefill"`) != 2 {
		t.Error("two devices: want one labelled prefill histogram per device")
	}
}

func TestBucketRange(t *testing.T) {
	var a gpuspans.Aggregate
	if lo, hi := bucketRange(display(&a)); lo != 0 || hi != minBars-1 {
		t.Errorf("empty: %d..%d", lo, hi)
	}
	a.Buckets[10*perDisplay+3] = 3
	if lo, hi := bucketRange(display(&a)); lo > 9 || hi < 11 || hi-lo+1 < minBars {
		t.Errorf("one bucket: %d..%d", lo, hi)
	}
	a.Buckets[gpuspans.NumBuckets-1] = 1
	a.ZeroCount = 1
	if lo, hi := bucketRange(display(&a)); lo != 0 || hi != numDisplay-1 {
		t.Errorf("both ends: %d..%d", lo, hi)
	}
}

// A quantile marker lands inside the bar of the bucket that holds it.
func TestMarkerPosition(t *testing.T) {
	bounds := displayBounds
	last := bounds[len(bounds)-1]
	for _, c := range []struct {
		v    time.Duration
		want float64 // buckets from bucket 0's left edge
	}{
		{bounds[0] / 2, 0.5},
		{bounds[0], 1},
		{(bounds[49] + bounds[50]) / 2, 50.5},
		{bounds[100], 101},
		{3 * last, numDisplay}, // the open-ended bucket, drawn as one doubling
	} {
		if got := position(bounds, c.v, 0); got < c.want-1e-3 || got > c.want+1e-3 {
			t.Errorf("position(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestNilErrorReasonOmitted(t *testing.T) {
	s := toJSON(&gpuspans.Snapshot{Devices: []gpuspans.DeviceStatus{{Device: 0, State: gpuspans.DeviceOpen}}}, "", time.Time{})
	b, err := json.Marshal(s.Devices[0])
	if err != nil || strings.Contains(string(b), "reason") {
		t.Errorf("%s, %v", b, err)
	}
}

func TestTrailingSlash(t *testing.T) {
	h := serve(newHub(t, []string{"decode"}, "k"), Options{})
	if rec := get(t, h, "GET", Path+"/"); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != Path {
		t.Errorf("GET %s/: %d to %q", Path, rec.Code, rec.Header().Get("Location"))
	}
	if rec := get(t, h, "GET", Path+"/other"); rec.Code != http.StatusNotFound {
		t.Errorf("GET %s/other: %d", Path, rec.Code)
	}
}

// The page says where kernel spans come from and, once windows open, what
// the last one landed and what windows cost the stepping thread.
func TestPageShowsKernelWindows(t *testing.T) {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	tracer := new(fake.Tracer)
	hub, err := gpuspans.New(gpuspans.Options{Lanes: []string{"decode"}, Level: gpuspans.LevelKernel, Now: clock.Now, Logf: t.Logf,
		KernelTiming: gpuspans.KernelTimingAuto, KernelTracer: tracer.Opener(), KernelWindowEvery: 5 * time.Millisecond, KernelWindowSteps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Install(0, 1, sim.NopOpener); err != nil {
		t.Fatal(err)
	}
	page := func() string { return get(t, serve(hub, Options{}), "GET", Path).Body.String() }
	if p := page(); !strings.Contains(p, `<b>auto</b><span>event pairs</span>`) || strings.Contains(p, "kernel-windows") {
		t.Errorf("before any step: %s", p[strings.Index(p, `id="kernel-timing"`):][:200])
	}
	for i := 0; i < 12; i++ {
		hub.BeginStep()
		ns := clock.Now().UnixNano()
		tracer.Kernel(0, 1, ns+10, ns+1000, "attention", 0)
		tracer.Kernel(0, 1, ns+2000, ns+3000, "mlp", 0)
		clock.Advance(time.Millisecond)
	}
	hub.Harvest()
	p := page()
	for _, want := range []string{`<b>auto</b><span>from CUPTI</span>`, `<span>kernel windows</span><b>3</b>`, "one open now; the last: 4 kernels in 2 steps from step 6;", "ms (p50)"} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q:\n%s", want, p[strings.Index(p, `id="kernel-timing"`):][:400])
		}
	}
}

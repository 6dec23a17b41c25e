package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp"
)

// The streams the tests on the fake driver and the fake CUPTI
// (hub_fake_test.go, tracer_fake_test.go) install and launch on.
const (
	fakeLane   backend.Stream = 0x100
	fakeKernel backend.Stream = 0x200
)

// serve starts, on a loopback port, the HTTP surface a serving binary
// exposes for h (gpuspanshttp.New), with /metrics on a pedantic registry,
// which checks every scrape's consistency. The server is closed when t
// ends.
func serve(t testing.TB, h *gpuspans.Hub) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(gpuspanshttp.New(h, gpuspanshttp.Options{
		Backend: "simulated GPU", Registry: prometheus.NewPedanticRegistry(),
	})) // 127.0.0.1:0
	t.Cleanup(srv.Close)
	return srv
}

// servedHub is the hub the load and soak tests drive: o at level Kernel
// with every step armed, kernels 0..7 registered by name, installed on
// gpu's lane stream.
func servedHub(t testing.TB, o gpuspans.Options, gpu *sim.GPU, lane backend.Stream) *gpuspans.Hub {
	t.Helper()
	o.Level, o.KernelSpanEvery = gpuspans.LevelKernel, 1
	h, err := gpuspans.New(o)
	if err != nil {
		t.Fatal(err)
	}
	for k := uint64(0); k < 8; k++ {
		if err := h.RegisterKernel(k, fmt.Sprintf("kernel%d", k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Install(0, lane, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	return h
}

// get fetches url and returns its body, failing on anything but 200.
func get(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return nil, fmt.Errorf("GET %s: reading the body: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, buf.Bytes())
	}
	return buf.Bytes(), nil
}

// metrics sums the samples of each metric family in a text exposition
// (labels dropped): enough for the counters the tests check.
func metrics(body []byte) (map[string]float64, error) {
	m := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("bad exposition line %q", line)
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("bad value in %q: %v", line, err)
		}
		name := line[:sp]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		m[name] += v
	}
	return m, sc.Err()
}

// checkScrape checks one /metrics body: every span counter present and the
// accounting consistent (one scrape is one snapshot; with span calls
// running, begun can only lead the rest).
func checkScrape(body []byte) (map[string]float64, error) {
	m, err := metrics(body)
	if err != nil {
		return nil, err
	}
	// Dropped and errored appear at their first span (package prom): absent, they are 0.
	for _, name := range []string{"gpuspans_spans_begun_total", "gpuspans_spans_landed_total",
		"gpuspans_spans_in_flight", "gpuspans_steps_total", "gpuspans_device_up"} {
		if _, ok := m[name]; !ok {
			return nil, fmt.Errorf("no %s in the scrape", name)
		}
	}
	begun := m["gpuspans_spans_begun_total"]
	rest := m["gpuspans_spans_landed_total"] + m["gpuspans_spans_dropped_total"] + m["gpuspans_spans_errored_total"] + m["gpuspans_spans_in_flight"]
	if begun < rest {
		return nil, fmt.Errorf("scrape: begun %v < landed + dropped + errored + in flight = %v", begun, rest)
	}
	return m, nil
}

// liveHeap is the heap in use right after a collection: what the process
// holds, without the garbage it has not yet collected. Two collections, as
// sync.Pool (promhttp's gzip writers, for one) keeps its objects through
// the first.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// procStatus reads a "Vm..." line of /proc/self/status in KiB, or -1 where
// there is none (not Linux).
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line[len(field)+1:])
			if len(f) > 0 {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n
				}
			}
		}
	}
	return -1
}

// machine describes where a test ran, for results files.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				if i := strings.IndexByte(line, ':'); i >= 0 {
					model = strings.TrimSpace(line[i+1:])
				}
				break
			}
		}
	}
	return fmt.Sprintf("%s/%s, %d CPUs (%s), GOMAXPROCS %d, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model, runtime.GOMAXPROCS(0), runtime.Version())
}

package integration

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/debugpage"
)

var loadDuration = flag.Duration("load.duration", 0, "how long TestLoad runs (0: 3s, or 1s with -short)")

// TestManySpansPastThePool opens five times the ring's worth of spans on
// every step, for thousands of steps: each step the ring takes what fits
// and drops the rest, every span is counted exactly, and the heap does not
// grow once the first steps have made the ring and the aggregates.
func TestManySpansPastThePool(t *testing.T) {
	const ring, perStep = 64, 320
	steps := 2000
	if testing.Short() {
		steps = 500
	}
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	lane, kern := gpu.NewStream(), gpu.NewStream()
	var log gpuspanstest.Log
	h, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Slots: ring, RecentSpans: 256, Logf: log.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Install(0, lane, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	step := func() {
		h.BeginStep() // lands the last step's spans: the clock is past them
		h.LaneBegin(0)
		gpu.Launch(lane, 50*time.Microsecond)
		for k := 0; k < perStep; k++ {
			sp := h.KernelBegin(uint64(k%4), kern)
			gpu.Launch(kern, time.Microsecond)
			h.KernelEnd(sp)
		}
		h.LaneEnd(0)
		clock.Advance(time.Millisecond)
	}
	warm := steps / 4
	for i := 0; i < warm; i++ {
		step()
	}
	before := liveHeap()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for i := warm; i < steps; i++ {
		step()
	}
	runtime.ReadMemStats(&ms1)
	after := liveHeap()
	h.Harvest()

	s := gpuspanstest.Snapshot(t, h)
	c := s.Counters
	n := uint64(steps)
	// Each step the lane span and 63 kernel spans take the ring's 64 slots,
	// freed by the step's harvest; the other 257 kernel spans are dropped.
	if c.Begun != n*(1+perStep) || c.Landed != n*ring || c.Dropped[gpuspans.DropSlotBusy] != n*(1+perStep-ring) ||
		c.DroppedTotal() != c.Dropped[gpuspans.DropSlotBusy] || c.Errored != 0 || c.InFlight != 0 {
		t.Errorf("counters %+v", c)
	}
	if l := log.Lines(); len(l) != 0 {
		t.Errorf("log lines %q", l)
	}
	mallocs := ms1.Mallocs - ms0.Mallocs
	grew := int64(after) - int64(before)
	t.Logf("%d steps of %d spans, ring %d: live heap %d -> %d bytes (%+d); %d mallocs over %d steps",
		steps, 1+perStep, ring, before, after, grew, mallocs, steps-warm)
	if grew > 64<<10 {
		t.Errorf("live heap grew by %d bytes over %d steps", grew, steps-warm)
	}
	if mallocs > uint64(steps-warm)/10 {
		t.Errorf("%d mallocs over %d steps: the span paths should not allocate", mallocs, steps-warm)
	}
}

// TestLoad runs an engine on the simulated GPU (real clock) from many
// goroutines, far past its ring, while clients on loopback scrape
// /metrics, the live page and its JSON in a loop and an operator flips the
// level and the kernel span period through the control endpoints. For a
// bounded time and number of requests: every request must succeed, every
// scrape be consistent and never go backwards, the heap must stay flat, and
// once quiet the accounting must balance exactly with nothing errored and
// nothing left in flight. -load.duration sets the time (the long mode).
func TestLoad(t *testing.T) {
	d := *loadDuration
	if d == 0 {
		d = 3 * time.Second
		if testing.Short() {
			d = time.Second
		}
	}
	const (
		ring       = 256
		launchers  = 8
		perBurst   = 100    // kernel spans per launcher per step
		maxScrapes = 100000 // per client
	)
	goroutines := runtime.NumGoroutine()
	gpu := sim.New(sim.Options{})
	lane := gpu.NewStream()
	var log gpuspanstest.Log
	h := servedHub(t, gpuspans.Options{Slots: ring, RecentSpans: 1024, Logf: log.Logf}, gpu, lane)
	srv := serve(t, h)
	client := &http.Client{Timeout: 10 * time.Second}

	stop := make(chan struct{})
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	errs := make(chan error, 16)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var engine, clients sync.WaitGroup

	ticks := make([]chan struct{}, launchers)
	for g := range ticks {
		ticks[g] = make(chan struct{}, 1)
		s := gpu.NewStream()
		engine.Add(1)
		go func(tick <-chan struct{}) { // a launcher: a burst of kernels per step
			defer engine.Done()
			for {
				select {
				case <-stop:
					return
				case <-tick:
				}
				for k := 0; k < perBurst; k++ {
					sp := h.KernelBegin(uint64(k%10), s) // 8 and 9 are unregistered: "other"
					gpu.Launch(s, 2*time.Microsecond)
					h.KernelEnd(sp)
				}
			}
		}(ticks[g])
	}
	engine.Add(1)
	go func() { // the scheduler
		defer engine.Done()
		for !stopped() {
			h.BeginStep()
			for l := 0; l < 2; l++ {
				h.LaneBegin(l)
				gpu.Launch(lane, 100*time.Microsecond)
				h.LaneEnd(l)
			}
			for _, c := range ticks {
				select {
				case c <- struct{}{}:
				default:
				}
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()

	// Requests hold quiet for reading, and the heap is sampled holding it
	// for writing: the samples measure what the process keeps, not the
	// buffers of requests in flight. The engine runs on meanwhile.
	var quiet sync.RWMutex
	var scrapes, bodyBytes atomic.Int64
	for _, path := range []string{"/metrics", "/metrics", debugpage.Path, debugpage.SnapshotPath} {
		clients.Add(1)
		go func(path string) {
			defer clients.Done()
			var last map[string]float64
			for n := 0; n < maxScrapes && !stopped(); n++ {
				quiet.RLock()
				body, err := get(client, srv.URL+path)
				if err == nil {
					scrapes.Add(1)
					bodyBytes.Add(int64(len(body)))
					err = checkBody(path, body, &last)
				}
				body = nil
				quiet.RUnlock()
				if err != nil {
					report(err)
					return
				}
			}
		}(path)
	}
	clients.Add(1)
	go func() { // the operator
		defer clients.Done()
		for i := 0; !stopped(); i++ {
			path, value := control.KernelSpanEveryPath, []string{"1", "2"}[i%2]
			if i%4 == 1 {
				path, value = control.LevelPath, []string{"step", "kernel"}[i/4%2]
			}
			req, _ := http.NewRequest(http.MethodPut, srv.URL+path, strings.NewReader(value))
			quiet.RLock()
			resp, err := client.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			quiet.RUnlock()
			if err != nil {
				report(err)
				return
			}
			if resp.StatusCode != http.StatusOK {
				report(fmt.Errorf("PUT %s %q: %s", path, value, resp.Status))
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	sample := func() uint64 {
		quiet.Lock()
		defer quiet.Unlock()
		return liveHeap()
	}
	time.Sleep(d / 3)
	heap1 := sample()
	time.Sleep(d - d/3)
	heap2 := sample()
	close(stop)
	engine.Wait()
	clients.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// Quiet now: let the simulated GPU finish and land the rest.
	for i := 0; i < 1000 && h.Snapshot().Counters.InFlight != 0; i++ {
		time.Sleep(time.Millisecond)
		h.Harvest()
	}
	s := gpuspanstest.Snapshot(t, h)
	c := s.Counters
	t.Logf("%v: %d steps, %d spans begun, %d landed, %v dropped; %d requests (%d MB); live heap %d -> %d bytes",
		d, s.Step, c.Begun, c.Landed, c.Dropped, scrapes.Load(), bodyBytes.Load()>>20, heap1, heap2)
	if c.Landed == 0 || c.Dropped[gpuspans.DropSlotBusy] == 0 || c.Errored != 0 || c.InFlight != 0 || c.StickyDisables != 0 || c.BadEnd != 0 {
		t.Errorf("counters %+v", c)
	}
	if scrapes.Load() < 8 {
		t.Errorf("only %d requests", scrapes.Load())
	}
	if l := log.Lines(); len(l) != 0 {
		t.Errorf("log lines %q", l)
	}
	if grew := int64(heap2) - int64(heap1); grew > 1<<20 {
		t.Errorf("live heap grew by %d bytes under load", grew)
	}

	srv.Close()
	client.CloseIdleConnections()
	for i := 0; i < 200 && runtime.NumGoroutine() > goroutines; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines left, %d before", n, goroutines)
	}
}

// checkBody checks one response of a scraping client; last carries the
// previous /metrics scrape of the same client.
func checkBody(path string, body []byte, last *map[string]float64) error {
	switch path {
	case "/metrics":
		m, err := checkScrape(body)
		if err != nil {
			return err
		}
		if *last != nil {
			for _, name := range []string{"gpuspans_spans_begun_total", "gpuspans_spans_landed_total",
				"gpuspans_spans_dropped_total", "gpuspans_steps_total", "gpuspans_harvests_total"} {
				if m[name] < (*last)[name] {
					return fmt.Errorf("%s went back from %v to %v", name, (*last)[name], m[name])
				}
			}
		}
		*last = m
	case debugpage.SnapshotPath:
		var v struct {
			Counters map[string]uint64 `json:"counters"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("snapshot JSON: %v", err)
		}
		c := v.Counters
		rest := c["landed"] + c["errored"] + c["in_flight"]
		for name, n := range c {
			if strings.HasPrefix(name, "dropped_") {
				rest += n
			}
		}
		if c["begun"] < rest {
			return fmt.Errorf("snapshot JSON: begun %d < %d accounted", c["begun"], rest)
		}
	default:
		if !bytes.Contains(body, []byte("</html>")) {
			return fmt.Errorf("%s: not a whole page (%d bytes)", path, len(body))
		}
	}
	return nil
}

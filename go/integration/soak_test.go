package integration

import (
	"flag"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/debugpage"
)

var (
	soak      = flag.Bool("soak", false, "run TestSoak at full size (-soak.spans spans)")
	soakSpans = flag.Int("soak.spans", 10_000_000, "spans TestSoak sends with -soak")
)

// TestSoak sends spans through the simulated GPU (manual clock, so the run
// is as fast as the hub and the simulator allow and its outcome exact) on
// an engine loop of 998 kernel spans and 2 lane spans per step, while a
// client scrapes /metrics and the live page's JSON over loopback every
// 20 ms. Every span must land (the ring is big enough and the clock passes
// each step's work before the next) unless harvests were skipped for a
// scrape (then drops are counted), nothing may be errored or lost, and the
// live heap, sampled 50 times, must not grow after the first tenth of the
// run. It prints its figures, peak RSS (VmHWM) included, as markdown
// for bench/reliability-results.md. Without -soak it sends 200,000 spans,
// to keep itself working:
//
//	go test ./go/integration -run TestSoak -soak -v -timeout=30m
func TestSoak(t *testing.T) {
	total := 200_000
	if *soak {
		total = *soakSpans
	}
	const (
		ring     = 4096
		kernels  = 998
		perStep  = kernels + 2
		samples  = 50
		scrapeMs = 20
	)
	steps := (total + perStep - 1) / perStep
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	lane, kern := gpu.NewStream(), gpu.NewStream()
	var log gpuspanstest.Log
	h := servedHub(t, gpuspans.Options{Slots: ring, Logf: log.Logf}, gpu, lane)
	srv := serve(t, h)
	client := &http.Client{Timeout: 10 * time.Second}
	done := make(chan struct{})
	warmed := make(chan struct{}) // closed after a scrape of each kind
	var scraper sync.WaitGroup
	var scrapes int
	var scrapeErr error
	// quiet is held around each request, and taken to sample the heap, so
	// the samples measure what the hub and the server keep, not the
	// buffers of a request in flight.
	var quiet sync.Mutex
	scraper.Add(1)
	go func() {
		defer scraper.Done()
		var last map[string]float64
		tick := time.NewTicker(scrapeMs * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			path := []string{"/metrics", debugpage.SnapshotPath}[i%2]
			quiet.Lock()
			body, err := get(client, srv.URL+path)
			if err == nil {
				err = checkBody(path, body, &last)
			}
			body = nil
			quiet.Unlock()
			if err != nil {
				scrapeErr = err
				close(warmed)
				return
			}
			scrapes++
			if scrapes == 2 {
				close(warmed)
			}
		}
	}()

	type sample struct {
		step int
		heap uint64
	}
	var heaps []sample
	every := steps / samples
	if every == 0 {
		every = 1
	}
	step := func() {
		h.BeginStep()
		for l := 0; l < 2; l++ {
			h.LaneBegin(l)
			gpu.Launch(lane, 100*time.Microsecond)
			h.LaneEnd(l)
		}
		for k := 0; k < kernels; k++ {
			sp := h.KernelBegin(uint64(k%10), kern)
			gpu.Launch(kern, time.Microsecond)
			h.KernelEnd(sp)
		}
		clock.Advance(2 * time.Millisecond)
	}
	// Warm up: the first spans make the recent ring and the aggregates, the
	// first scrapes the collector's and the server's state.
	warmSteps := 0
	for ; warmSteps < 10; warmSteps++ {
		step()
	}
	<-warmed
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	for i := 0; i < steps; i++ {
		step()
		if (i+1)%every == 0 {
			quiet.Lock()
			heaps = append(heaps, sample{i + 1, liveHeap()})
			quiet.Unlock()
		}
	}
	h.Harvest()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms1)
	close(done)
	scraper.Wait()
	if scrapeErr != nil {
		t.Error(scrapeErr)
	}
	h.Harvest() // the one above may have met a scrape holding the lock, and skipped

	s := gpuspanstest.Snapshot(t, h)
	c := s.Counters
	// Every span lands, but for one case: a harvest finding the lock held
	// by a scrape skips rather than waits, and when that happens for four
	// steps running (seen only under -race, where a scrape is slow) the
	// ring fills and spans are dropped, counted.
	sent := uint64((warmSteps + steps) * perStep)
	busy := c.Dropped[gpuspans.DropSlotBusy]
	if c.Begun != sent || c.Landed+busy != sent || c.DroppedTotal() != busy || c.Errored != 0 || c.InFlight != 0 ||
		busy != 0 && c.HarvestsSkipped == 0 {
		t.Errorf("sent %d spans; counters %+v", sent, c)
	}
	if l := log.Lines(); len(l) != 0 {
		t.Errorf("log lines %q", l)
	}
	warm := heaps[len(heaps)/10]
	peak, last := warm, heaps[len(heaps)-1]
	for _, x := range heaps[len(heaps)/10:] {
		if x.heap > peak.heap {
			peak = x
		}
	}
	grew := int64(last.heap) - int64(warm.heap)
	if grew > 1<<20 || peak.heap-warm.heap > 2<<20 {
		t.Errorf("live heap grew: %d bytes at step %d, peak %d at step %d, %d at the end", warm.heap, warm.step, peak.heap, peak.step, last.heap)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "| spans sent (begun) | %d in %d steps of %d (998 kernel + 2 lane), %d of them warming up |\n", sent, warmSteps+steps, perStep, warmSteps)
	fmt.Fprintf(&b, "| landed / dropped / errored / in flight | %d / %d / %d / %d |\n", c.Landed, c.DroppedTotal(), c.Errored, c.InFlight)
	fmt.Fprintf(&b, "| wall time, after warming up | %.2f s (%.0f spans/s, %.0f ns per span, scrapes included) |\n",
		elapsed.Seconds(), float64(steps*perStep)/elapsed.Seconds(), float64(elapsed.Nanoseconds())/float64(steps*perStep))
	fmt.Fprintf(&b, "| scrapes over loopback | %d (/metrics and snapshot.json, every %d ms) |\n", scrapes, scrapeMs)
	fmt.Fprintf(&b, "| harvests / skipped (lock held by a scrape) | %d / %d |\n", c.Harvests, c.HarvestsSkipped)
	fmt.Fprintf(&b, "| live heap after GC, %d samples | %d B at step %d (10%%), peak %d B at step %d, %d B at the end (%+d B) |\n",
		len(heaps), warm.heap, warm.step, peak.heap, peak.step, last.heap, grew)
	fmt.Fprintf(&b, "| heap allocations during the run | %d mallocs, %d MB (%.3f per span, all the scrapes': the span paths allocate nothing) |\n",
		ms1.Mallocs-ms0.Mallocs, (ms1.TotalAlloc-ms0.TotalAlloc)>>20, float64(ms1.Mallocs-ms0.Mallocs)/float64(steps*perStep))
	fmt.Fprintf(&b, "| GC cycles | %d |\n", ms1.NumGC-ms0.NumGC)
	fmt.Fprintf(&b, "| peak RSS (VmHWM) / RSS at the end (VmRSS) | %d KiB / %d KiB |\n", procStatus("VmHWM"), procStatus("VmRSS"))
	fmt.Fprintf(&b, "| machine | %s |\n", machine())
	t.Logf("soak results:\n%s", b.String())
}

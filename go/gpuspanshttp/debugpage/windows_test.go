package debugpage

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// engine is a serving loop on a simulated GPU whose hub runs on the
// simulated clock: a decode lane span per step, ten steps a second.
type engine struct {
	hub    *gpuspans.Hub
	gpu    *sim.GPU
	clock  *sim.Clock
	stream backend.Stream
}

func newEngine(t *testing.T) *engine {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	e := &engine{gpu: gpu, clock: clock, stream: gpu.NewStream()}
	var err error
	e.hub, err = gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, Now: clock.Now, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.hub.Install(0, e.stream, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	return e
}

// run steps for d with decode spans of span each, one step every 100 ms;
// each step a capturing stream drops one span when dropEvery > 0 and the
// step number is a multiple of it.
func (e *engine) run(d, span time.Duration, dropEvery int) {
	for end, i := e.clock.Now().Add(d), 0; e.clock.Now().Before(end); i++ {
		e.hub.BeginStep()
		e.hub.LaneBegin(1)
		e.gpu.Launch(e.stream, span)
		e.hub.LaneEnd(1)
		if dropEvery > 0 && i%dropEvery == 0 {
			e.gpu.BeginCapture(e.stream)
			e.hub.LaneBegin(0)
			e.hub.LaneEnd(0)
			e.gpu.EndCapture(e.stream)
		}
		e.clock.Advance(100 * time.Millisecond)
	}
	e.hub.Harvest() // the last step's span lands
}

// within parses a duration the page wrote and checks it is within frac
// of want.
func within(t *testing.T, what, got string, want time.Duration, frac float64) {
	t.Helper()
	d, err := time.ParseDuration(got)
	if err != nil || math.Abs(float64(d-want)) > frac*float64(want) {
		t.Errorf("%s: %q, want %v within %.1f%%", what, got, want, 100*frac)
	}
}

// TestWindowsWithoutViewer: six minutes of serving with nobody on the page
// (decode 100us for five, then 200us), then a first look: the recent
// columns are full, not filling, and the JSON has every window.
func TestWindowsWithoutViewer(t *testing.T) {
	e := newEngine(t)
	e.run(5*time.Minute, 100*time.Microsecond, 0)
	e.run(time.Minute, 200*time.Microsecond, 10)
	mux := serve(e.hub, Options{Now: e.clock.Now})

	rec := get(t, mux, http.MethodGet, SnapshotPath)
	var j snapshotJSON
	if err := json.Unmarshal(rec.Body.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	ws := j.RecentWindows
	if len(ws) != gpuspans.NumWindows+1 || !ws[len(ws)-1].Open {
		t.Fatalf("%d windows in the JSON, want %d, the last open", len(ws), gpuspans.NumWindows+1)
	}
	now := e.clock.Now().UnixNano()
	if back := time.Duration(now - ws[0].StartUnixNs); back < 5*time.Minute || back > 5*time.Minute+gpuspans.WindowLength {
		t.Errorf("the oldest window began %v ago", back)
	}
	last := ws[len(ws)-2]
	if len(last.Lanes) != 1 || last.Lanes[0].Name != "decode" || last.Lanes[0].Count != 100 || last.Counters.DroppedCapturing != 10 ||
		math.Abs(float64(last.Lanes[0].P99Ns-200_000)) > 0.011*200_000 {
		t.Errorf("the newest closed window: %+v", last)
	}

	page := get(t, mux, http.MethodGet, Path).Body.String()
	if !strings.Contains(page, `<th colspan="3">last 1m</th><th colspan="3">last 5m</th>`) {
		t.Errorf("the first look at the page does not show full windows")
	}
	// A trend per lane with spans: decode's through all 31 windows.
	if !strings.Contains(page, `<svg class="trend" data-name="decode" data-device="0" data-windows="31"`) ||
		strings.Contains(page, `<svg class="trend" data-name="prefill"`) {
		t.Errorf("no trend of decode through the 31 windows, or one of prefill, which ran no span")
	}
	snap := e.hub.Snapshot()
	p := newPage(&snap, e.hub.Lanes(), &Options{}, e.clock.Now())
	p.addWindows(e.hub.Windows())
	p.addTrends(e.hub.Windows())
	if len(p.Trends) != 1 || p.Trends[0].Name != "decode" || strings.Count(p.Trends[0].P99, "L") != 30 || p.Trends[0].YMax != "199us" {
		t.Errorf("trends %+v", p.Trends)
	}
	if strings.Join(p.Windows, ",") != "last 1m,last 5m" {
		t.Errorf("windows %q", p.Windows)
	}
	d := p.Rows[1]
	if d.Name != "decode" || d.Count != "3600" || len(d.Recent) != 2 {
		t.Fatalf("decode row %+v", d)
	}
	// The last minute: the windows begun in it, 50 to 60 s of steps.
	n1, _ := strconv.Atoi(d.Recent[0].Count)
	n5, _ := strconv.Atoi(d.Recent[1].Count)
	if n1 < 500 || n1 > 601 || n5 < 2900 || n5 > 3001 {
		t.Errorf("decode counts %+v", d.Recent)
	}
	within(t, "last 1m p50", d.Recent[0].P50, 200*time.Microsecond, 0.011)
	within(t, "last 5m p50", d.Recent[1].P50, 100*time.Microsecond, 0.011)
	within(t, "last 5m p99", d.Recent[1].P99, 200*time.Microsecond, 0.011)
	if c := p.DropCard; c.Alarm || !strings.HasPrefix(c.Recent, "last 1m: ") || !strings.Contains(c.Recent, "capturing 1.0/s") {
		t.Errorf("drop card %+v", c)
	}
}

// TestWindowsFilling: a young hub's columns say how far back they reach.
func TestWindowsFilling(t *testing.T) {
	e := newEngine(t)
	e.run(2*time.Second, 100*time.Microsecond, 0)
	snap := e.hub.Snapshot()
	p := newPage(&snap, e.hub.Lanes(), &Options{}, e.clock.Now())
	p.addWindows(e.hub.Windows())
	if strings.Join(p.Windows, ",") != "last 1m: filling,last 5m: filling" || p.Rows[1].Recent[0].Count != "–" {
		t.Errorf("after 2s: %q, %+v", p.Windows, p.Rows[1].Recent)
	}
	e.run(38*time.Second, 100*time.Microsecond, 0)
	p = newPage(&snap, e.hub.Lanes(), &Options{}, e.clock.Now())
	p.addWindows(e.hub.Windows())
	if strings.Join(p.Windows, ",") != "last 40s,last 40s" || p.Rows[1].Recent[0].Count != "400" {
		t.Errorf("after 40s: %q, %+v", p.Windows, p.Rows[1].Recent)
	}
}

// TestWindowsIdle: after ten minutes with no step (and so no harvest), the
// columns read nothing recent rather than the spans from before.
func TestWindowsIdle(t *testing.T) {
	e := newEngine(t)
	e.run(2*time.Minute, 100*time.Microsecond, 0)
	e.clock.Advance(10 * time.Minute)
	snap := e.hub.Snapshot()
	p := newPage(&snap, e.hub.Lanes(), &Options{}, e.clock.Now())
	p.addWindows(e.hub.Windows())
	if strings.Join(p.Windows, ",") != "last 1m,last 5m" || p.Rows[1].Recent[0] != (windowCell{"0", "–", "–"}) ||
		p.Rows[1].Recent[1].Count != "0" || p.Rows[1].Count != "1200" {
		t.Errorf("idle: %q, %+v", p.Windows, p.Rows[1])
	}
}

// TestWindowsServedConcurrently: the page and its JSON read the windows
// while the engine steps and closes them (run with -race).
func TestWindowsServedConcurrently(t *testing.T) {
	e := newEngine(t)
	mux := serve(e.hub, Options{Now: e.clock.Now})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, path := range []string{Path, SnapshotPath} {
		wg.Add(1)
		go func(path string) {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if rec := get(t, mux, http.MethodGet, path); rec.Code != http.StatusOK {
					t.Errorf("%s: %d", path, rec.Code)
					return
				}
				time.Sleep(time.Millisecond)
			}
		}(path)
	}
	e.run(2*time.Minute, 100*time.Microsecond, 7)
	close(stop)
	wg.Wait()
	// A harvest that finds a reader holding the lock is skipped, not
	// waited for: on a loaded machine a reader's thread can be descheduled
	// holding it through the whole run (milliseconds of real time), so no
	// window need have closed. Twenty seconds more without readers close
	// one.
	e.run(20*time.Second, 100*time.Microsecond, 7)
	if ws := e.hub.Windows(); len(ws) < 2 {
		t.Errorf("%d windows after two minutes and twenty seconds", len(ws))
	}
}

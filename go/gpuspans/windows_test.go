package gpuspans

import (
	"math"
	"sort"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
)

// windowHub is simHub with the hub on the simulated clock, so that
// windows open and close as the test moves time.
func windowHub(t testing.TB) (*Hub, *sim.GPU, *sim.Clock, backend.Stream) {
	t.Helper()
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	s := gpu.NewStream()
	h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 1, Now: clock.Now})
	if err := h.Install(0, s, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	return h, gpu, clock, s
}

// step runs one engine step of a decode lane span of d and lands it.
func step(h *Hub, gpu *sim.GPU, clock *sim.Clock, s backend.Stream, d time.Duration) {
	h.LaneBegin(1)
	gpu.Launch(s, d)
	h.LaneEnd(1)
	clock.Advance(d + time.Millisecond)
	h.BeginStep()
}

// TestWindowsKeptWithoutReader: six minutes of steps, with the decode lane
// 100us long for the first five and 200us in the last, and nothing reading
// the hub meanwhile: it then holds 30 closed windows of 10 s and the open
// one, the oldest 5 minutes back, each with the spans landed in it.
func TestWindowsKeptWithoutReader(t *testing.T) {
	h, gpu, clock, s := windowHub(t)
	t0 := clock.Now()
	// 100 steps a window: one every 99.9 ms, 101 ms in all with the span.
	for clock.Now().Sub(t0) < 6*time.Minute {
		d := 100 * time.Microsecond
		if clock.Now().Sub(t0) >= 5*time.Minute {
			d = 200 * time.Microsecond
		}
		step(h, gpu, clock, s, d)
		clock.Advance(99*time.Millisecond - d)
	}
	ws := h.Windows()
	if len(ws) != NumWindows+1 {
		t.Fatalf("%d windows, want %d", len(ws), NumWindows+1)
	}
	open := ws[len(ws)-1]
	if !open.Open || !open.End.Equal(clock.Now()) {
		t.Errorf("last window %+v: not the open one, read now", open)
	}
	if back := clock.Now().Sub(ws[0].Start); back < 5*time.Minute || back > 5*time.Minute+WindowLength+time.Second {
		t.Errorf("oldest window starts %v back, want 5m to 5m10s", back)
	}
	var landed uint64
	for i, w := range ws {
		if i > 0 && !w.Start.Equal(ws[i-1].End) {
			t.Errorf("window %d starts at %v, the one before ended at %v", i, w.Start, ws[i-1].End)
		}
		if !w.Open && (w.End.Sub(w.Start) < WindowLength || w.End.Sub(w.Start) > WindowLength+time.Second) {
			t.Errorf("window %d lasts %v", i, w.End.Sub(w.Start))
		}
		if w.Schema != Schema || w.Lost != 0 || len(w.Lanes) != 1 || len(w.Kernels) != 0 {
			t.Fatalf("window %d: %+v", i, w)
		}
		a := w.Lanes[0]
		if a.Name != "decode" || a.Device != 0 || a.Count != w.Landed || (!w.Open && (a.Count < 90 || a.Count > 110)) {
			t.Errorf("window %d: decode %+v, %d landed", i, a, w.Landed)
		}
		want := 200 * time.Microsecond
		if w.Start.Sub(t0) < 5*time.Minute {
			want = 100 * time.Microsecond
		}
		if w.Start.Sub(t0) < 5*time.Minute && w.End.Sub(t0) > 5*time.Minute {
			continue // both
		}
		if got := a.Quantile(0.99); math.Abs(float64(got-want)) > 0.011*float64(want) {
			t.Errorf("window %d: p99 %v, want %v within 1.1%%", i, got, want)
		}
		// A span begun as a window closes lands in the next.
		if w.Begun+1 < w.Landed || w.Begun > w.Landed+1 {
			t.Errorf("window %d: %d begun, %d landed", i, w.Begun, w.Landed)
		}
		landed += w.Landed
	}
	if landed == 0 {
		t.Fatal("nothing landed")
	}
}

// TestWindowsIdle: a window closes at the first harvest WindowLength after
// it opened; without harvests (an idle engine) the open one lasts, holding
// nothing new, and closes at the next harvest, before that harvest lands.
func TestWindowsIdle(t *testing.T) {
	h, gpu, clock, s := windowHub(t)
	step(h, gpu, clock, s, 100*time.Microsecond)
	clock.Advance(time.Hour)
	ws := h.Windows()
	if len(ws) != 1 || ws[0].Lanes[0].Count != 1 || ws[0].End.Sub(ws[0].Start) < time.Hour {
		t.Fatalf("idle: %+v", ws)
	}
	step(h, gpu, clock, s, 300*time.Microsecond)
	ws = h.Windows()
	if len(ws) != 2 || ws[0].Open || ws[0].Lanes[0].Count != 1 || !ws[1].Open || ws[1].Lanes[0].Count != 1 ||
		ws[1].Lanes[0].Quantile(0.5) < 290*time.Microsecond {
		t.Fatalf("after the idle hour: %+v", ws)
	}
}

// TestWindowsCounters: drops count in the window open when they happen,
// and the windows' counts add up to the hub's.
func TestWindowsCounters(t *testing.T) {
	h, gpu, clock, s := windowHub(t)
	step(h, gpu, clock, s, 100*time.Microsecond)
	clock.Advance(WindowLength)
	step(h, gpu, clock, s, 100*time.Microsecond) // closes the first window
	for i := 0; i < 5; i++ {
		gpu.BeginCapture(s)
		h.LaneBegin(1)
		h.LaneEnd(1)
		gpu.EndCapture(s)
	}
	step(h, gpu, clock, s, 100*time.Microsecond)
	ws := h.Windows()
	if len(ws) != 2 {
		t.Fatalf("%d windows", len(ws))
	}
	if ws[1].Dropped[DropCapturing] != 5 || ws[0].Dropped[DropCapturing] != 0 {
		t.Errorf("capturing drops by window: %d, %d", ws[0].Dropped[DropCapturing], ws[1].Dropped[DropCapturing])
	}
	sn := snap(t, h)
	var begun, landed, dropped uint64
	for _, w := range ws {
		begun, landed, dropped = begun+w.Begun, landed+w.Landed, dropped+w.Dropped[DropCapturing]
	}
	if begun != sn.Counters.Begun || landed != sn.Counters.Landed || dropped != sn.Counters.Dropped[DropCapturing] {
		t.Errorf("windows count %d begun, %d landed, %d dropped; the hub %+v", begun, landed, dropped, sn.Counters)
	}
}

// TestWindowsKernels: kernel spans land in windows by device and name,
// and a window's aggregates merge into an Aggregate with the hub's
// quantiles.
func TestWindowsKernels(t *testing.T) {
	h, gpu, clock, s := windowHub(t)
	if err := h.RegisterKernel(1, "gemm"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		d := time.Duration(10+i) * time.Microsecond
		tok := h.KernelBegin(1, s)
		gpu.Launch(s, d)
		h.KernelEnd(tok)
		tok = h.KernelBegin(2, s) // unregistered: "other"
		gpu.Launch(s, 2*d)
		h.KernelEnd(tok)
		clock.Advance(3 * d)
		h.BeginStep()
	}
	ws := h.Windows()
	w := ws[len(ws)-1]
	if len(w.Kernels) != 2 || w.Kernels[0].Name != OtherKernel || w.Kernels[1].Name != "gemm" {
		t.Fatalf("kernels %+v", w.Kernels)
	}
	sn := snap(t, h)
	for i, k := range w.Kernels {
		var a Aggregate
		k.AddTo(&a)
		hub := &sn.Kernels[i]
		if a.Count != hub.Count || a.Count != 200 {
			t.Errorf("%s: %d spans, the hub %d", k.Name, a.Count, hub.Count)
		}
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99} {
			got, want := a.Quantile(q), hub.Quantile(q)
			if wq := k.Quantile(q); math.Abs(float64(got-want)) > 0.023*float64(want) || math.Abs(float64(wq-want)) > 0.023*float64(want) {
				t.Errorf("%s p%v: merged %v, window %v, hub %v", k.Name, q*100, got, wq, want)
			}
		}
	}
}

// TestWindowCoarsens: a window with more distinct buckets than it holds
// merges them, lowering its schema, and its quantiles keep that schema's
// bound; past schema 0 spans are counted lost.
func TestWindowCoarsens(t *testing.T) {
	var r winRing = newWinRing()
	r.bufs[0].start = time.Unix(1, 0)
	// 8 lanes on 8 devices, each with one span in each of 40 buckets from
	// 1us up: 2,560 cells at schema 5, 1,344 at 4, 704 at 3.
	var aggs [64]Aggregate
	var spans [40]time.Duration
	for i := range spans {
		spans[i] = time.Duration(math.Exp2((float64(i)+0.5)/32) * 1000)
	}
	for dev := 0; dev < 8; dev++ {
		for lane := 0; lane < 8; lane++ {
			for _, d := range spans {
				r.add(seriesKey(dev, false, lane), aggs[dev*8+lane].observe(int64(d)))
			}
		}
	}
	b := &r.bufs[0]
	if b.shift != 2 || b.lost != 0 || b.used > cellMaxUsed {
		t.Fatalf("schema %d, %d lost, %d cells used", Schema-int(b.shift), b.lost, b.used)
	}
	h := &Hub{lanes: []string{"a", "b", "c", "d", "e", "f", "g", "h"}, kernelNames: []string{OtherKernel}, now: time.Now, win: r}
	ws := h.Windows()
	if len(ws) != 1 || ws[0].Schema != 3 || len(ws[0].Lanes) != 64 {
		t.Fatalf("%d windows, schema %d, %d lanes", len(ws), ws[0].Schema, len(ws[0].Lanes))
	}
	for i, wa := range ws[0].Lanes {
		want := &aggs[i]
		if wa.Count != want.Count || wa.Device != i/8 || wa.Name != h.lanes[i%8] {
			t.Fatalf("lane %d: %+v", i, wa)
		}
		// Schema 3: buckets 9% wide, the middle within 4.4% of any span.
		for _, q := range []float64{0.1, 0.5, 0.99} {
			got, exact := wa.Quantile(q), spans[int(math.Ceil(q*40))-1]
			if math.Abs(float64(got-exact)) > 0.0443*float64(exact) {
				t.Errorf("lane %d p%v: %v, exact %v", i, q*100, got, exact)
			}
		}
	}
	// Past schema 0: one cell per lane of 1,000 series, 768 fit.
	for s := 0; s < 1000; s++ {
		r.add(seriesKey(s/8%64, s%2 == 0, s), 500)
	}
	if b.shift != Schema || b.lost == 0 || b.used != cellMaxUsed {
		t.Errorf("schema %d, %d lost, %d used", Schema-int(b.shift), b.lost, b.used)
	}
}

// TestLaneWindowSpread: a lane's window cells slide and lower their schema
// for spans spread wider than they reach, in any order, and keep every span
// and that schema's quantile bound.
func TestLaneWindowSpread(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spread float64 // the slowest span over the fastest
		schema int
	}{{"4x", 3.9, Schema}, {"100x", 100, Schema - 1}, {"10,000x", 1e4, Schema - 2}} {
		t.Run(tc.name, func(t *testing.T) {
			var l laneHist
			var a Aggregate
			var ds []time.Duration
			for i := 0; i < 5000; i++ {
				// A pseudo-random order, so that the counts slide both ways.
				f := float64((i*7919)%5000) / 4999
				d := time.Duration(20e3 * math.Pow(tc.spread, f)) // from 20 us
				ds = append(ds, d)
				l.add(a.observe(int64(d)))
			}
			l.add(-1) // and one in the zero bucket
			var w winRing
			w.nlanes = 1
			w.lanes[3] = []laneHist{l}
			var win Window
			w.laneAggregates(&win, 0, []string{"decode"})
			if len(win.Lanes) != 1 {
				t.Fatalf("%d lanes", len(win.Lanes))
			}
			wa := win.Lanes[0]
			if wa.Count != 5001 || wa.ZeroCount != 1 || wa.Device != 3 || wa.Name != "decode" || wa.Schema != tc.schema {
				t.Fatalf("%d spans (%d zero), device %d %q, schema %d; want 5001 (1), 3 decode, schema %d",
					wa.Count, wa.ZeroCount, wa.Device, wa.Name, wa.Schema, tc.schema)
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			bound := math.Exp2(1/math.Exp2(float64(wa.Schema))/2) - 1 // half a bucket
			for _, q := range []float64{0.5, 0.9, 0.99} {
				got, exact := wa.Quantile(q), ds[int(math.Ceil(q*5001))-2] // one zero span below them all
				if e := math.Abs(float64(got)/float64(exact) - 1); e > bound+1e-9 {
					t.Errorf("p%v: %v, exact %v: %.2f%% off, bound %.2f%%", q*100, got, exact, 100*e, 100*bound)
				}
			}
		})
	}
}

// TestWindowRingFixed: the ring is what WindowRingBytes says, made by New,
// and each installed device's lanes what LaneWindowBytes says, made by its
// first Install; landing, rolling and closing windows allocate nothing.
func TestWindowRingFixed(t *testing.T) {
	if got := unsafe.Sizeof(winBuf{}); got != winBufBytes {
		t.Errorf("a window is %d bytes, winBufBytes says %d", got, winBufBytes)
	}
	if got := uintptr(NumWindows+1) * unsafe.Sizeof(laneHist{}); got != LaneWindowBytes {
		t.Errorf("a lane's windows are %d bytes, LaneWindowBytes says %d", got, LaneWindowBytes)
	}
	h, gpu, clock, s := windowHub(t)
	if got := uintptr(cap(h.win.bufs))*unsafe.Sizeof(winBuf{}) + unsafe.Sizeof(*h.win.scratch); got != WindowRingBytes {
		t.Errorf("the ring holds %d bytes, WindowRingBytes says %d", got, WindowRingBytes)
	}
	t.Logf("ring: %d windows of %v, %d bytes", NumWindows, WindowLength, WindowRingBytes)
	bufs := &h.win.bufs[0]
	if n := testing.AllocsPerRun(1000, func() {
		step(h, gpu, clock, s, 100*time.Microsecond)
		clock.Advance(time.Second) // a window closes every 10 steps
	}); n != 0 {
		t.Errorf("%v allocations per step", n)
	}
	if &h.win.bufs[0] != bufs || h.win.closed != NumWindows {
		t.Errorf("the ring moved or did not fill: %d closed", h.win.closed)
	}
}

// TestWindowsConcurrent: readers of the windows race steps, spans and
// window closes (run with -race).
func TestWindowsConcurrent(t *testing.T) {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 1, Now: clock.Now})
	s := gpu.NewStream()
	if err := h.Install(0, s, gpu.Opener()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				for _, w := range h.Windows() {
					for i := range w.Lanes {
						_ = w.Lanes[i].Quantile(0.99)
					}
				}
				// Harvests skip while a reader holds the lock: let some run.
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	for i := 0; i < 1000; i++ {
		step(h, gpu, clock, s, 100*time.Microsecond)
		clock.Advance(100 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	// A reader's thread descheduled while it holds the lock can make every
	// harvest of the loop skip (it runs in milliseconds of real time), so
	// no window need have closed yet: twenty seconds of steps without
	// readers close one.
	for i := 0; i < 200; i++ {
		step(h, gpu, clock, s, 100*time.Microsecond)
		clock.Advance(100 * time.Millisecond)
	}
	ws := h.Windows()
	sn := snap(t, h)
	var landed, begun uint64
	for _, w := range ws {
		landed, begun = landed+w.Landed, begun+w.Begun
	}
	if len(ws) < 2 || len(ws) > NumWindows+1 || landed != sn.Counters.Landed || begun != sn.Counters.Begun {
		t.Errorf("%d windows with %d landed, %d begun; the hub %+v", len(ws), landed, begun, sn.Counters)
	}
}

// BenchmarkWindows: what the windows add to a step that lands a lane span
// (step), and what closing one costs (roll), with the ring full.
func BenchmarkWindows(b *testing.B) {
	b.Run("step", func(b *testing.B) {
		h, gpu, clock, s := windowHub(b)
		step(h, gpu, clock, s, 100*time.Microsecond) // makes the recent-span ring, once
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			step(h, gpu, clock, s, 100*time.Microsecond)
		}
	})
	b.Run("roll", func(b *testing.B) {
		h, gpu, clock, s := windowHub(b)
		for i := 0; i < 2*NumWindows; i++ {
			step(h, gpu, clock, s, 100*time.Microsecond)
			clock.Advance(WindowLength)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.mu.Lock()
			h.roll(h.win.bufs[h.win.cur].start.Add(WindowLength))
			h.mu.Unlock()
		}
	})
	b.Run("add", func(b *testing.B) {
		r := newWinRing()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r.add(seriesKey(0, i&1 == 0, i&7), 400+i&31)
		}
	})
}

// WindowsWithin keeps the windows begun within d of the newest one's end,
// and an open window that began before that is not recent.
func TestWindowsWithin(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	w := func(start, end int, open bool) Window {
		return Window{Start: t0.Add(time.Duration(start) * time.Second), End: t0.Add(time.Duration(end) * time.Second), Open: open}
	}
	ws := []Window{w(0, 10, false), w(10, 20, false), w(20, 30, false), w(30, 35, true)}
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{5 * time.Second, 1}, {15 * time.Second, 2}, {25 * time.Second, 3}, {time.Hour, 4}, {0, 0}} {
		if got := WindowsWithin(ws, c.d); len(got) != c.want || (c.want > 0 && !got[len(got)-1].Open) {
			t.Errorf("within %v: %d windows, want the last %d", c.d, len(got), c.want)
		}
	}
	if got := WindowsWithin([]Window{w(0, 100, true)}, time.Minute); len(got) != 0 {
		t.Errorf("an open window begun 100 s ago counts as the last minute's: %v", got)
	}
	if WindowsWithin(nil, time.Minute) != nil {
		t.Error("no windows: want nil")
	}
}

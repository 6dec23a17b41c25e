//go:build cgo

package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

// Whose GPU time beside kernel windows on the fake CUPTI: requests said and
// ended every step, a harvester and a poller of records on other threads,
// another thread's guarded graph replays. Attribution reads what the
// harvest landed and never calls CUPTI, so the window rules hold as
// without it (every CUPTI call on the stepping thread, no finalize after a
// replay with collection off, every window detached), and the lane's time
// is conserved: its requests' records, the windows' cost and the
// unattributed spans add up to every lane span landed.
func TestAttributionBesideWindowsKeepsCUPTIRules(t *testing.T) {
	h, f, _ := tracedHub(t, gpuspans.KernelTimingAuto, 1, 0)
	f.ExpectThread(cudatest.ThreadID())
	if err := h.SetKernelWindows(time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	r := startReplayer(t, func() (code int) {
		cuda.GuardLaunch(func() { code = f.GraphLaunchFor(20 * time.Microsecond) })
		return code
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = h.RunHarvester(ctx, 100*time.Microsecond) }()
	var recs []gpuspans.RequestRecord
	var records time.Duration
	var n int
	var seq uint64
	poll := func() {
		recs = h.FinishedRequests(seq, recs)
		for _, rec := range recs {
			records += rec.GPUTime
			n++
			seq = rec.Seq
		}
	}
	go func() { // polls until the end, then the test's goroutine does
		defer wg.Done()
		for ctx.Err() == nil {
			poll()
			_ = h.Attribution()
			time.Sleep(200 * time.Microsecond)
		}
	}()
	const steps = 2000
	work := make([]gpuspans.RequestWork, 2)
	for i := 0; i < steps; i++ {
		h.BeginStep()
		// Two requests in flight, each for 4 steps, one starting every
		// other step.
		for j := range work {
			id := uint64(i/4*2 + j + 1)
			work[j] = gpuspans.RequestWork{ID: id, DecodedTokens: 1, Context: uint32(100*j + i%4)}
		}
		if err := h.ServeRequests(0, work); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		h.LaneBegin(0)
		if code := f.GraphLaunch(); code != 0 {
			t.Fatalf("step %d: the stepping thread's replay failed with %d", i, code)
		}
		now := fakeNow()
		f.Kernel(0, 1, now+10, now+500, "k", 3)
		h.LaneEnd(0)
		if i%4 == 3 {
			for j := range work {
				if err := h.EndRequest(work[j].ID); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
		}
		for k := r.replays.Load(); fakeNow() < now+20_000 || (r.replays.Load() < k+2 && r.failed.Load() == 0 && fakeNow() < now+1e9); {
		}
	}
	r.stop()
	if code := r.failed.Load(); code != 0 {
		t.Fatalf("the other thread's replay failed with %d", code)
	}
	_ = h.SetKernelTiming(gpuspans.KernelTimingEvents)
	h.BeginStep() // closes any window, on the stepping thread
	cancel()
	wg.Wait()
	for i := 0; i < 3; i++ {
		h.Harvest()
	}
	poll()
	if c := f.StrayCalls(); c != 0 {
		t.Errorf("%d CUPTI calls off the stepping thread", c)
	}
	if c := f.BadFinalizes(); c != 0 {
		t.Errorf("%d finalizes overlapped a replay", c)
	}
	s := gpuspanstest.Snapshot(t, h)
	gpuspanstest.CheckAccounting(t, &s)
	w := s.KernelTiming.Windows
	if w.Opened < 10 || w.LeftAttached != 0 || w.Abandoned != 0 || s.KernelTiming.Err != nil {
		t.Errorf("windows: %d opened, %d left attached, %d abandoned, error %v: want at least 10, each detached",
			w.Opened, w.LeftAttached, w.Abandoned, s.KernelTiming.Err)
	}
	if n != steps/2 {
		t.Errorf("%d records, want %d", n, steps/2)
	}
	a := h.Attribution()
	if len(a.Lanes) != 1 {
		t.Fatalf("attribution has %d lanes, want 1", len(a.Lanes))
	}
	l := a.Lanes[0]
	lane := s.Lanes[0]
	if l.Time+l.WindowCost+l.UnattributedTime != lane.Sum || records != l.Time {
		t.Errorf("the lane landed %v in %d spans; split %v (records %v), windows' cost %v, unattributed %v: want the parts to add up",
			lane.Sum, lane.Count, l.Time, records, l.WindowCost, l.UnattributedTime)
	}
	if l.Spans != steps || lane.Count != steps {
		t.Errorf("%d spans split of %d landed, want %d of %d", l.Spans, lane.Count, steps, steps)
	}
}

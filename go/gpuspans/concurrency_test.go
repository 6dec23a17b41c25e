package gpuspans

import (
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
)

// TestConcurrentUse runs an engine's goroutines at once: a scheduler with
// steps and lane spans, four launchers with kernel spans, an exporter with
// snapshots and recent spans, and an operator changing the level and the
// arming period. Under -race it checks the hub's synchronisation; at the
// end, quiescent, the accounting must balance exactly.
func TestConcurrentUse(t *testing.T) {
	h, f := kernelHub(t, Options{Slots: 256, RecentSpans: 512}, fake.Options{})
	var landOrLinger atomic.Uint32
	f.SetOutcome(func(slot int) (backend.SpanState, int64) {
		switch landOrLinger.Add(1) % 8 {
		case 0:
			return backend.InFlight, 0
		case 1:
			return backend.Failed, 0
		}
		return backend.Done, int64(slot) * 100
	})
	for k := uint64(0); k < 8; k++ {
		if err := h.RegisterKernel(k, "k"+string(rune('a'+k))); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var workers, watchers sync.WaitGroup
	steps := 3000
	if testing.Short() {
		steps = 300
	}

	// The operator changes the level every phase scheduler steps, not on a
	// timer: on a loaded machine a timer can leave the whole run at one
	// level below Kernel, and then nothing is tested.
	const phase = 100
	var scheduled atomic.Int64
	workers.Add(1)
	go func() { // scheduler
		defer workers.Done()
		for i := 0; i < steps; i++ {
			scheduled.Add(1)
			h.BeginStep()
			for lane := 0; lane < 2; lane++ {
				h.LaneBegin(lane)
				h.LaneEnd(lane)
			}
		}
	}()
	for g := 0; g < 4; g++ {
		workers.Add(1)
		go func(g int) { // launcher
			defer workers.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < steps*4; i++ {
				sp := h.KernelBegin(uint64(rng.Intn(10)), backend.Stream(g+1))
				h.KernelEnd(sp)
				if i%97 == 0 {
					h.KernelEnd(sp) // a double end now and then
				}
				if i%64 == 0 {
					h.Harvest() // contends with the scheduler's: one skips
				}
			}
		}(g)
	}
	watchers.Add(2)
	go func() { // exporter
		defer watchers.Done()
		var s Snapshot
		var recent []Span
		var last uint64
		for {
			select {
			case <-stop:
				return
			default:
			}
			h.SnapshotInto(&s)
			c := &s.Counters
			if sum := c.Landed + c.DroppedTotal() + c.InFlight + c.Errored; c.Begun < sum {
				t.Errorf("mid-run: begun %d < accounted %d (%+v)", c.Begun, sum, c)
				return
			}
			recent = h.RecentSpans(last, recent[:0])
			for i, sp := range recent {
				if sp.Seq <= last || i > 0 && sp.Seq != recent[i-1].Seq+1 {
					t.Errorf("recent spans out of order: %d after %d", sp.Seq, last)
					return
				}
				last = sp.Seq
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	go func() { // operator
		defer watchers.Done()
		levels := []Level{LevelKernel, LevelStep, LevelKernel, LevelOff, LevelKernel}
		for i := 0; ; i++ {
			if err := h.SetLevel(levels[i%len(levels)]); err != nil {
				t.Error(err)
			}
			if err := h.SetKernelSpanEvery(1 + i%3); err != nil {
				t.Error(err)
			}
			for next := int64(i+1) * phase; scheduled.Load() < next; {
				select {
				case <-stop:
					return
				default:
				}
				time.Sleep(20 * time.Microsecond)
			}
		}
	}()
	workers.Wait()
	close(stop)
	watchers.Wait()

	// Quiescent: every span was ended, so harvests drain them all.
	f.SetOutcome(nil)
	for i := 0; i < 3; i++ {
		h.Harvest()
	}
	s := snap(t, h)
	c := s.Counters
	if c.InFlight != 0 || c.Landed == 0 {
		t.Errorf("after draining: %+v", c)
	}
	t.Logf("begun %d landed %d dropped %v errored %d bad end %d harvests %d (skipped %d)",
		c.Begun, c.Landed, c.Dropped, c.Errored, c.BadEnd, c.Harvests, c.HarvestsSkipped)
}

// TestKernelBeginRacesRetirement replaces the recorder over and over while
// launchers open and end kernel spans on it. Every fake pool fails the test
// on a call after Close or a Close during a call; every span must be
// accounted for at the end.
func TestKernelBeginRacesRetirement(t *testing.T) {
	h := newHub(t, Options{Level: LevelKernel, KernelSpanEvery: 1, Slots: 64})
	var pools []*fake.Pool
	install := func() {
		f := newFake(t, fake.Options{Slots: 64, CloseBusy: int64(len(pools) % 2)})
		pools = append(pools, f)
		if err := h.Install(0, laneStream, f.Opener()); err != nil {
			t.Fatal(err)
		}
	}
	install()
	h.BeginStep()
	spans := 20000
	if testing.Short() {
		spans = 2000
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) { // launcher
			defer wg.Done()
			for i := 0; i < spans; i++ {
				sp := h.KernelBegin(1, backend.Stream(g+1))
				h.KernelEnd(sp)
			}
		}(g)
	}
	wg.Add(1)
	go func() { // scheduler: lane spans and steps
		defer wg.Done()
		for i := 0; i < spans; i++ {
			h.BeginStep()
			h.LaneBegin(0)
			h.LaneEnd(0)
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			install()
			if i%10 == 0 {
				h.Uninstall(0)
				install()
			}
			// Let the new pool open and take spans before replacing it.
			f := pools[len(pools)-1]
			for f.Calls().RecordBegin < 200 && !finished(done) {
				runtime.Gosched()
			}
			continue
		}
		break
	}
	h.Uninstall(0)
	for i := 0; i < 3; i++ {
		h.Harvest()
	}
	s := snap(t, h)
	if len(s.Devices) != 0 || s.Counters.InFlight != 0 {
		t.Errorf("after uninstalling: devices %+v counters %+v", s.Devices, s.Counters)
	}
	opened := 0
	for _, f := range pools {
		if f.Calls().Opens > 0 {
			opened++
			if !f.Closed() {
				t.Errorf("an opened pool was never closed: %+v", f.Calls())
			}
		}
	}
	t.Logf("%d installs, %d opened; counters %+v", len(pools), opened, s.Counters)
}

func finished(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

//go:build cgo

package cuda_test

import (
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
)

// These tests run the core against its fake driver, on any machine. The
// fake is process-wide, so none of them runs in parallel.

const (
	streamA backend.Stream = 0x1000
	streamB backend.Stream = 0x2000

	cuOutOfMemory    = 2
	cuNoDevice       = 100
	cuInvalidHandle  = 400
	cuNotReady       = 600
	cuIllegalAddress = 700
)

func useFake(t testing.TB) *cudatest.FakeDriver {
	t.Helper()
	f := cudatest.UseFakeDriver()
	t.Cleanup(cudatest.UseRealDriver)
	return f
}

func openPool(t testing.TB, slots int) *cuda.Pool {
	t.Helper()
	p, err := cuda.Open(0, slots)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return p
}

// closeAndCheckLeaks closes p (finishing the fake GPU's work first) and
// checks that the fake holds no event, stream or context afterwards.
func closeAndCheckLeaks(t testing.TB, f *cudatest.FakeDriver, p *cuda.Pool) {
	t.Helper()
	f.Advance(time.Hour)
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	c := f.Counters()
	if c.LiveEvents != 0 || c.LiveStreams != 0 || c.RetainedContexts != 0 || c.CtxPushes != c.CtxPops {
		t.Errorf("leak after Close: %+v", c)
	}
}

func span(t testing.TB, f *cudatest.FakeDriver, p *cuda.Pool, slot int, s backend.Stream, work time.Duration) {
	t.Helper()
	if err := p.RecordBegin(slot, s); err != nil {
		t.Fatalf("RecordBegin(%d): %v", slot, err)
	}
	f.StreamWork(s, work)
	if err := p.RecordEnd(slot, s); err != nil {
		t.Fatalf("RecordEnd(%d): %v", slot, err)
	}
}

func driverError(t *testing.T, err error) *backend.DriverError {
	t.Helper()
	var de *backend.DriverError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *backend.DriverError", err, err)
	}
	return de
}

func TestLoadWithoutLibrary(t *testing.T) {
	f := useFake(t)
	f.FailOpen(true)
	err := cuda.Load()
	if !errors.Is(err, backend.ErrNoDriver) || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Fatalf("Load: %v, want ErrNoDriver naming libcuda.so.1", err)
	}
	if _, err := cuda.Open(0, 8); !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("Open: %v, want ErrNoDriver", err)
	}
	if n, err := cuda.DeviceCount(); n != 0 || !errors.Is(err, backend.ErrNoDriver) {
		t.Errorf("DeviceCount: %d, %v", n, err)
	}
}

func TestLoadMissingSymbol(t *testing.T) {
	f := useFake(t)
	f.DropSymbol("cuEventElapsedTime")
	err := cuda.Load()
	if !errors.Is(err, backend.ErrNoDriver) || !strings.Contains(err.Error(), "cuEventElapsedTime") {
		t.Fatalf("Load: %v, want ErrNoDriver naming cuEventElapsedTime", err)
	}
}

func TestLoadInitError(t *testing.T) {
	f := useFake(t)
	f.InitResult(cuNoDevice)
	err := cuda.Load()
	if de := driverError(t, err); de.Code != cuNoDevice || de.Kind != backend.ErrNoDriver ||
		!strings.Contains(de.Msg, "CUDA_ERROR_NO_DEVICE") {
		t.Fatalf("Load: %#v", de)
	}
}

func TestOpenFailsPartWay(t *testing.T) {
	for _, k := range []int{1, 9, 20} {
		f := useFake(t)
		f.FailEventCreate(k, cuOutOfMemory)
		_, err := cuda.Open(0, 8)
		if de := driverError(t, err); de.Code != cuOutOfMemory {
			t.Fatalf("Open failing at event %d: %v", k, err)
		}
		if c := f.Counters(); c.LiveEvents != 0 || c.RetainedContexts != 0 || c.LiveStreams != 0 {
			t.Errorf("leak after failing at event %d: %+v", k, c)
		}
	}
	useFake(t)
	if _, err := cuda.Open(0, 0); err == nil {
		t.Error("Open with 0 slots succeeded")
	}
	if _, err := cuda.Open(1, 8); driverError(t, err).Code != 101 {
		t.Errorf("Open on a missing device: %v", err)
	}
}

func TestRecordErrors(t *testing.T) {
	f := useFake(t)
	p := openPool(t, 4)
	f.RecordResult(1, 1)
	if de := driverError(t, p.RecordBegin(0, streamA)); de.Code != 1 || de.Kind != nil {
		t.Errorf("RecordBegin with a failing record: %#v", de)
	}
	if err := p.RecordBegin(4, streamA); !errors.Is(err, backend.ErrBadSlot) {
		t.Errorf("RecordBegin(4): %v, want ErrBadSlot", err)
	}
	if err := p.RecordEnd(-1, streamA); !errors.Is(err, backend.ErrBadSlot) {
		t.Errorf("RecordEnd(-1): %v, want ErrBadSlot", err)
	}
	items := []backend.HarvestItem{{Slot: 4}}
	if err := p.Harvest(items); !errors.Is(err, backend.ErrBadSlot) {
		t.Errorf("Harvest of slot 4: %v, want ErrBadSlot", err)
	}
	if err := p.Harvest(make([]backend.HarvestItem, 5)); !errors.Is(err, backend.ErrBadSlot) {
		t.Errorf("Harvest of 5 items: %v, want ErrBadSlot", err)
	}
	closeAndCheckLeaks(t, f, p)
}

func TestHarvestInFlightThenDone(t *testing.T) {
	f := useFake(t)
	p := openPool(t, 8)
	if p.Device() != 0 || p.Slots() != 8 {
		t.Fatalf("Device %d Slots %d", p.Device(), p.Slots())
	}
	f.StreamWork(streamA, 3*time.Millisecond)
	span(t, f, p, 2, streamA, 2*time.Millisecond)
	items := []backend.HarvestItem{{Slot: 2}}
	if err := p.Harvest(items); err != nil || items[0].State != backend.InFlight {
		t.Fatalf("Harvest: %v %+v", err, items[0])
	}
	if err := p.Close(); !errors.Is(err, backend.ErrBusy) {
		t.Fatalf("Close while in flight: %v, want ErrBusy", err)
	}
	f.Advance(5 * time.Millisecond)
	if err := p.Harvest(items); err != nil || items[0].State != backend.Done || items[0].DurationNs != 2e6 {
		t.Fatalf("Harvest: %v %+v", err, items[0])
	}
	closeAndCheckLeaks(t, f, p)
}

func TestForcedOutcomes(t *testing.T) {
	f := useFake(t)
	p := openPool(t, 4)
	span(t, f, p, 0, streamA, time.Millisecond)
	f.Advance(2 * time.Millisecond)
	items := []backend.HarvestItem{{Slot: 0}}
	f.Force(p, 0, true, cudatest.FakeElapsed, cuNotReady, 1)
	if p.Harvest(items); items[0].State != backend.InFlight {
		t.Errorf("forced NOT_READY: %+v", items[0])
	}
	f.Force(p, 0, true, cudatest.FakeElapsed, cuInvalidHandle, 1)
	if p.Harvest(items); items[0].State != backend.Failed || items[0].Code != cuInvalidHandle {
		t.Errorf("forced elapsed error: %+v", items[0])
	}
	if p.Harvest(items); items[0].State != backend.Done {
		t.Errorf("after the forced errors: %+v", items[0])
	}
	closeAndCheckLeaks(t, f, p)
}

func TestStickyErrorKillsPool(t *testing.T) {
	f := useFake(t)
	p := openPool(t, 4)
	span(t, f, p, 0, streamA, time.Millisecond)
	f.SetSticky(cuIllegalAddress)
	err := p.RecordBegin(1, streamA)
	if de := driverError(t, err); de.Code != cuIllegalAddress || !errors.Is(err, backend.ErrSticky) {
		t.Fatalf("RecordBegin after a sticky error: %v", err)
	}
	calls := f.Counters().DriverCalls
	items := []backend.HarvestItem{{Slot: 0}, {Slot: 1}}
	if err := p.Harvest(items); !errors.Is(err, backend.ErrSticky) {
		t.Errorf("Harvest: %v, want ErrSticky", err)
	}
	for _, it := range items {
		if it.State != backend.Failed || it.Code != cuIllegalAddress {
			t.Errorf("item %+v, want Failed with code 700", it)
		}
	}
	if _, err := p.Capturing(streamA); !errors.Is(err, backend.ErrSticky) {
		t.Errorf("Capturing: %v, want ErrSticky", err)
	}
	if err := p.RecordEnd(1, streamA); !errors.Is(err, backend.ErrSticky) {
		t.Errorf("RecordEnd: %v, want ErrSticky", err)
	}
	if got := f.Counters().DriverCalls; got != calls {
		t.Errorf("the dead pool made %d driver calls", got-calls)
	}
	f.SetSticky(0)
	closeAndCheckLeaks(t, f, p)
}

func TestCaptureRefused(t *testing.T) {
	f := useFake(t)
	p := openPool(t, 4)
	f.SetCapturing(streamB, cudakit.CaptureGlobal)
	if err := p.RecordBegin(0, streamB); !errors.Is(err, backend.ErrCapturing) {
		t.Errorf("RecordBegin on a capturing stream: %v", err)
	}
	if err := p.RecordEnd(0, streamB); !errors.Is(err, backend.ErrCapturing) {
		t.Errorf("RecordEnd on a capturing stream: %v", err)
	}
	if c, err := p.Capturing(streamB); !c || err != nil {
		t.Errorf("Capturing(B) = %v, %v", c, err)
	}
	if c, err := p.Capturing(streamA); c || err != nil {
		t.Errorf("Capturing(A) = %v, %v", c, err)
	}
	// Harvests of spans elsewhere leave the GLOBAL capture intact, and the
	// thread's capture mode is switched for each harvest and back.
	for i := 0; i < 5; i++ {
		span(t, f, p, 1, streamA, time.Millisecond)
		f.Advance(2 * time.Millisecond)
		before := f.Counters().ModeExchanges
		items := []backend.HarvestItem{{Slot: 1, WantStart: 1}}
		if err := p.Harvest(items); err != nil || items[0].State != backend.Done {
			t.Fatalf("Harvest: %v %+v", err, items[0])
		}
		if got := f.Counters().ModeExchanges - before; got != 2 {
			t.Errorf("harvest made %d capture-mode exchanges, want 2", got)
		}
	}
	c := f.Counters()
	if c.RecordsIntoCapture != 0 || c.CapturesInvalidated != 0 || c.UnrelaxedQueries != 0 {
		t.Errorf("capture disturbed: %+v", c)
	}
	// Control: without the exchange, the fake sees the capture broken.
	cudatest.SetCaptureModeExchange(false)
	defer cudatest.SetCaptureModeExchange(true)
	span(t, f, p, 2, streamA, time.Millisecond)
	f.Advance(2 * time.Millisecond)
	if err := p.Harvest([]backend.HarvestItem{{Slot: 2}}); err != nil {
		t.Fatal(err)
	}
	if got := f.Counters().CapturesInvalidated; got != 1 {
		t.Errorf("control: %d captures invalidated, want 1", got)
	}
	cudatest.SetCaptureModeExchange(true)
	f.EndCapture(streamB)
	closeAndCheckLeaks(t, f, p)
}

// Nested spans on interleaved streams, harvested in shuffled order as the
// fake clock moves, checked against the test's own model of the fake GPU.
func TestHarvestMatchesModel(t *testing.T) {
	f := useFake(t)
	const slots = 256
	p := openPool(t, slots)
	rng := rand.New(rand.NewSource(1))
	streams := []backend.Stream{0x10, 0x20, 0x30, 0x40}
	busy := map[backend.Stream]time.Duration{}
	now := time.Duration(0)
	at := func(s backend.Stream) time.Duration {
		if busy[s] > now {
			return busy[s]
		}
		return now
	}
	work := func(s backend.Stream, d time.Duration) {
		f.StreamWork(s, d)
		busy[s] = at(s) + d
	}
	type want struct{ begin, end time.Duration }
	spans := map[int]want{}
	next := 0
	for next < slots-4 {
		s := streams[rng.Intn(len(streams))]
		outer := next
		next++
		b := at(s)
		must(t, p.RecordBegin(outer, s))
		for k := rng.Intn(3); k > 0; k-- {
			in := next
			next++
			ib := at(s)
			must(t, p.RecordBegin(in, s))
			work(s, time.Duration(1+rng.Intn(100))*time.Microsecond)
			spans[in] = want{ib, at(s)}
			must(t, p.RecordEnd(in, s))
		}
		work(s, time.Duration(rng.Intn(50))*time.Microsecond)
		spans[outer] = want{b, at(s)}
		must(t, p.RecordEnd(outer, s))
		if rng.Intn(3) == 0 {
			d := time.Duration(rng.Intn(100)) * time.Microsecond
			f.Advance(d)
			now += d
		}
	}
	var items []backend.HarvestItem
	for slot := range spans {
		items = append(items, backend.HarvestItem{Slot: uint32(slot)})
	}
	for round := 0; round < 4; round++ {
		rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		must(t, p.Harvest(items))
		done := 0
		for _, it := range items {
			w := spans[int(it.Slot)]
			if w.begin <= now && w.end <= now {
				done++
				if it.State != backend.Done || it.DurationNs != int64(w.end-w.begin) {
					t.Fatalf("slot %d: %+v, want done in %v", it.Slot, it, w.end-w.begin)
				}
			} else if it.State != backend.InFlight {
				t.Fatalf("slot %d: %+v, want in flight", it.Slot, it)
			}
		}
		if round == 3 && done != len(items) {
			t.Fatalf("%d of %d done at the end", done, len(items))
		}
		d := time.Duration(rng.Intn(3000)) * time.Microsecond
		if round == 2 {
			d = time.Second
		}
		f.Advance(d)
		now += d
	}
	closeAndCheckLeaks(t, f, p)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestStartTimes(t *testing.T) {
	f := useFake(t)
	p := openPool(t, 8) // records the first anchor
	items := []backend.HarvestItem{{Slot: 0}}
	h0 := time.Now().UnixNano()
	must(t, p.Harvest(items)) // promotes it
	cudatest.SetAnchorInterval(p, time.Nanosecond)
	must(t, p.Harvest(items)) // records a second anchor at fake time 0
	h1 := time.Now().UnixNano()
	must(t, p.Harvest(items)) // promotes it
	f.Advance(3 * time.Millisecond)
	span(t, f, p, 1, streamA, time.Millisecond)
	f.Advance(2 * time.Millisecond)
	items = []backend.HarvestItem{{Slot: 1, WantStart: 1}, {Slot: 1}}
	must(t, p.Harvest(items))
	lo, hi := h0+3e6, h1+3e6
	if got := items[0].StartNs; items[0].State != backend.Done || got < lo || got > hi {
		t.Errorf("start %d, want within [%d, %d]", got, lo, hi)
	}
	if items[1].StartNs != 0 {
		t.Errorf("start given without WantStart: %d", items[1].StartNs)
	}
	closeAndCheckLeaks(t, f, p)
}

func TestTwoDevices(t *testing.T) {
	f := useFake(t)
	f.SetDeviceCount(2)
	if n, err := cuda.DeviceCount(); n != 2 || err != nil {
		t.Fatalf("DeviceCount: %d, %v", n, err)
	}
	a := openPool(t, 4)
	b, err := cuda.Opener(1)(4)
	if err != nil {
		t.Fatal(err)
	}
	if b.Device() != 1 || b.Slots() != 4 {
		t.Errorf("Opener(1, 4) gave device %d, %d slots", b.Device(), b.Slots())
	}
	must(t, b.Close())
	closeAndCheckLeaks(t, f, a)
}

func TestDeviceIdentity(t *testing.T) {
	f := useFake(t)
	f.SetDeviceCount(2)
	want := backend.Identity{UUID: "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadae01", PCIBusID: "00000000:1A:00.0", Name: "gpuspans fake GPU", Driver: "12.9"}
	if id, err := cuda.DeviceIdentity(1); id != want || err != nil {
		t.Errorf("DeviceIdentity(1) = %+v, %v; want %+v", id, err, want)
	}
	p, err := cuda.Open(1, 4)
	if err != nil {
		t.Fatal(err)
	}
	if id := p.Identity(); id != want {
		t.Errorf("Pool.Identity() = %+v, want %+v", id, want)
	}
	closeAndCheckLeaks(t, f, p)
	if _, err := cuda.DeviceIdentity(7); err == nil || !strings.Contains(err.Error(), "cuDeviceGet(7)") {
		t.Errorf("DeviceIdentity(7) = %v, want an error naming cuDeviceGet(7)", err)
	}
}

// The record and harvest paths must not allocate: they run for every span.
func TestZeroAllocations(t *testing.T) {
	f := useFake(t)
	p := openPool(t, 64)
	if n := testing.AllocsPerRun(100, func() {
		_ = p.RecordBegin(3, streamA)
		_ = p.RecordEnd(3, streamA)
	}); n != 0 {
		t.Errorf("RecordBegin+RecordEnd: %v allocations", n)
	}
	f.SetCapturing(streamB, cudakit.CaptureGlobal)
	if n := testing.AllocsPerRun(100, func() {
		if !errors.Is(p.RecordBegin(4, streamB), backend.ErrCapturing) {
			panic("not refused")
		}
	}); n != 0 {
		t.Errorf("refused RecordBegin: %v allocations", n)
	}
	f.EndCapture(streamB)
	items := make([]backend.HarvestItem, 64)
	for i := range items {
		items[i].Slot = uint32(i)
		items[i].WantStart = 1
	}
	if n := testing.AllocsPerRun(100, func() { _ = p.Harvest(items) }); n != 0 {
		t.Errorf("Harvest: %v allocations", n)
	}
	closeAndCheckLeaks(t, f, p)
}

// BenchmarkRecord measures a begin and end record through cgo into the
// core, against the fake driver (whose mutex and maps dominate).
func BenchmarkRecord(b *testing.B) {
	f := useFake(b)
	p := openPool(b, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = p.RecordBegin(i&63, streamA)
		_ = p.RecordEnd(i&63, streamA)
	}
	b.StopTimer()
	closeAndCheckLeaks(b, f, p)
}

// BenchmarkHarvest4096Done measures one harvest call landing 4096 done spans.
func BenchmarkHarvest4096Done(b *testing.B) {
	f := useFake(b)
	const n = 4096
	p := openPool(b, n)
	items := make([]backend.HarvestItem, n)
	for i := range items {
		span(b, f, p, i, streamA, time.Microsecond)
		items[i].Slot = uint32(i)
	}
	f.Advance(time.Second)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := p.Harvest(items); err != nil || items[n-1].State != backend.Done {
			b.Fatal(err, items[n-1])
		}
	}
	b.StopTimer()
	closeAndCheckLeaks(b, f, p)
}

// RecordNext ends one span and begins the next at one event, through the C
// pool: durations as with separate events, one record fewer per boundary,
// refusals on a capturing stream or bad slots.
func TestRecordNext(t *testing.T) {
	f := useFake(t)
	p := openPool(t, 4)
	records := f.Counters().EventRecords
	if err := p.RecordBegin(0, streamA); err != nil {
		t.Fatal(err)
	}
	f.StreamWork(streamA, 2*time.Millisecond)
	if err := p.RecordNext(0, 1, streamA); err != nil {
		t.Fatal(err)
	}
	f.StreamWork(streamA, 3*time.Millisecond)
	if err := p.RecordEnd(1, streamA); err != nil {
		t.Fatal(err)
	}
	if n := f.Counters().EventRecords - records; n != 3 {
		t.Errorf("%d event records for two spans sharing a boundary, want 3", n)
	}
	f.Advance(10 * time.Millisecond)
	items := []backend.HarvestItem{{Slot: 0}, {Slot: 1}}
	if err := p.Harvest(items); err != nil || items[0].State != backend.Done || items[1].State != backend.Done ||
		items[0].DurationNs != 2e6 || items[1].DurationNs != 3e6 {
		t.Fatalf("Harvest: %v %+v", err, items)
	}
	for _, bad := range [][2]int{{0, 0}, {-1, 1}, {0, 4}} {
		if err := p.RecordNext(bad[0], bad[1], streamA); !errors.Is(err, backend.ErrBadSlot) {
			t.Errorf("RecordNext(%d, %d): %v, want ErrBadSlot", bad[0], bad[1], err)
		}
	}
	f.SetCapturing(streamB, cudakit.CaptureGlobal)
	if err := p.RecordNext(2, 3, streamB); !errors.Is(err, backend.ErrCapturing) {
		t.Errorf("RecordNext on a capturing stream: %v", err)
	}
	f.EndCapture(streamB)
	closeAndCheckLeaks(t, f, p)
}

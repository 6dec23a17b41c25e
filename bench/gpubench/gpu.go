package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/cuda/cudatest"
)

// gpu is what the sections need from one device: the GPU kit on a GPU
// machine, or fakeGPU for CPU runs of the same code (-fake). Methods may be
// called from any goroutine, as the kit's may.
type gpu interface {
	NewStream() (backend.Stream, error)
	DestroyStream(backend.Stream) error
	Empty(backend.Stream) error
	Spin(s backend.Stream, d time.Duration, t timer) error
	SpinGrid(s backend.Stream, d time.Duration, t timer) error // as many CTAs as t was made for
	NewTimer() (timer, error)
	NewGridTimer(ctas int) (timer, error)
	Sync(backend.Stream) error
	CaptureBegin(backend.Stream, cudakit.CaptureMode) error
	CaptureEnd(backend.Stream) (cudakit.Graph, error)
	Instantiate(cudakit.Graph) (cudakit.GraphExec, error)
	Launch(cudakit.GraphExec, backend.Stream) error
	DestroyGraph(cudakit.Graph) error
	DestroyGraphExec(cudakit.GraphExec) error
	Close() error
}

// timer holds one spin kernel's own first and last %globaltimer readings.
type timer interface {
	Read() (start, end uint64, err error)
	Free() error
}

// kitGPU is the real device: the kit, with its timer type hidden behind
// the interface.
type kitGPU struct{ *cudakit.Kit }

func (k kitGPU) Spin(s backend.Stream, d time.Duration, t timer) error {
	var ct *cudakit.Timer
	if t != nil {
		ct = t.(*cudakit.Timer)
	}
	return k.Kit.Spin(s, d, ct)
}

func (k kitGPU) SpinGrid(s backend.Stream, d time.Duration, t timer) error {
	return k.Kit.SpinGrid(s, d, t.(*cudakit.Timer))
}

func (k kitGPU) NewTimer() (timer, error) { return k.NewGridTimer(1) }

func (k kitGPU) NewGridTimer(ctas int) (timer, error) {
	t, err := k.Kit.NewGridTimer(ctas)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// fakeState drives the fake driver compiled into the core (the kit has no
// fake): launches queue work on the fake's streams, so spans recorded
// around them get the fake's timestamps. An empty kernel or a graph launch
// also moves the fake clock by its own length, so the fake GPU keeps pace
// with launches and their spans complete without a sync; a spin does not,
// so it stays in flight until Sync. Numbers from the fake are meaningless:
// it exists to run every path of the benchmark on a machine without a GPU.
type fakeState struct {
	mu      sync.Mutex
	fd      *cudatest.FakeDriver
	next    backend.Stream
	busy    map[backend.Stream]time.Duration // mirror of the fake's busy-until per stream
	capture map[backend.Stream]fakeCapture
	graphs  uint64
}

// fakeCapture is what a capture saw of the fake's counters when it began.
type fakeCapture struct {
	invalidated, recordsInCapture int64
}

const (
	fakeEmpty  = time.Microsecond     // GPU time of the fake's empty kernel
	fakeLaunch = 2 * time.Microsecond // GPU time of a fake graph launch
	fakeEpoch  = uint64(1) << 40      // fake %globaltimer at fake time 0
)

func newFakeState(fd *cudatest.FakeDriver) *fakeState {
	return &fakeState{
		fd:      fd,
		next:    0x70000000, // far from the fake driver's own stream handles
		busy:    make(map[backend.Stream]time.Duration),
		capture: make(map[backend.Stream]fakeCapture),
	}
}

// fakeGPU is one fake device; all of them share the fake's one clock.
type fakeGPU struct{ st *fakeState }

type fakeTimer struct {
	mu         sync.Mutex
	start, end uint64
}

func (t *fakeTimer) Read() (uint64, uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.start, t.end, nil
}

func (t *fakeTimer) Free() error { return nil }

// work queues d on s and returns when it starts; advance moves the clock
// by d too. Caller holds st.mu.
func (st *fakeState) work(s backend.Stream, d time.Duration, advance bool) time.Duration {
	start := st.fd.Now()
	if b := st.busy[s]; b > start {
		start = b
	}
	st.busy[s] = start + d
	st.fd.StreamWork(s, d)
	if advance {
		st.fd.Advance(d)
	}
	return start
}

func (f fakeGPU) NewStream() (backend.Stream, error) {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	f.st.next++
	return f.st.next, nil
}

func (f fakeGPU) DestroyStream(s backend.Stream) error {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	delete(f.st.busy, s)
	return nil
}

func (f fakeGPU) Empty(s backend.Stream) error {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	if _, capturing := f.st.capture[s]; !capturing {
		f.st.work(s, fakeEmpty, true)
	}
	return nil
}

func (f fakeGPU) Spin(s backend.Stream, d time.Duration, t timer) error {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	if _, capturing := f.st.capture[s]; capturing {
		return nil
	}
	start := f.st.work(s, d, false)
	if ft, ok := t.(*fakeTimer); ok {
		ft.mu.Lock()
		ft.start, ft.end = fakeEpoch+uint64(start), fakeEpoch+uint64(start+d)
		ft.mu.Unlock()
	}
	return nil
}

// SpinGrid is Spin: the fake has no CTAs.
func (f fakeGPU) SpinGrid(s backend.Stream, d time.Duration, t timer) error { return f.Spin(s, d, t) }

func (f fakeGPU) NewTimer() (timer, error) { return &fakeTimer{}, nil }

func (f fakeGPU) NewGridTimer(int) (timer, error) { return &fakeTimer{}, nil }

func (f fakeGPU) Sync(s backend.Stream) error {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	if now := f.st.fd.Now(); f.st.busy[s] > now {
		f.st.fd.Advance(f.st.busy[s] - now)
	}
	return nil
}

func (f fakeGPU) CaptureBegin(s backend.Stream, mode cudakit.CaptureMode) error {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	if _, ok := f.st.capture[s]; ok {
		return fmt.Errorf("fake CaptureBegin: stream %#x is capturing already", uint64(s))
	}
	c := f.st.fd.Counters()
	f.st.capture[s] = fakeCapture{c.CapturesInvalidated, c.RecordsIntoCapture}
	f.st.fd.SetCapturing(s, mode)
	return nil
}

// CaptureEnd fails with 901 as the driver would when a query broke the
// capture, or when an event was recorded into it (on the GPU that event
// becomes a graph node and its query breaks the capture).
func (f fakeGPU) CaptureEnd(s backend.Stream) (cudakit.Graph, error) {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	began, ok := f.st.capture[s]
	if !ok {
		return 0, fmt.Errorf("fake CaptureEnd: stream %#x is not capturing", uint64(s))
	}
	delete(f.st.capture, s)
	f.st.fd.EndCapture(s)
	c := f.st.fd.Counters()
	if c.CapturesInvalidated > began.invalidated || c.RecordsIntoCapture > began.recordsInCapture {
		return 0, &backend.DriverError{Op: "Kit.CaptureEnd", Code: 901, Msg: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (fake)"}
	}
	f.st.graphs++
	return cudakit.Graph(f.st.graphs), nil
}

func (f fakeGPU) Instantiate(g cudakit.Graph) (cudakit.GraphExec, error) {
	return cudakit.GraphExec(g), nil
}

func (f fakeGPU) Launch(x cudakit.GraphExec, s backend.Stream) error {
	f.st.mu.Lock()
	defer f.st.mu.Unlock()
	f.st.work(s, fakeLaunch, true)
	return nil
}

func (f fakeGPU) DestroyGraph(cudakit.Graph) error         { return nil }
func (f fakeGPU) DestroyGraphExec(cudakit.GraphExec) error { return nil }
func (f fakeGPU) Close() error                             { return nil }

package gpuspans

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/fake"
)

// The mirror word must equal the hub's state after every change: level,
// arming and open pools.
func TestStateMirror(t *testing.T) {
	var word uint32 = 0xdead
	h := newHub(t, Options{StateMirror: &word, Level: LevelStep, KernelSpanEvery: 2})
	check := func(when string, want uint32) {
		t.Helper()
		if got := atomic.LoadUint32(&word); got != want || got != h.mirrorValue() {
			t.Errorf("%s: mirror %#x, hub %#x; want %#x", when, got, h.mirrorValue(), want)
		}
	}
	check("New", uint32(LevelStep))
	h.BeginStep()
	check("a step at Step", uint32(LevelStep))
	if err := h.SetLevel(LevelKernel); err != nil {
		t.Fatal(err)
	}
	check("SetLevel(Kernel)", uint32(LevelKernel))
	if err := h.Install(0, 1, newFake(t, fake.Options{}).Opener()); err != nil {
		t.Fatal(err)
	}
	h.BeginStep() // step 2: armed, and the pool opens
	check("armed step", uint32(LevelKernel)|MirrorArmed|MirrorPools)
	h.BeginStep()
	check("unarmed step", uint32(LevelKernel)|MirrorPools)
	h.BeginStep()
	if err := h.SetLevel(LevelOff); err != nil {
		t.Fatal(err)
	}
	check("SetLevel(Off) on an armed step", MirrorPools)
	h.Uninstall(0)
	check("Uninstall", 0)
	if err := h.SetLevel(Level(7)); err == nil {
		t.Error("SetLevel(7) took")
	}
	check("a refused SetLevel", 0)
}

// Racing writers leave the word equal to the final state.
func TestStateMirrorRacing(t *testing.T) {
	var word uint32
	h := newHub(t, Options{StateMirror: &word, KernelSpanEvery: 3})
	if err := h.Install(0, 1, newFake(t, fake.Options{}).Opener()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				if g == 0 {
					h.BeginStep()
				} else {
					_ = h.SetLevel(Level((i + g) % 3))
				}
			}
		}(g)
	}
	wg.Wait()
	if got, want := atomic.LoadUint32(&word), h.mirrorValue(); got != want {
		t.Errorf("after racing writers: mirror %#x, hub %#x", got, want)
	}
}

// The "a step may be taken outside Go" word (spanring.Hub.CStep) holds
// exactly while a RunHarvester runs, kernel timing is events, the kernel
// tracer is closed and, at Kernel, no pool waits to open, after every
// change of those.
func TestCStepFact(t *testing.T) {
	tracer := new(fake.Tracer)
	h := newHub(t, Options{Level: LevelKernel, KernelTiming: KernelTimingEvents, KernelTracer: tracer.Opener()})
	check := func(when string, want bool) {
		t.Helper()
		if got := h.cStep.Load(); got != want {
			t.Errorf("%s: CStep %v, want %v", when, got, want)
		}
	}
	check("New, no harvester", false)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.RunHarvester(ctx, time.Hour) }()
	for deadline := time.Now().Add(time.Minute); !h.background.Load() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	check("a harvester runs, events", true)
	if err := h.Install(0, 1, newFake(t, fake.Options{}).Opener()); err != nil {
		t.Fatal(err)
	}
	check("a pool waits to open at Kernel", false)
	if err := h.SetLevel(LevelStep); err != nil {
		t.Fatal(err)
	}
	check("a pool waits, at Step", true)
	if err := h.SetLevel(LevelKernel); err != nil {
		t.Fatal(err)
	}
	check("a pool waits to open at Kernel again", false)
	h.BeginStep() // opens it
	check("the pool open", true)
	if err := h.SetKernelTiming(KernelTimingAttached); err != nil {
		t.Fatal(err)
	}
	check("attached asked", false)
	h.BeginStep() // opens the tracer, attached
	if atomic.LoadUint32(&h.state)&tracerBit == 0 {
		t.Fatal("the tracer did not open")
	}
	if err := h.SetKernelTiming(KernelTimingEvents); err != nil {
		t.Fatal(err)
	}
	check("events asked, the tracer still open", false)
	h.BeginStep() // closes it
	check("events, the tracer closed", true)
	if err := h.SetKernelTiming(KernelTimingAuto); err != nil {
		t.Fatal(err)
	}
	if err := h.CloseKernelTracer(); err != nil { // turns kernel timing to events
		t.Fatal(err)
	}
	check("CloseKernelTracer", true)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	check("the harvester returned", false)
}

package gpuspans

import (
	"sync"
	"sync/atomic"
	"testing"

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

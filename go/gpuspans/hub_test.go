package gpuspans

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
)

// A slot is exactly one cache line, so that adjacent slots, claimed by
// different goroutines, never share one: the index is out of range (a
// compile error) when a slot is larger, and the constant overflows when it
// is smaller.
var _ = [1]struct{}{}[unsafe.Sizeof(slot{})-cacheLine]

func TestNewValidation(t *testing.T) {
	many := make([]string, MaxLanes+1)
	for i := range many {
		many[i] = fmt.Sprintf("lane%d", i)
	}
	for _, c := range []struct {
		name  string
		o     Options
		field string // the error must name it
	}{
		{"empty lane", Options{Lanes: []string{"prefill", ""}}, "Lanes[1]"},
		{"duplicate lane", Options{Lanes: []string{"a", "b", "a"}}, "Lanes[2]"},
		{"unprintable lane", Options{Lanes: []string{"a\x00"}}, "Lanes[0]"},
		{"long lane", Options{Lanes: []string{strings.Repeat("x", MaxNameLen+1)}}, "Lanes[0]"},
		{"too many lanes", Options{Lanes: many}, "Lanes"},
		{"no lanes", Options{Lanes: []string{}}, "Lanes is empty"},
		{"negative every", Options{KernelSpanEvery: -1}, "KernelSpanEvery"},
		{"huge every", Options{KernelSpanEvery: MaxKernelSpanEvery + 1}, "KernelSpanEvery"},
		{"negative slots", Options{Slots: -1}, "Slots"},
		{"huge slots", Options{Slots: backend.MaxSlots + 1}, "Slots"},
		{"negative recent", Options{RecentSpans: -5}, "RecentSpans"},
		{"huge recent", Options{RecentSpans: MaxRecentSpans + 1}, "RecentSpans"},
		{"junk level", Options{Level: 9}, "Level"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.o)
			if err == nil || !strings.Contains(err.Error(), "Options."+c.field) {
				t.Errorf("New = %v; want an error naming Options.%s", err, c.field)
			}
		})
	}
	// Bounds themselves are fine.
	if _, err := New(Options{Lanes: many[:MaxLanes], Slots: backend.MaxSlots, RecentSpans: MaxRecentSpans}); err != nil {
		t.Errorf("New at the bounds: %v", err)
	}
}

func TestNewDefaults(t *testing.T) {
	h := newHub(t, Options{})
	if got := h.Lanes(); len(got) != 2 || got[0] != "prefill" || got[1] != "decode" {
		t.Errorf("Lanes() = %v", got)
	}
	if h.KernelSpanEvery() != DefaultKernelSpanEvery || h.Level() != LevelOff || h.slots != DefaultSlots || h.recentCap != DefaultRecentSpans {
		t.Errorf("defaults: every %d level %v slots %d recent %d", h.KernelSpanEvery(), h.Level(), h.slots, h.recentCap)
	}
	if i, ok := h.LaneIndex("decode"); !ok || i != 1 {
		t.Errorf("LaneIndex(decode) = %d, %v", i, ok)
	}
	if _, ok := h.LaneIndex("nope"); ok {
		t.Error("LaneIndex(nope) found a lane")
	}
	// Lanes returns a copy, and New copied Options.Lanes.
	h.Lanes()[0] = "changed"
	lanes := []string{"x"}
	h2 := newHub(t, Options{Lanes: lanes})
	lanes[0] = "y"
	if h.Lanes()[0] != "prefill" || h2.Lanes()[0] != "x" {
		t.Error("lane names are shared with the caller")
	}
}

func TestKernelSpanEvery(t *testing.T) {
	h := newHub(t, Options{})
	for _, n := range []int{0, -3, MaxKernelSpanEvery + 1} {
		if err := h.SetKernelSpanEvery(n); err == nil || !strings.Contains(err.Error(), fmt.Sprint(n)) {
			t.Errorf("SetKernelSpanEvery(%d) = %v; want an error naming it", n, err)
		}
	}
	if h.KernelSpanEvery() != DefaultKernelSpanEvery {
		t.Error("a refused SetKernelSpanEvery changed the period")
	}
	if err := h.SetKernelSpanEvery(3); err != nil || h.KernelSpanEvery() != 3 {
		t.Errorf("SetKernelSpanEvery(3): %v, %d", err, h.KernelSpanEvery())
	}
}

func TestDefault(t *testing.T) {
	d := Default()
	if d != Default() {
		t.Fatal("Default is not stable")
	}
	if d.Level() != LevelOff || len(d.Lanes()) != 2 {
		t.Errorf("default hub: level %v lanes %v", d.Level(), d.Lanes())
	}
	h := newHub(t, Options{})
	SetDefault(h)
	defer SetDefault(d)
	if Default() != h {
		t.Error("SetDefault did not take")
	}
	defer func() {
		if recover() == nil {
			t.Error("SetDefault(nil) did not panic")
		}
	}()
	SetDefault(nil)
}

func TestRegisterKernel(t *testing.T) {
	h := newHub(t, Options{})
	for _, c := range []struct {
		name string
		bad  bool
	}{
		{"gemm", false}, {"", true}, {OtherKernel, true}, {"a\nb", true},
		{strings.Repeat("k", MaxNameLen), false}, {strings.Repeat("k", MaxNameLen+1), true},
		{"\xff", true},
	} {
		if err := h.RegisterKernel(1, c.name); (err != nil) != c.bad {
			t.Errorf("RegisterKernel(%q) = %v", c.name, err)
		}
	}
	// Handle 1 holds two names now (gemm, then the long one). Fill the name
	// table with MaxKernels-2 more handles, then one more handle on an old
	// name fills the handle table.
	for i := 0; i < MaxKernels-2; i++ {
		if err := h.RegisterKernel(uint64(100+i), fmt.Sprintf("k%d", i)); err != nil {
			t.Fatalf("registering kernel %d: %v", i, err)
		}
	}
	if err := h.RegisterKernel(2, "k0"); err != nil {
		t.Fatalf("last handle: %v", err)
	}
	if err := h.RegisterKernel(99999, "k1"); err == nil || !strings.Contains(err.Error(), "handles") {
		t.Errorf("registering more than MaxKernels handles: %v", err)
	}
	if err := h.RegisterKernel(100, "renamed"); err == nil || !strings.Contains(err.Error(), "names") {
		t.Errorf("creating more than MaxKernels names: %v", err)
	}
	if err := h.RegisterKernel(100, "k5"); err != nil {
		t.Errorf("renaming to an existing name: %v", err)
	}
	if h.kernelNames[h.kernelIdx[100]] != "k5" {
		t.Error("rename did not take")
	}
}

func TestSetLevel(t *testing.T) {
	h := newHub(t, Options{KernelSpanEvery: 1})
	if err := h.SetLevel(Level(3)); err == nil || !strings.Contains(err.Error(), "Level(3)") {
		t.Errorf("SetLevel(3) = %v; want an error naming Level(3)", err)
	}
	if h.Level() != LevelOff {
		t.Errorf("a refused SetLevel changed the level to %v", h.Level())
	}
	if err := h.SetLevel(LevelKernel); err != nil {
		t.Fatal(err)
	}
	if atomic.LoadUint32(&h.state)&armedBit != 0 {
		t.Error("raising the level armed kernel spans before a step")
	}
	h.BeginStep()
	if atomic.LoadUint32(&h.state)&armedBit == 0 {
		t.Fatal("step not armed with KernelSpanEvery 1")
	}
	if err := h.SetLevel(LevelKernel); err != nil || atomic.LoadUint32(&h.state)&armedBit == 0 {
		t.Error("setting Kernel again disarmed the step")
	}
	if err := h.SetLevel(LevelStep); err != nil {
		t.Fatal(err)
	}
	if atomic.LoadUint32(&h.state) != uint32(LevelStep) {
		t.Errorf("state after lowering = %#x; want Step with armed clear", atomic.LoadUint32(&h.state))
	}
}

// TestStep: Step is the step spans begun now carry, counted from LevelStep.
func TestStep(t *testing.T) {
	h := newHub(t, Options{})
	h.BeginStep() // Off: not counted
	if h.Step() != 0 {
		t.Errorf("Step() = %d at Off, want 0", h.Step())
	}
	if err := h.SetLevel(LevelStep); err != nil {
		t.Fatal(err)
	}
	h.BeginStep()
	h.BeginStep()
	if got, snap := h.Step(), h.Snapshot().Step; got != 2 || snap != 2 {
		t.Errorf("Step() = %d, Snapshot().Step = %d; want 2", got, snap)
	}
}

// TestRegisterKernelRenamesLandings: a handle registered again lands under
// its new name from then on (the landing memo forgets the old index), and
// landing after a registration allocates nothing.
func TestRegisterKernelRenamesLandings(t *testing.T) {
	h, _ := kernelHub(t, Options{}, fake.Options{})
	land := func() {
		h.BeginStep()
		h.KernelEnd(h.KernelBegin(7, kernelStream))
		h.Harvest()
	}
	count := func(name string) uint64 {
		var n uint64
		for _, a := range snap(t, h).Kernels {
			if a.Name == name {
				n += a.Count
			}
		}
		return n
	}
	land() // unregistered: other
	if err := h.RegisterKernel(7, "a"); err != nil {
		t.Fatal(err)
	}
	land()
	land()
	if err := h.RegisterKernel(7, "b"); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(20, land); n != 0 {
		t.Errorf("a landing after RegisterKernel allocates %v times", n)
	}
	if o, a, b := count(OtherKernel), count("a"), count("b"); o != 1 || a != 2 || b != 21 {
		t.Errorf("other %d, a %d, b %d; want 1, 2, 21", o, a, b)
	}
}

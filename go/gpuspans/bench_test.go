package gpuspans_test

import (
	"fmt"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest/loop"
)

// The hub's CPU micro-benchmarks. Where `gpuspans bench` (the machine
// report) measures the same thing, both time package loop's loops.

const (
	laneStream   = gpuspans.LaneStreamForTest
	kernelStream = gpuspans.KernelStreamForTest
)

// timeLoop is a benchmark of f on the hub h makes, made untimed.
func timeLoop(h func(b *testing.B) *gpuspans.Hub, stream backend.Stream, f loop.Func) func(*testing.B) {
	return func(b *testing.B) {
		hub := h(b)
		b.ReportAllocs()
		b.ResetTimer()
		f(hub, stream, b.N)
	}
}

// disabledHub is a hub at level Off with a fake pool installed.
func disabledHub(b *testing.B) *gpuspans.Hub {
	h := gpuspans.NewHubForTest(b, gpuspans.Options{})
	if err := h.Install(0, laneStream, gpuspans.NewFakeForTest(b, fake.Options{}).Opener()); err != nil {
		b.Fatal(err)
	}
	return h
}

// fakeHub is a hub at level Kernel, every step armed, on an open fake pool.
func fakeHub(b *testing.B) *gpuspans.Hub {
	h, _ := gpuspans.KernelHubForTest(b, gpuspans.Options{}, fake.Options{})
	return h
}

// nopHub is fakeHub on a pool that does nothing: what is left is the hub's
// own cost.
func nopHub(b *testing.B) *gpuspans.Hub {
	h := gpuspans.NewHubForTest(b, gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1})
	if err := h.Install(0, laneStream, sim.NopOpener); err != nil {
		b.Fatal(err)
	}
	h.BeginStep()
	return h
}

// BenchmarkDisabled times each span call alone at level Off, and the pairs
// the machine report times.
func BenchmarkDisabled(b *testing.B) {
	h := disabledHub(b)
	for _, c := range []struct {
		name string
		f    func(b *testing.B)
	}{
		{"LaneBegin", func(b *testing.B) { laneBegins(h, b.N) }},
		{"LaneEnd", func(b *testing.B) { laneEnds(h, b.N) }},
		{"KernelBegin", func(b *testing.B) { kernelBegins(h, b.N) }},
		{"Device.KernelBegin", func(b *testing.B) { deviceKernelBegins(h.Device(0), b.N) }},
		{"KernelEnd", func(b *testing.B) { kernelEnds(h, b.N) }},
		{"BeginStep", func(b *testing.B) { loop.BeginSteps(h, 0, b.N) }},
		{"LaneSpan", func(b *testing.B) { loop.LaneSpans(h, 0, b.N) }},
		{"KernelSpan", func(b *testing.B) { loop.KernelSpans(h, kernelStream, b.N) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			c.f(b)
		})
	}
}

// The calls alone, each a loop of its own (see package loop).

func laneBegins(h *gpuspans.Hub, n int) {
	for i := 0; i < n; i++ {
		h.LaneBegin(0)
	}
}

func laneEnds(h *gpuspans.Hub, n int) {
	for i := 0; i < n; i++ {
		h.LaneEnd(0)
	}
}

func kernelBegins(h *gpuspans.Hub, n int) {
	for i := 0; i < n; i++ {
		h.KernelBegin(1, kernelStream)
	}
}

func deviceKernelBegins(d gpuspans.DeviceSpans, n int) {
	for i := 0; i < n; i++ {
		d.KernelBegin(1, kernelStream)
	}
}

func kernelEnds(h *gpuspans.Hub, n int) {
	for i := 0; i < n; i++ {
		h.KernelEnd(gpuspans.KernelSpan{})
	}
}

// BenchmarkEnabled times a span on an armed step, harvests amortised.
func BenchmarkEnabled(b *testing.B) {
	b.Run("LaneSpan/backend=fake", timeLoop(fakeHub, laneStream, loop.HarvestedLaneSpans))
	b.Run("KernelSpan/backend=fake", timeLoop(fakeHub, kernelStream, loop.HarvestedKernelSpans))
	b.Run("KernelSpan/backend=nop", timeLoop(nopHub, kernelStream, loop.HarvestedKernelSpans))
	// The fake's share: the calls a kernel span makes, harvest included.
	b.Run("KernelSpan/backend=fake/calls-only", func(b *testing.B) {
		f := fake.New(fake.Options{})
		items := make([]backend.HarvestItem, 1)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			slot := i % 4096
			_ = f.RecordBegin(slot, kernelStream)
			_ = f.RecordEnd(slot, kernelStream)
			items[0].Slot = uint32(slot)
			_ = f.Harvest(items)
		}
	})
}

func BenchmarkParallel(b *testing.B) {
	b.Run("KernelSpan/backend=fake", func(b *testing.B) {
		h := fakeHub(b)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				h.KernelEnd(h.KernelBegin(1, kernelStream))
				if i%loop.HarvestEvery == 0 {
					h.Harvest() // TryLock: one goroutine harvests, the others skip
				}
			}
		})
		b.StopTimer()
		c := h.Snapshot().Counters
		b.ReportMetric(float64(c.Dropped[gpuspans.DropSlotBusy])/float64(c.Begun), "dropped/span")
	})
}

func BenchmarkHarvest(b *testing.B) {
	const slots = gpuspans.DefaultSlots
	name := fmt.Sprintf("slots=%d/backend=fake", slots)
	b.Run(name+"/outcome=done", func(b *testing.B) {
		h := fakeHub(b)
		b.ReportAllocs()
		b.ResetTimer()
		if err := loop.Harvests(b, h, kernelStream, b.N, slots, nil); err != nil {
			b.Fatal(err)
		}
	})
	b.Run(name+"/outcome=in-flight", func(b *testing.B) {
		h, f := gpuspans.KernelHubForTest(b, gpuspans.Options{}, fake.Options{})
		f.SetOutcome(gpuspans.InFlightForTest)
		for j := 0; j < slots; j++ {
			h.KernelEnd(h.KernelBegin(1, kernelStream))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.Harvest()
		}
	})
}

package gpuspans

import (
	"fmt"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/fake"
)

// Spans are harvested every harvestEvery spans in the span benchmarks, so
// that the ring never fills and the cost of landing is included, amortised.
const harvestEvery = 256

func BenchmarkDisabled(b *testing.B) {
	h := newHub(b, Options{})
	if err := h.Install(0, laneStream, newFake(b, fake.Options{}).Opener()); err != nil {
		b.Fatal(err)
	}
	b.Run("LaneBegin", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			h.LaneBegin(0)
		}
	})
	b.Run("LaneEnd", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			h.LaneEnd(0)
		}
	})
	b.Run("KernelBegin", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			h.KernelBegin(1, kernelStream)
		}
	})
	b.Run("Device.KernelBegin", func(b *testing.B) {
		d := h.Device(0)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			d.KernelBegin(1, kernelStream)
		}
	})
	b.Run("KernelEnd", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			h.KernelEnd(KernelSpan{})
		}
	})
	b.Run("BeginStep", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			h.BeginStep()
		}
	})
}

func BenchmarkEnabled(b *testing.B) {
	b.Run("LaneSpan/backend=fake", func(b *testing.B) {
		h, _ := kernelHub(b, Options{}, fake.Options{})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.LaneBegin(0)
			h.LaneEnd(0)
			if i%harvestEvery == 0 {
				h.Harvest()
			}
		}
	})
	b.Run("KernelSpan/backend=fake", func(b *testing.B) {
		h, _ := kernelHub(b, Options{}, fake.Options{})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.KernelEnd(h.KernelBegin(1, kernelStream))
			if i%harvestEvery == 0 {
				h.Harvest()
			}
		}
	})
	// The hub's own cost: a backend that does nothing.
	b.Run("KernelSpan/backend=nop", func(b *testing.B) {
		h := newHub(b, Options{Level: LevelKernel, KernelSpanEvery: 1})
		if err := h.Install(0, laneStream, func() (backend.Pool, error) { return nopPool{}, nil }); err != nil {
			b.Fatal(err)
		}
		h.BeginStep()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			h.KernelEnd(h.KernelBegin(1, kernelStream))
			if i%harvestEvery == 0 {
				h.Harvest()
			}
		}
	})
	// The fake's share: the calls a kernel span makes, harvest included.
	b.Run("KernelSpan/backend=fake/calls-only", func(b *testing.B) {
		f := fake.New(fake.Options{})
		items := make([]backend.HarvestItem, 1)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			slot := i % 4096
			_, _ = f.Capturing(kernelStream)
			_ = f.RecordBegin(slot, kernelStream)
			_ = f.RecordEnd(slot, kernelStream)
			items[0].Slot = uint32(slot)
			_ = f.Harvest(items)
		}
	})
}

func BenchmarkParallel(b *testing.B) {
	b.Run("KernelSpan/backend=fake", func(b *testing.B) {
		h, _ := kernelHub(b, Options{}, fake.Options{})
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				h.KernelEnd(h.KernelBegin(1, kernelStream))
				if i%harvestEvery == 0 {
					h.Harvest() // TryLock: one goroutine harvests, the others skip
				}
			}
		})
		b.StopTimer()
		c := h.Snapshot().Counters
		b.ReportMetric(float64(c.Dropped[DropSlotBusy])/float64(c.Begun), "dropped/span")
	})
}

func BenchmarkHarvest(b *testing.B) {
	const slots = DefaultSlots
	name := fmt.Sprintf("slots=%d/backend=fake", slots)
	b.Run(name+"/outcome=done", func(b *testing.B) {
		h, _ := kernelHub(b, Options{}, fake.Options{})
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			for j := 0; j < slots; j++ {
				h.KernelEnd(h.KernelBegin(1, kernelStream))
			}
			b.StartTimer()
			h.Harvest()
		}
		b.StopTimer()
		if c := h.Snapshot().Counters; c.Landed != uint64(b.N*slots) {
			b.Fatalf("landed %d of %d", c.Landed, b.N*slots)
		}
	})
	b.Run(name+"/outcome=in-flight", func(b *testing.B) {
		h, f := kernelHub(b, Options{}, fake.Options{})
		f.SetOutcome(inFlight)
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

// nopPool is a backend that does nothing and lands every span at once.
type nopPool struct{}

func (nopPool) Device() int                            { return 0 }
func (nopPool) Slots() int                             { return DefaultSlots }
func (nopPool) Capturing(backend.Stream) (bool, error) { return false, nil }
func (nopPool) RecordBegin(int, backend.Stream) error  { return nil }
func (nopPool) RecordEnd(int, backend.Stream) error    { return nil }
func (nopPool) Close() error                           { return nil }
func (nopPool) Harvest(items []backend.HarvestItem) error {
	for i := range items {
		items[i].State, items[i].DurationNs = backend.Done, 1000
	}
	return nil
}

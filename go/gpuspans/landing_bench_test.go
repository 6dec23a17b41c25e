package gpuspans

import (
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
)

// landPool lands every span at once with durations spread over a few
// buckets, and does no other work: what a harvest costs on top of it is the
// hub's own per-span work.
type landPool struct{ n int }

func (p *landPool) Device() int                           { return 0 }
func (p *landPool) Slots() int                            { return p.n }
func (p *landPool) RecordBegin(int, backend.Stream) error { return nil }
func (p *landPool) RecordEnd(int, backend.Stream) error   { return nil }
func (p *landPool) Close() error                          { return nil }
func (p *landPool) Harvest(items []backend.HarvestItem) error {
	for i := range items {
		items[i].State, items[i].DurationNs = backend.Done, int64(2000+i%512*37)
		if items[i].WantStart != 0 {
			items[i].StartNs = 1
		}
	}
	return nil
}

// BenchmarkLanding is the hub's work per landed span: a harvest of a full
// ring of closed kernel spans (handles registered, as a serving engine's
// are) on a pool that answers at once, per span.
func BenchmarkLanding(b *testing.B) {
	const spans = 4096
	for _, c := range []struct {
		name string
		o    Options
	}{{"starts=off", Options{StartTimes: StartTimesNever}}, {"starts=on", Options{StartTimes: StartTimesAlways}}} {
		b.Run(c.name, func(b *testing.B) {
			c.o.Level, c.o.KernelSpanEvery = LevelKernel, 1
			h := newHub(b, c.o)
			for k := uint64(1); k <= 16; k++ {
				if err := h.RegisterKernel(k, "k"+string(rune('a'+k))); err != nil {
					b.Fatal(err)
				}
			}
			p := &landPool{n: spans}
			if err := h.Install(0, laneStream, func(int) (backend.Pool, error) { return p, nil }); err != nil {
				b.Fatal(err)
			}
			h.BeginStep()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for j := 0; j < spans; j++ {
					h.KernelEnd(h.KernelBegin(uint64(1+j%16), kernelStream))
				}
				b.StartTimer()
				h.Harvest()
			}
			b.StopTimer()
			if got := h.Snapshot().Counters.Landed; got != uint64(b.N*spans) {
				b.Fatalf("landed %d of %d", got, b.N*spans)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
		})
	}
}

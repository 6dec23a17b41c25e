package gpuspans_test

import (
	"fmt"
	"time"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// A serving loop on a simulated GPU: a decode lane span on every step, and a
// kernel span around one launch on every second step.
func Example() {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	stream := gpu.NewStream()

	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 2})
	if err != nil {
		panic(err)
	}
	if err := hub.Install(0, stream, gpu.Opener()); err != nil {
		panic(err)
	}
	const attention = 0xa77e
	if err := hub.RegisterKernel(attention, "attention"); err != nil {
		panic(err)
	}
	decode, _ := hub.LaneIndex("decode")

	for step := 0; step < 4; step++ {
		hub.BeginStep()
		hub.LaneBegin(decode)
		sp := hub.KernelBegin(attention, stream)
		gpu.Launch(stream, 300*time.Microsecond)
		hub.KernelEnd(sp)
		gpu.Launch(stream, 700*time.Microsecond)
		hub.LaneEnd(decode)
		clock.Advance(time.Millisecond)
	}
	hub.Harvest()

	s := hub.Snapshot()
	for _, a := range append(s.Lanes, s.Kernels...) {
		fmt.Printf("%s: %d spans, p50 %v\n", a.Name, a.Count, a.Quantile(0.5))
	}
	fmt.Printf("begun %d, landed %d\n", s.Counters.Begun, s.Counters.Landed)
	// Output:
	// prefill: 0 spans, p50 0s
	// decode: 4 spans, p50 1ms
	// other: 0 spans, p50 0s
	// attention: 2 spans, p50 300µs
	// begun 6, landed 6
}

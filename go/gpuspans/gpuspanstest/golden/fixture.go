package golden

import (
	"errors"
	"testing"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Start is the host time the fixture's clock starts at; it has
// nanoseconds, so that outputs must keep them.
var Start = time.Unix(1_700_000_000, 123_456_789)

// Fixture is the fixed input of the golden tests: a hub that ran a few
// steps with fixed GPU durations on a manual clock, so that everything
// derived from it is the same on every run.
type Fixture struct {
	Hub   *gpuspans.Hub
	Clock *sim.Clock // stopped after the run: Clock.Now is the fixture's "now"
}

// the registered kernels, by handle, in registration order.
var kernels = []struct {
	handle uint64
	name   string
}{{0xa1, "attention"}, {0xa2, "mlp"}}

// NewFixture runs the fixture's hub: two simulated GPUs with an event
// offset, lanes prefill and decode on each, kernel spans armed on every
// second step, registered kernels and an unregistered one ("other"), and a
// third device whose pool fails to open. Every span has landed.
func NewFixture(t testing.TB) Fixture {
	t.Helper()
	clock := sim.NewClock(Start)
	h, err := gpuspans.New(gpuspans.Options{
		Lanes: []string{"prefill", "decode"}, Level: gpuspans.LevelKernel, KernelSpanEvery: 2, Slots: 64,
		Now: clock.Now, StartTimes: gpuspans.StartTimesAlways, Logf: func(string, ...interface{}) {},
	})
	if err != nil {
		t.Fatal(err)
	}
	var gpus []*sim.GPU
	var streams []backend.Stream
	for d := 0; d < 2; d++ {
		g := sim.New(sim.Options{Device: d, Now: clock.Now, EventOffset: 3 * time.Microsecond})
		s := g.NewStream()
		if err := h.Install(d, s, g.Opener()); err != nil {
			t.Fatal(err)
		}
		gpus, streams = append(gpus, g), append(streams, s)
	}
	broken := fake.New(fake.Options{Device: 2, OpenErr: errors.New("no such device")})
	if err := h.Install(2, 0x30, broken.Opener()); err != nil {
		t.Fatal(err)
	}
	for _, k := range kernels {
		if err := h.RegisterKernel(k.handle, k.name); err != nil {
			t.Fatal(err)
		}
	}
	// Each lane's kernels' GPU time on device 0, in kernels' order then the
	// unregistered one; device d takes d+1 times as long, and step s adds s
	// ns, so that nothing is rounded unseen.
	work := [][]time.Duration{
		{40 * time.Microsecond, 30 * time.Microsecond, 5 * time.Microsecond},
		{8 * time.Microsecond, 6 * time.Microsecond, time.Microsecond},
	}
	for step := 1; step <= 4; step++ {
		h.BeginStep()
		for lane := range work {
			h.LaneBegin(lane) // on every device
			for d, g := range gpus {
				for i, k := range []uint64{0xa1, 0xa2, 0xff} {
					span := h.Device(d).KernelBegin(k, streams[d])
					g.Launch(streams[d], work[lane][i]*time.Duration(d+1)+time.Duration(step)*time.Nanosecond)
					h.KernelEnd(span)
				}
			}
			h.LaneEnd(lane)
		}
		clock.Advance(time.Millisecond)
	}
	h.Harvest()
	if c := h.Snapshot().Counters; c.InFlight != 0 || c.Landed == 0 {
		t.Fatalf("the fixture's spans did not all land: %+v", c)
	}
	return Fixture{Hub: h, Clock: clock}
}

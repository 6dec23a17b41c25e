// Package loop holds the loops that both benchmark harnesses time: the CPU
// micro-benchmarks of the hub (`go test -bench` in go/gpuspans) and the
// machine report of `gpuspans bench` (go/cmd/gpuspans/internal/overhead). One definition
// serves both, so a figure from one is the same loop as the other's.
//
// Each loop is a function of its own with nothing in it but the calls: a
// branch, a defer or a captured variable in the loop costs a measurable part
// of a nanosecond path.
package loop

import (
	"fmt"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// HarvestEvery is how many spans the harvested loops record between
// harvests: often enough that the ring never fills, so the cost of landing
// is in the figure, amortised, as it is in a serving loop.
const HarvestEvery = 256

// Func runs n ops on h; stream is where spans are recorded (lane loops
// ignore it: lanes have their own).
type Func func(h *gpuspans.Hub, stream backend.Stream, n int)

// Timer pauses the timing around work that is not measured; *testing.B is
// one.
type Timer interface {
	StartTimer()
	StopTimer()
}

// KernelSpans runs n KernelBegin+KernelEnd pairs and never harvests: for a
// hub below level Kernel, where there is nothing to harvest.
func KernelSpans(h *gpuspans.Hub, stream backend.Stream, n int) {
	for i := 0; i < n; i++ {
		h.KernelEnd(h.KernelBegin(1, stream))
	}
}

// LaneSpans runs n LaneBegin+LaneEnd pairs on lane 0 and never harvests.
func LaneSpans(h *gpuspans.Hub, _ backend.Stream, n int) {
	for i := 0; i < n; i++ {
		h.LaneBegin(0)
		h.LaneEnd(0)
	}
}

// HarvestedKernelSpans runs n kernel spans, harvesting every HarvestEvery.
func HarvestedKernelSpans(h *gpuspans.Hub, stream backend.Stream, n int) {
	for i := 0; i < n; i++ {
		h.KernelEnd(h.KernelBegin(1, stream))
		if i%HarvestEvery == HarvestEvery-1 {
			h.Harvest()
		}
	}
}

// HarvestedLaneSpans runs n lane spans on lane 0, harvesting every
// HarvestEvery.
func HarvestedLaneSpans(h *gpuspans.Hub, _ backend.Stream, n int) {
	for i := 0; i < n; i++ {
		h.LaneBegin(0)
		h.LaneEnd(0)
		if i%HarvestEvery == HarvestEvery-1 {
			h.Harvest()
		}
	}
}

// BeginSteps calls BeginStep n times.
func BeginSteps(h *gpuspans.Hub, _ backend.Stream, n int) {
	for i := 0; i < n; i++ {
		h.BeginStep()
	}
}

// Harvests times n harvests that each land spans kernel spans recorded on
// stream, on a hub at level Kernel with every step armed. Filling the ring
// and letting its events complete (settle, when not nil) are not timed: t's
// timer runs when Harvests is called and when it returns, and is stopped
// around the rest. The error says when a harvest left spans behind: the
// figure would not be of full harvests.
func Harvests(t Timer, h *gpuspans.Hub, stream backend.Stream, n, spans int, settle func()) error {
	var landed uint64
	for i := 0; i < n; i++ {
		t.StopTimer()
		for j := 0; j < spans; j++ {
			h.KernelEnd(h.KernelBegin(1, stream))
		}
		// Events complete asynchronously: let them, untimed, so the timed
		// harvest lands them all rather than finding some in flight.
		if settle != nil {
			settle()
		}
		before := h.Snapshot().Counters.Landed
		t.StartTimer()
		h.Harvest()
		t.StopTimer()
		landed += h.Snapshot().Counters.Landed - before
		t.StartTimer()
	}
	if want := uint64(n) * uint64(spans); landed != want {
		return fmt.Errorf("landed %d spans of %d: the measurement would not be of full harvests", landed, want)
	}
	return nil
}

package prom_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// A collector on a hub recording a decode lane on a simulated GPU, gathered
// as a Prometheus scrape would.
func Example() {
	clock := sim.NewClock(time.Unix(1_700_000_000, 0))
	gpu := sim.New(sim.Options{Now: clock.Now})
	stream := gpu.NewStream()
	hub, err := gpuspans.New(gpuspans.Options{Lanes: []string{"decode"}, Level: gpuspans.LevelKernel, Now: clock.Now})
	if err != nil {
		panic(err)
	}
	if err := hub.Install(0, stream, gpu.Opener()); err != nil {
		panic(err)
	}
	for step := 0; step < 4; step++ {
		hub.BeginStep() // lands the previous step's span
		hub.LaneBegin(0)
		gpu.Launch(stream, 250*time.Microsecond) // the step's GPU work
		hub.LaneEnd(0)
		clock.Advance(time.Millisecond)
	}
	hub.Harvest()

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector(hub, prom.Options{}))
	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families { // sorted by name
		switch f.GetName() {
		case "gpuspans_level_info", "gpuspans_steps_total", "gpuspans_spans_landed_total", "gpuspans_lane_duration_seconds":
		default:
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			name := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetHistogram() != nil:
				fmt.Printf("%s count %d, sum %gs\n", name, m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum())
			case m.GetCounter() != nil:
				fmt.Printf("%s %g\n", name, m.GetCounter().GetValue())
			default:
				fmt.Printf("%s %g\n", name, m.GetGauge().GetValue())
			}
		}
	}
	// Output:
	// gpuspans_lane_duration_seconds{device=0,lane=decode} count 4, sum 0.001s
	// gpuspans_level_info{level=kernel} 1
	// gpuspans_spans_landed_total{device=0} 4
	// gpuspans_steps_total{} 4
}

package gpuspanstest_test

import (
	"errors"
	"fmt"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspans/gpuspanstest"
)

// A test of code that records spans: a hub on a pool that does no GPU work,
// its log kept (a second device fails to open), and its accounting checked after the spans land.
func Example() {
	var log gpuspanstest.Log
	hub, err := gpuspans.New(gpuspans.Options{Level: gpuspans.LevelKernel, KernelSpanEvery: 1, Logf: log.Logf})
	if err != nil {
		panic(err)
	}
	if err := hub.Install(0, 1, sim.NopOpener); err != nil {
		panic(err)
	}
	noGPU := func(int) (backend.Pool, error) { return nil, errors.New("no GPU here") }
	if err := hub.Install(1, 2, noGPU); err != nil {
		panic(err)
	}
	for step := 0; step < 3; step++ {
		hub.BeginStep() // lands the previous step's spans
		hub.KernelEnd(hub.KernelBegin(0xa77e, 1))
	}
	hub.Harvest()

	// In a test: s := gpuspanstest.Snapshot(t, hub), which fails t.
	s := hub.Snapshot()
	if err := gpuspanstest.Accounting(&s); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("begun %d, landed %d, in flight %d\n", s.Counters.Begun, s.Counters.Landed, s.Counters.InFlight)
	for _, line := range log.Lines() {
		fmt.Println(line)
	}
	// Output:
	// begun 3, landed 3, in flight 0
	// gpuspans: GPU spans off on device 1: opening the event pool: no GPU here
}

// Package gpuspans is always-on GPU timing telemetry for LLM serving engines.
//
// A Hub times GPU work with pairs of events ("spans") recorded on streams
// and harvested later without ever synchronising: lane spans around each
// serve lane's work on every engine step, and kernel spans around eager
// kernel launches on one step in KernelSpanEvery. Harvests land finished
// spans into per-device aggregates (count, sum, min, max, a log-linear histogram
// from 60 ns to 128 s, 2.2% buckets) and a bounded ring of recent spans, which exporters
// read with Snapshot and RecentSpans.
//
// A serving loop drives it like this:
//
//	hub := gpuspans.Default()
//	_ = hub.Install(device, stream, cuda.Opener(device))
//	for {
//		hub.BeginStep()
//		hub.LaneBegin(decode)
//		sp := hub.KernelBegin(fn, stream)
//		launch(fn, stream)
//		hub.KernelEnd(sp)
//		hub.LaneEnd(decode)
//	}
//
// # Cost and safety
//
// Every function and method of the package is safe for concurrent use (an
// Aggregate, a plain value, is the one exception). The level (Off, Step,
// Kernel) lives in one atomic word with the armed bit. Each span entry point
// starts with an inlined check (one or two atomic loads, or a test of its
// argument: its doc says which) that returns when there is nothing to do,
// so the disabled paths cost about a nanosecond and allocate nothing. Below
// Kernel nothing touches the GPU: pools open at the first step at Kernel.
// Enabled span paths never block and never allocate: each recorder hands
// out the slots of a fixed ring in turn, with one atomic word per slot, and
// a span whose slot is still busy is dropped and counted rather than waited
// for. Harvest makes one backend call per device, never waits for the GPU,
// and skips rather than waits when another harvest or a reader holds its
// lock. No span opens on a stream being captured into a CUDA graph.
// docs/design.md says why.
//
// # Accounting
//
// Every span that reaches a recorder ends up landed, dropped (by reason),
// errored, or still in flight, and a snapshot taken while no span call is
// running shows Begun == Landed + dropped + InFlight + Errored, with
// InFlight counted from the slots themselves. Misuse (unknown lanes, ends
// without begins, spans from another hub) does nothing and is counted.
//
// # Backends
//
// The hub talks to GPUs through package backend: the CUDA binding in
// production, package sim (a simulated GPU) and package fake (a counting,
// scriptable pool) in tests.
package gpuspans

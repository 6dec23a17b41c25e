package gpuspans

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/fake"
	"github.com/gpuspans/gpuspans/go/internal/spanring"
	"github.com/gpuspans/gpuspans/go/internal/spanring/spanringtest"
)

// The Go writer alone against the ring's model (go/internal/spanring's
// spanringtest, which go/capi's TestRingDifferential holds both writers
// to), on counting fakes that also leave spans in flight and fail them at
// harvest, and with steps that harvest: besides every word of the rings,
// what only the Go hub shows is checked after every call: its snapshot's
// counters and devices, the pools closed, the log lines and the fakes'
// contract.

// outcome is the harvest outcome of slot in round: the fakes play it, the
// model predicts it.
func outcome(slot, round int) spanringtest.Outcome {
	switch (slot*7 + round*3) % 5 {
	case 0, 1:
		return spanringtest.Done
	case 2, 3:
		return spanringtest.InFlight
	}
	return spanringtest.Failed
}

// modelPublisher keeps what the hub publishes to a span path: the
// recorders' words the model is compared with.
type modelPublisher struct{ recs []spanring.Recorder }

func (p *modelPublisher) Publish(_ spanring.Hub, recs []spanring.Recorder) { p.recs = recs }

func TestRandomSequencesMatchModel(t *testing.T) {
	// The runs must reach every outcome, or the model checks little.
	names := []string{"landed", "errored", "bad ends", "sticky disables", "failed opens", "lane begins on an open lane",
		"unknown lanes", "lends", "dropped (slot busy)", "dropped (capturing)", "dropped (retired)", "pools closed",
		"spans left in flight", "spans failed at harvest"}
	total := make([]uint64, len(names))
	for seed := int64(1); seed <= 300; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			slots := []int{8, 8, 8, 1, 3}[seed%5]
			r := runModel(t, slots, spanringtest.NewOps(seed, 2), 400)
			m := r.m
			for i, n := range []uint64{m.Landed, m.Errored, m.BadEnd, m.StickyDisables, m.InstallFailures, m.LaneAlreadyOpen,
				m.UnknownLane, m.Lends, m.Dropped[0], m.Dropped[1], m.Dropped[2],
				uint64(r.closed), uint64(r.inFlightLeft), uint64(r.failed)} {
				total[i] += n
			}
		})
	}
	var b strings.Builder
	for i, name := range names {
		fmt.Fprintf(&b, " %s %d;", name, total[i])
		if total[i] == 0 {
			t.Errorf("over all seeds, no %s", name)
		}
	}
	t.Logf("over all seeds:%s", b.String())
}

// modelRun is what a run saw, for the totals.
type modelRun struct {
	m                            *spanringtest.Model
	closed, inFlightLeft, failed int // pools closed; harvests that left a span in flight, or failed one
}

// runModel plays at most maxOps operations of g on a hub of 2 lanes with a
// ring of slots, and on the model, and fails t at the first difference.
func runModel(t *testing.T, slots int, g *spanringtest.Ops, maxOps int) modelRun {
	t.Helper()
	log := NewLog()
	h, err := New(Options{Level: LevelKernel, KernelSpanEvery: 1, Slots: slots, Logf: log.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var m *spanringtest.Model
	var pending error // the op's fault: the next record, or pool open, fails with it
	take := func() error {
		err := pending
		pending = nil
		return err
	}
	round := func() int {
		if m == nil {
			return 0
		}
		return m.Round
	}
	capturing := false
	var run modelRun
	var fakes []*fake.Pool // by recorder, as installed
	install := func() {
		f := newFake(t, fake.Options{Slots: slots})
		f.SetOutcome(func(slot int) (backend.SpanState, int64) {
			switch outcome(slot, round()) {
			case spanringtest.InFlight:
				run.inFlightLeft++
				return backend.InFlight, 0
			case spanringtest.Failed:
				run.failed++
				return backend.Failed, 0
			}
			return backend.Done, 1000
		})
		f.SetRecordError(func(fake.Op, int, backend.Stream) error { return take() })
		f.SetCapturing(laneStream, capturing)
		open := func(n int) (backend.Pool, error) {
			if err := take(); err != nil {
				return nil, fmt.Errorf("scripted open: %w", err)
			}
			return f.Opener()(n)
		}
		if err := h.Install(0, laneStream, open); err != nil {
			t.Fatal(err)
		}
		fakes = append(fakes, f)
	}
	pub := &modelPublisher{}
	spanring.Attach(h, pub)
	install()
	h.BeginStep()
	steps := func() spanringtest.Steps {
		return spanringtest.Steps{Step: h.step.Load(), LeakClock: h.leakClock.Load(), ArmedSteps: h.armedSteps.Load(),
			State: atomic.LoadUint32(&h.state), Mirror: h.mirrorValue()}
	}
	if len(pub.recs) != 1 {
		t.Fatalf("the hub published %d recorders, want 1", len(pub.recs))
	}
	dev := pub.recs[0]
	var views spanringtest.Views
	views.See(pub.recs)
	ring := func() spanringtest.Ring {
		views.See(pub.recs)
		return spanringtest.Ring{Recs: views.Recs(), Dropped: dev.Dropped, Errored: dev.Errored,
			OpenLanes: h.openLanes.Load(), LaneAlreadyOpen: h.laneAlreadyOpen.Load(), Steps: steps()}
	}
	m = spanringtest.New(spanringtest.Config{Slots: slots, Lanes: 2, LaneKind: uint32(KindLane), KernelKind: uint32(KindKernel),
		Every: 1, ArmedBit: armedBit, PoolsBit: MirrorPools, LevelMask: levelMask,
		Drops:   [3]int{int(DropSlotBusy), int(DropCapturing), int(DropRetired)},
		Outcome: outcome, HarvestAtStep: true}, steps())
	run.m = m
	recs := []*spanringtest.Rec{m.Cur} // every recorder the model made, as fakes
	var kernels []KernelSpan
	var trace []string
	fail := func(format string, args ...interface{}) {
		t.Helper()
		t.Fatalf("diverged after op %d (%s): %s\nthe ops, oldest first:\n%s", len(trace)-1, trace[len(trace)-1],
			fmt.Sprintf(format, args...), strings.Join(trace, "\n"))
	}
	for len(trace) < maxOps {
		op, ok := g.Op()
		if !ok {
			break
		}
		op.C = false
		trace = append(trace, op.String())
		switch {
		case op.Kind == spanringtest.Harvest && op.Fault != spanringtest.NoFault:
			for _, f := range fakes {
				f.SetHarvestError(fmt.Errorf("scripted harvest error: %w", backend.ErrSticky))
			}
		case op.Fault == spanringtest.RecordError:
			pending = errors.New("scripted record error")
		case op.Fault == spanringtest.RecordSticky:
			pending = fmt.Errorf("scripted record error: %w", backend.ErrSticky)
		}
		var err error
		switch op.Kind {
		case spanringtest.Begin:
			h.LaneBegin(op.To)
		case spanringtest.End:
			h.LaneEnd(op.To)
		case spanringtest.Next:
			h.NextLane(op.From, op.To)
		case spanringtest.NextStep:
			h.NextStep(op.From, op.To)
		case spanringtest.Step:
			h.BeginStep()
		case spanringtest.Harvest:
			h.Harvest()
		case spanringtest.KernelBegin:
			if sp := h.KernelBegin(op.Kernel, laneStream); sp != (KernelSpan{}) {
				kernels = append(kernels, sp)
			}
		case spanringtest.KernelEnd:
			if len(kernels) == 0 {
				h.KernelEnd(KernelSpan{})
				break
			}
			k := op.To % len(kernels)
			h.KernelEnd(kernels[k])
			if op.From != 0 {
				kernels = append(kernels[:k], kernels[k+1:]...)
			}
		case spanringtest.SetLevel:
			err = h.SetLevel(Level(op.N))
		case spanringtest.SetEvery:
			err = h.SetKernelSpanEvery(op.N)
		case spanringtest.Capture:
			capturing = op.To != 0
			for _, f := range fakes {
				f.SetCapturing(laneStream, capturing)
			}
		case spanringtest.Install:
			install()
		case spanringtest.Uninstall:
			h.Uninstall(0)
		}
		pending = nil // a fault the op did not take lapses with it
		if op.Kind == spanringtest.Harvest {
			for _, f := range fakes {
				f.SetHarvestError(nil)
			}
		}
		m.Apply(op)
		if op.Kind == spanringtest.Install {
			recs = append(recs, m.Cur)
		}
		if (err != nil) != m.Refused {
			fail("returned %v; the model refuses it: %v", err, m.Refused)
		}
		if len(kernels) != len(m.Tokens) {
			fail("%d kernel spans held, the model holds %d", len(kernels), len(m.Tokens))
		}
		if d := m.Diff(ring()); d != "" {
			fail("\n%s", d)
		}
		checkModel(t, h, log, m, recs, fakes, fail)
		views.Prune(m)
	}
	for _, r := range recs {
		if r.Finished() && r.Slots != nil {
			run.closed++
		}
	}
	return run
}

// checkModel compares what only the Go hub shows with the model after an
// op: the snapshot's counters and devices, the pools closed, the log lines.
func checkModel(t *testing.T, h *Hub, log Log, m *spanringtest.Model, recs []*spanringtest.Rec, fakes []*fake.Pool, fail func(string, ...interface{})) {
	t.Helper()
	s := h.Snapshot()
	CheckBalance(t, &s)
	var inFlight uint64
	for _, r := range m.Recs {
		if !r.Finished() {
			inFlight += r.InFlight()
		}
	}
	c := s.Counters
	want := c
	want.Begun, want.Landed, want.Errored, want.InFlight = m.Begun, m.Landed, m.Errored, inFlight
	want.Dropped = [NumDropReasons]uint64{}
	want.Dropped[DropSlotBusy], want.Dropped[DropCapturing], want.Dropped[DropRetired] = m.Dropped[0], m.Dropped[1], m.Dropped[2]
	want.BadEnd, want.LaneAlreadyOpen, want.UnknownLane = m.BadEnd, m.LaneAlreadyOpen, m.UnknownLane
	want.StickyDisables, want.InstallFailures = m.StickyDisables, m.InstallFailures
	if c != want {
		fail("the hub counts %+v\nthe model %+v", c, want)
	}
	if s.Level != Level(m.Steps.State&levelMask) || s.Step != m.Steps.Step || uint64(s.KernelSpanEvery) != m.Every() {
		fail("level %v step %d every %d; the model has %v %d %d", s.Level, s.Step, s.KernelSpanEvery,
			Level(m.Steps.State&levelMask), m.Steps.Step, m.Every())
	}
	var live []*spanringtest.Rec
	for _, r := range m.Recs {
		if !r.Finished() {
			live = append(live, r)
		}
	}
	if len(s.Devices) != len(live) {
		fail("devices %+v; the model has %d recorders", s.Devices, len(live))
	}
	for i, r := range live {
		want := map[uint32]DeviceState{recPending: DevicePending, recOpen: DeviceOpen, recFailed: DeviceFailed, recDead: DeviceDead}[r.Status&recStateMask]
		if r.Status&recRetired != 0 {
			want = DeviceRetiring
		}
		if d := s.Devices[i]; d.State != want || d.InFlight != r.InFlight() {
			fail("device %d is %+v; the model has %v with %d in flight", i, d, want, r.InFlight())
		}
	}
	logged := 0
	for i, r := range recs {
		if fakes[i].Closed() != (r.Finished() && r.Slots != nil) {
			fail("recorder %d: pool closed %v; the model has finished %v opened %v", i, fakes[i].Closed(), r.Finished(), r.Slots != nil)
		}
		if r.Logged {
			logged++
		}
	}
	// The sticky error and the failed open say why once each; span errors
	// are logged once per recorder.
	if n := log.Count("until it is installed again"); n != int(m.StickyDisables) {
		fail("%d sticky log lines for %d sticky disables: %q", n, m.StickyDisables, log.Lines())
	}
	if n := log.Count("GPU spans off on device 0"); n != int(m.StickyDisables+m.InstallFailures) {
		fail("%d 'spans off' log lines for %d sticky disables and %d failed opens", n, m.StickyDisables, m.InstallFailures)
	}
	if n := log.Count("span error on device 0"); n != logged {
		fail("%d span error log lines; the model logged for %d recorders", n, logged)
	}
}

package spanfile

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
)

// SpanToProto converts a span to its wire form. EndUnixNanos is derived:
// StartNs + DurationNs, or 0 when the span has no host start. Safe from
// any goroutine.
func SpanToProto(s gpuspans.Span) *gpuspansv1.Span {
	p := &gpuspansv1.Span{
		Seq:            s.Seq,
		Kind:           kindToProto(s.Kind),
		Name:           s.Name,
		Device:         int32(s.Device),
		Stream:         uint64(s.Stream),
		Step:           s.Step,
		StartUnixNanos: s.StartNs,
		DurationNanos:  s.DurationNs,
	}
	if s.StartNs != 0 {
		p.EndUnixNanos = s.StartNs + s.DurationNs
	}
	return p
}

// SpanFromProto converts a wire span back. A kind other than lane or kernel
// is an error, rather than a guess; EndUnixNanos is ignored, since it is
// derived. Safe from any goroutine.
func SpanFromProto(p *gpuspansv1.Span) (gpuspans.Span, error) {
	k, err := kindFromProto(p.GetKind())
	if err != nil {
		return gpuspans.Span{}, fmt.Errorf("spanfile: span seq %d: %w", p.GetSeq(), err)
	}
	return gpuspans.Span{
		Seq:        p.GetSeq(),
		Kind:       k,
		Name:       p.GetName(),
		Device:     int(p.GetDevice()),
		Stream:     backend.Stream(p.GetStream()),
		Step:       p.GetStep(),
		StartNs:    p.GetStartUnixNanos(),
		DurationNs: p.GetDurationNanos(),
	}, nil
}

// SnapshotToProto converts a snapshot, stamped taken (the zero time gives
// 0). Aggregates list the lanes, then the kernels, each in s's order; a
// device's error becomes its reason text. Safe from any goroutine, given
// that nothing writes s meanwhile.
func SnapshotToProto(s *gpuspans.Snapshot, taken time.Time) *gpuspansv1.Snapshot {
	c := &s.Counters
	p := &gpuspansv1.Snapshot{
		Level:           levelToProto(s.Level),
		KernelSpanEvery: uint32(s.KernelSpanEvery),
		Step:            s.Step,
		ArmedSteps:      s.ArmedSteps,
		Counters: &gpuspansv1.Counters{
			Begun:             c.Begun,
			Landed:            c.Landed,
			DroppedSlotBusy:   c.Dropped[gpuspans.DropSlotBusy],
			InFlight:          c.InFlight,
			Errored:           c.Errored,
			CaptureSkipped:    c.Dropped[gpuspans.DropCapturing],
			UnknownLane:       c.UnknownLane,
			BadEnd:            c.BadEnd,
			InstallFailures:   c.InstallFailures,
			StickyDisables:    c.StickyDisables,
			Harvests:          c.Harvests,
			HarvestNanos:      uint64(c.HarvestTime),
			DroppedRetired:    c.Dropped[gpuspans.DropRetired],
			LaneAlreadyOpen:   c.LaneAlreadyOpen,
			HarvestsSkipped:   c.HarvestsSkipped,
			RecentOverwritten: c.RecentOverwritten,
			DroppedLeaked:     c.Dropped[gpuspans.DropLeaked],
			PoolPanics:        c.PoolPanics,
			HarvestFailures:   c.HarvestFailures,
			AbandonedPools:    c.AbandonedPools,
		},
		Devices:    make([]*gpuspansv1.DeviceStatus, len(s.Devices)),
		Aggregates: make([]*gpuspansv1.Aggregate, 0, len(s.Lanes)+len(s.Kernels)),
	}
	if !taken.IsZero() {
		p.TakenUnixNanos = taken.UnixNano()
	}
	for i, d := range s.Devices {
		pd := &gpuspansv1.DeviceStatus{
			Device:   int32(d.Device),
			State:    d.State.String(),
			Slots:    uint32(d.Slots),
			Stream:   uint64(d.Stream),
			InFlight: d.InFlight,
			Uuid:     d.Identity.UUID,
			PciBusId: d.Identity.PCIBusID,
			Name:     d.Identity.Name,

			EventOffsetNanos: int64(d.EventOffset),
		}
		if d.Err != nil {
			pd.Reason = d.Err.Error()
		}
		p.Devices[i] = pd
	}
	bounds := make([]int64, len(gpuspans.BucketBounds()))
	for i, b := range gpuspans.BucketBounds() {
		bounds[i] = int64(b)
	}
	add := func(kind gpuspansv1.SpanKind, aggs []gpuspans.Aggregate) {
		for i := range aggs {
			a := &aggs[i]
			p.Aggregates = append(p.Aggregates, &gpuspansv1.Aggregate{
				Kind:             kind,
				Name:             a.Name,
				Device:           int32(a.Device),
				Count:            a.Count,
				SumNanos:         int64(a.Sum),
				MinNanos:         int64(a.Min),
				MaxNanos:         int64(a.Max),
				BucketUpperNanos: append([]int64(nil), bounds...),
				BucketCounts:     append([]uint64(nil), a.Buckets[:]...),
			})
		}
	}
	add(gpuspansv1.SpanKind_SPAN_KIND_LANE, s.Lanes)
	add(gpuspansv1.SpanKind_SPAN_KIND_KERNEL, s.Kernels)
	return p
}

// SnapshotFromProto converts a wire snapshot back, with the time it was
// taken (the zero time for 0). A device's reason becomes an error with that
// text (errors.Is no longer matches the backend's sentinels). An unknown
// level, device state or aggregate kind, or histogram bounds other than
// gpuspans.BucketBounds, is an error: gpuspans types cannot hold them.
// Safe from any goroutine.
func SnapshotFromProto(p *gpuspansv1.Snapshot) (gpuspans.Snapshot, time.Time, error) {
	var s gpuspans.Snapshot
	var taken time.Time
	if ns := p.GetTakenUnixNanos(); ns != 0 {
		taken = time.Unix(0, ns)
	}
	l, err := levelFromProto(p.GetLevel())
	if err != nil {
		return s, taken, fmt.Errorf("spanfile: snapshot: %w", err)
	}
	s.Level = l
	s.KernelSpanEvery = int(p.GetKernelSpanEvery())
	s.Step = p.GetStep()
	s.ArmedSteps = p.GetArmedSteps()

	pc := p.GetCounters()
	c := &s.Counters
	c.Begun = pc.GetBegun()
	c.Landed = pc.GetLanded()
	c.Dropped[gpuspans.DropSlotBusy] = pc.GetDroppedSlotBusy()
	c.Dropped[gpuspans.DropCapturing] = pc.GetCaptureSkipped()
	c.Dropped[gpuspans.DropRetired] = pc.GetDroppedRetired()
	c.Errored = pc.GetErrored()
	c.InFlight = pc.GetInFlight()
	c.LaneAlreadyOpen = pc.GetLaneAlreadyOpen()
	c.UnknownLane = pc.GetUnknownLane()
	c.BadEnd = pc.GetBadEnd()
	c.InstallFailures = pc.GetInstallFailures()
	c.StickyDisables = pc.GetStickyDisables()
	c.Harvests = pc.GetHarvests()
	c.HarvestsSkipped = pc.GetHarvestsSkipped()
	c.HarvestTime = time.Duration(pc.GetHarvestNanos())
	c.RecentOverwritten = pc.GetRecentOverwritten()
	c.Dropped[gpuspans.DropLeaked] = pc.GetDroppedLeaked()
	c.PoolPanics = pc.GetPoolPanics()
	c.HarvestFailures = pc.GetHarvestFailures()
	c.AbandonedPools = pc.GetAbandonedPools()

	for _, pd := range p.GetDevices() {
		st, err := stateFromString(pd.GetState())
		if err != nil {
			return s, taken, fmt.Errorf("spanfile: snapshot: device %d: %w", pd.GetDevice(), err)
		}
		d := gpuspans.DeviceStatus{
			Device:   int(pd.GetDevice()),
			State:    st,
			Stream:   backend.Stream(pd.GetStream()),
			Slots:    int(pd.GetSlots()),
			InFlight: pd.GetInFlight(),
			Identity: backend.Identity{UUID: pd.GetUuid(), PCIBusID: pd.GetPciBusId(), Name: pd.GetName()},

			EventOffset: time.Duration(pd.GetEventOffsetNanos()),
		}
		if r := pd.GetReason(); r != "" {
			d.Err = errors.New(r)
		}
		s.Devices = append(s.Devices, d)
	}

	bounds := gpuspans.BucketBounds()
	for _, pa := range p.GetAggregates() {
		a := gpuspans.Aggregate{
			Device: int(pa.GetDevice()),
			Name:   pa.GetName(),
			Count:  pa.GetCount(),
			Sum:    time.Duration(pa.GetSumNanos()),
			Min:    time.Duration(pa.GetMinNanos()),
			Max:    time.Duration(pa.GetMaxNanos()),
		}
		if err := checkBuckets(pa, bounds); err != nil {
			return s, taken, fmt.Errorf("spanfile: snapshot: aggregate %q on device %d: %w", a.Name, a.Device, err)
		}
		copy(a.Buckets[:], pa.GetBucketCounts())
		switch pa.GetKind() {
		case gpuspansv1.SpanKind_SPAN_KIND_LANE:
			s.Lanes = append(s.Lanes, a)
		case gpuspansv1.SpanKind_SPAN_KIND_KERNEL:
			s.Kernels = append(s.Kernels, a)
		default:
			return s, taken, fmt.Errorf("spanfile: snapshot: aggregate %q on device %d: unknown kind %v", a.Name, a.Device, pa.GetKind())
		}
	}
	return s, taken, nil
}

// checkBuckets accepts an aggregate's histogram only if it has exactly the
// hub's bounds, since gpuspans.Aggregate cannot hold others.
func checkBuckets(pa *gpuspansv1.Aggregate, bounds []time.Duration) error {
	ub, counts := pa.GetBucketUpperNanos(), pa.GetBucketCounts()
	if len(ub) != len(bounds) || len(counts) != gpuspans.NumBuckets {
		return fmt.Errorf("histogram of %d bounds and %d counts, want %d and %d",
			len(ub), len(counts), len(bounds), gpuspans.NumBuckets)
	}
	for i, b := range bounds {
		if ub[i] != int64(b) {
			return fmt.Errorf("histogram bound %d is %dns, want %dns", i, ub[i], int64(b))
		}
	}
	return nil
}

func kindToProto(k gpuspans.SpanKind) gpuspansv1.SpanKind {
	switch k {
	case gpuspans.KindLane:
		return gpuspansv1.SpanKind_SPAN_KIND_LANE
	case gpuspans.KindKernel:
		return gpuspansv1.SpanKind_SPAN_KIND_KERNEL
	}
	return gpuspansv1.SpanKind_SPAN_KIND_UNSPECIFIED
}

func kindFromProto(k gpuspansv1.SpanKind) (gpuspans.SpanKind, error) {
	switch k {
	case gpuspansv1.SpanKind_SPAN_KIND_LANE:
		return gpuspans.KindLane, nil
	case gpuspansv1.SpanKind_SPAN_KIND_KERNEL:
		return gpuspans.KindKernel, nil
	}
	return 0, fmt.Errorf("unknown span kind %v", k)
}

func levelToProto(l gpuspans.Level) gpuspansv1.Level {
	switch l {
	case gpuspans.LevelOff:
		return gpuspansv1.Level_LEVEL_OFF
	case gpuspans.LevelStep:
		return gpuspansv1.Level_LEVEL_STEP
	case gpuspans.LevelKernel:
		return gpuspansv1.Level_LEVEL_KERNEL
	}
	return gpuspansv1.Level_LEVEL_UNSPECIFIED
}

func levelFromProto(l gpuspansv1.Level) (gpuspans.Level, error) {
	switch l {
	case gpuspansv1.Level_LEVEL_OFF:
		return gpuspans.LevelOff, nil
	case gpuspansv1.Level_LEVEL_STEP:
		return gpuspans.LevelStep, nil
	case gpuspansv1.Level_LEVEL_KERNEL:
		return gpuspans.LevelKernel, nil
	}
	return 0, fmt.Errorf("unknown level %v", l)
}

// deviceStates are the states a DeviceStatus.state string may name.
var deviceStates = [...]gpuspans.DeviceState{
	gpuspans.DevicePending, gpuspans.DeviceOpen, gpuspans.DeviceFailed,
	gpuspans.DeviceDead, gpuspans.DeviceRetiring,
}

func stateFromString(s string) (gpuspans.DeviceState, error) {
	for _, st := range deviceStates {
		if st.String() == s {
			return st, nil
		}
	}
	return 0, fmt.Errorf("unknown device state %q", s)
}

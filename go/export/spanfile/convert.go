package spanfile

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/export/sparsehist"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/profile"
	gpuspansv1 "github.com/gpuspans/gpuspans/proto/gpuspans/v1"
)

// SpanToProto converts a span to its wire form. EndUnixNs is derived:
// StartNs + DurationNs, or 0 when the span has no host start.
func SpanToProto(s gpuspans.Span) *gpuspansv1.Span {
	p := &gpuspansv1.Span{
		Seq:         s.Seq,
		Kind:        kindToProto(s.Kind),
		Name:        s.Name,
		Device:      int32(s.Device),
		Stream:      uint64(s.Stream),
		Step:        s.Step,
		StartUnixNs: s.StartNs,
		DurationNs:  s.DurationNs,
		Graph:       s.Graph,
		GpuTimed:    s.GPUTimed,
		BusyNs:      s.BusyNs,
		IdleNs:      s.IdleNs,
		ServedNs:    s.ServedNs,
	}
	if s.StartNs != 0 {
		p.EndUnixNs = s.StartNs + s.DurationNs
	}
	if s.ServedNs != 0 {
		p.IdleCauses = causesToProto(s.Causes)
	}
	return p
}

// causesToProto converts idle by cause.
func causesToProto(c gpuspans.IdleCauses) *gpuspansv1.IdleCauses {
	return &gpuspansv1.IdleCauses{HostNs: int64(c.Host), LaunchNs: int64(c.Launch), CopyNs: int64(c.Copy), WaitNs: int64(c.Wait), OtherNs: int64(c.Other)}
}

// causesFromProto converts idle by cause back; nil reads as none.
func causesFromProto(p *gpuspansv1.IdleCauses) gpuspans.IdleCauses {
	return gpuspans.IdleCauses{Host: time.Duration(p.GetHostNs()), Launch: time.Duration(p.GetLaunchNs()), Copy: time.Duration(p.GetCopyNs()),
		Wait: time.Duration(p.GetWaitNs()), Other: time.Duration(p.GetOtherNs())}
}

// SpanFromProto converts a wire span back. A kind other than lane or kernel
// is an error, rather than a guess; EndUnixNs is ignored, since it is
// derived.
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
		StartNs:    p.GetStartUnixNs(),
		DurationNs: p.GetDurationNs(),
		Graph:      p.GetGraph(),
		GPUTimed:   p.GetGpuTimed(),
		BusyNs:     p.GetBusyNs(),
		IdleNs:     p.GetIdleNs(),
		ServedNs:   p.GetServedNs(),
		Causes:     causesFromProto(p.GetIdleCauses()),
	}, nil
}

// SnapshotToProto converts a snapshot, stamped taken (the zero time gives
// 0). Lanes and kernels keep s's order; a device's error becomes its reason
// text. Nothing may write s meanwhile.
func SnapshotToProto(s *gpuspans.Snapshot, taken time.Time) *gpuspansv1.Snapshot {
	c := &s.Counters
	p := &gpuspansv1.Snapshot{
		Level:           levelToProto(s.Level),
		KernelSpanEvery: uint32(s.KernelSpanEvery),
		Step:            s.Step,
		ArmedSteps:      s.ArmedSteps,
		Counters: &gpuspansv1.Counters{
			Begun:                  c.Begun,
			Landed:                 c.Landed,
			DroppedSlotBusy:        c.Dropped[gpuspans.DropSlotBusy],
			InFlight:               c.InFlight,
			Errored:                c.Errored,
			DroppedCapturing:       c.Dropped[gpuspans.DropCapturing],
			UnknownLaneCalls:       c.UnknownLane,
			BadEndCalls:            c.BadEnd,
			InstallFailures:        c.InstallFailures,
			StickyDisables:         c.StickyDisables,
			Harvests:               c.Harvests,
			HarvestNs:              uint64(c.HarvestTime),
			DroppedRetired:         c.Dropped[gpuspans.DropRetired],
			LaneAlreadyOpenCalls:   c.LaneAlreadyOpen,
			HarvestsSkipped:        c.HarvestsSkipped,
			RecentSpansOverwritten: c.RecentOverwritten,
			DroppedLeaked:          c.Dropped[gpuspans.DropLeaked],
			PoolPanics:             c.PoolPanics,
			HarvestFailures:        c.HarvestFailures,
			PoolsAbandoned:         c.AbandonedPools,
			DroppedTracerLost:      c.Dropped[gpuspans.DropTracerLost],
		},
		KernelTiming: kernelTimingToProto(&s.KernelTiming),
		Devices:      make([]*gpuspansv1.DeviceStatus, len(s.Devices)),
		Lanes:        aggregatesToProto(s.Lanes),
		Kernels:      aggregatesToProto(s.Kernels),
		GpuTime:      gpuTimeToProto(&s.GPUTime),
		Profile:      profileToProto(&s.Profile),
		Requests:     attributionToProto(&s.Requests),
	}
	if !taken.IsZero() {
		p.TakenUnixNs = taken.UnixNano()
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
			Driver:   d.Identity.Driver,

			EventOffsetNs: int64(d.EventOffset),
		}
		if d.Err != nil {
			pd.Reason = d.Err.Error()
		}
		p.Devices[i] = pd
	}
	for i := range s.PerDevice {
		d := &s.PerDevice[i]
		p.DeviceCounters = append(p.DeviceCounters, &gpuspansv1.DeviceCounters{
			Device: int32(d.Device), Begun: d.Begun, Landed: d.Landed, Errored: d.Errored, InFlight: d.InFlight,
			DroppedSlotBusy: d.Dropped[gpuspans.DropSlotBusy], DroppedCapturing: d.Dropped[gpuspans.DropCapturing],
			DroppedRetired: d.Dropped[gpuspans.DropRetired], DroppedLeaked: d.Dropped[gpuspans.DropLeaked],
			DroppedTracerLost: d.Dropped[gpuspans.DropTracerLost],
		})
	}
	return p
}

func kernelTimingToProto(k *gpuspans.KernelTimingStatus) *gpuspansv1.KernelTiming {
	p := &gpuspansv1.KernelTiming{Mode: k.Mode.String(), Tracing: k.Tracing, Fallbacks: k.Fallbacks,
		Records: k.Records, Labels: uint32(k.Labels)}
	if k.Err != nil {
		p.Reason = k.Err.Error()
	}
	return p
}

// kernelTimingFromProto reads p into k; files written before kernel timing
// existed have none, which reads as events.
func kernelTimingFromProto(p *gpuspansv1.KernelTiming, k *gpuspans.KernelTimingStatus) error {
	if p == nil {
		return nil
	}
	mode, err := gpuspans.ParseKernelTiming(p.GetMode())
	if err != nil {
		return fmt.Errorf("spanfile: snapshot: %w", err)
	}
	*k = gpuspans.KernelTimingStatus{Mode: mode, Tracing: p.GetTracing(), Fallbacks: p.GetFallbacks(),
		Records: p.GetRecords(), Labels: int(p.GetLabels())}
	if r := p.GetReason(); r != "" {
		k.Err = errors.New(r)
	}
	return nil
}

func aggregatesToProto(aggs []gpuspans.Aggregate) []*gpuspansv1.Aggregate {
	out := make([]*gpuspansv1.Aggregate, len(aggs))
	for i := range aggs {
		a := &aggs[i]
		bounds, counts := sparsehist.Of(a)
		out[i] = &gpuspansv1.Aggregate{
			Name:          a.Name,
			Device:        int32(a.Device),
			Count:         a.Count,
			SumNs:         int64(a.Sum),
			MinNs:         int64(a.Min),
			MaxNs:         int64(a.Max),
			BucketUpperNs: bounds,
			BucketCounts:  counts,
		}
	}
	return out
}

// SnapshotFromProto converts a wire snapshot back, with the time it was
// taken (the zero time for 0). A device's reason becomes an error with that
// text (errors.Is no longer matches the backend's sentinels). An unknown
// level or device state, or a histogram bound that is not one of the hub's
// buckets', is an error: gpuspans types cannot hold them.
func SnapshotFromProto(p *gpuspansv1.Snapshot) (gpuspans.Snapshot, time.Time, error) {
	var s gpuspans.Snapshot
	var taken time.Time
	if ns := p.GetTakenUnixNs(); ns != 0 {
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
	c.Dropped[gpuspans.DropCapturing] = pc.GetDroppedCapturing()
	c.Dropped[gpuspans.DropRetired] = pc.GetDroppedRetired()
	c.Errored = pc.GetErrored()
	c.InFlight = pc.GetInFlight()
	c.LaneAlreadyOpen = pc.GetLaneAlreadyOpenCalls()
	c.UnknownLane = pc.GetUnknownLaneCalls()
	c.BadEnd = pc.GetBadEndCalls()
	c.InstallFailures = pc.GetInstallFailures()
	c.StickyDisables = pc.GetStickyDisables()
	c.Harvests = pc.GetHarvests()
	c.HarvestsSkipped = pc.GetHarvestsSkipped()
	c.HarvestTime = time.Duration(pc.GetHarvestNs())
	c.RecentOverwritten = pc.GetRecentSpansOverwritten()
	c.Dropped[gpuspans.DropLeaked] = pc.GetDroppedLeaked()
	c.PoolPanics = pc.GetPoolPanics()
	c.HarvestFailures = pc.GetHarvestFailures()
	c.AbandonedPools = pc.GetPoolsAbandoned()
	c.Dropped[gpuspans.DropTracerLost] = pc.GetDroppedTracerLost()
	if err := kernelTimingFromProto(p.GetKernelTiming(), &s.KernelTiming); err != nil {
		return s, taken, err
	}
	s.Profile = profileFromProto(p.GetProfile())

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
			Identity: backend.Identity{UUID: pd.GetUuid(), PCIBusID: pd.GetPciBusId(), Name: pd.GetName(), Driver: pd.GetDriver()},

			EventOffset: time.Duration(pd.GetEventOffsetNs()),
		}
		if r := pd.GetReason(); r != "" {
			d.Err = errors.New(r)
		}
		s.Devices = append(s.Devices, d)
	}
	for _, pd := range p.GetDeviceCounters() {
		d := gpuspans.DeviceCounters{
			Device: int(pd.GetDevice()), Begun: pd.GetBegun(), Landed: pd.GetLanded(), Errored: pd.GetErrored(), InFlight: pd.GetInFlight(),
		}
		d.Dropped[gpuspans.DropSlotBusy] = pd.GetDroppedSlotBusy()
		d.Dropped[gpuspans.DropCapturing] = pd.GetDroppedCapturing()
		d.Dropped[gpuspans.DropRetired] = pd.GetDroppedRetired()
		d.Dropped[gpuspans.DropLeaked] = pd.GetDroppedLeaked()
		d.Dropped[gpuspans.DropTracerLost] = pd.GetDroppedTracerLost()
		s.PerDevice = append(s.PerDevice, d)
	}

	if s.Lanes, err = aggregatesFromProto(p.GetLanes()); err != nil {
		return s, taken, err
	}
	if s.Kernels, err = aggregatesFromProto(p.GetKernels()); err != nil {
		return s, taken, err
	}
	return s, taken, nil
}

func aggregatesFromProto(pas []*gpuspansv1.Aggregate) ([]gpuspans.Aggregate, error) {
	var out []gpuspans.Aggregate
	for _, pa := range pas {
		var a gpuspans.Aggregate
		if err := AggregateFromProto(pa, &a); err != nil {
			return out, err
		}
		out = append(out, a)
	}
	return out, nil
}

// AggregateFromProto overwrites *a with the aggregate of a snapshot record,
// as SnapshotFromProto reads each. It lets a reader that needs one
// aggregate at a time (a summary of a file with many) reuse one
// Aggregate, about 8 KiB, instead of holding one per record.
func AggregateFromProto(pa *gpuspansv1.Aggregate, a *gpuspans.Aggregate) error {
	*a = gpuspans.Aggregate{
		Device: int(pa.GetDevice()),
		Name:   pa.GetName(),
		Count:  pa.GetCount(),
		Sum:    time.Duration(pa.GetSumNs()),
		Min:    time.Duration(pa.GetMinNs()),
		Max:    time.Duration(pa.GetMaxNs()),
	}
	if err := fillBuckets(a, pa); err != nil {
		return fmt.Errorf("spanfile: snapshot: aggregate %q on device %d: %w", a.Name, a.Device, err)
	}
	return nil
}

// fillBuckets sets a's buckets from the sparse lists of pa, accepting only
// bounds of the hub's own buckets, in increasing order.
func fillBuckets(a *gpuspans.Aggregate, pa *gpuspansv1.Aggregate) error {
	ub, counts := pa.GetBucketUpperNs(), pa.GetBucketCounts()
	if len(ub) != len(counts) {
		return fmt.Errorf("histogram of %d bounds and %d counts, want as many of each", len(ub), len(counts))
	}
	prev := -2
	for j, b := range ub {
		i := -1 // the zero bucket
		if b != sparsehist.ZeroNs {
			i = gpuspans.BucketIndex(time.Duration(b))
			if i < 0 || sparsehist.UpperNs(i) != b {
				return fmt.Errorf("histogram bound %d is %dns, not the upper bound of a bucket", j, b)
			}
		}
		if i <= prev {
			return fmt.Errorf("histogram bound %d is %dns, not above the one before", j, b)
		}
		prev = i
		if i < 0 {
			a.ZeroCount = counts[j]
		} else {
			a.Buckets[i] = counts[j]
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

// gpuTimeToProto converts what kernel windows measured; nil before the
// first window was analysed.
func gpuTimeToProto(g *gpuspans.GPUTime) *gpuspansv1.GpuTime {
	if g.Windows == 0 && g.Skipped == 0 {
		return nil
	}
	p := &gpuspansv1.GpuTime{Windows: g.Windows, Skipped: g.Skipped, Late: g.Late, Unplaced: g.Unplaced,
		AnalysisNs: uint64(g.AnalysisTime), Gaps: aggregatesToProto(g.Gaps)}
	for _, l := range g.Lanes {
		pl := &gpuspansv1.LaneGpuTime{Device: int32(l.Device), Lane: l.Lane, Spans: l.Spans, TimeNs: int64(l.Time),
			BusyNs: int64(l.Busy), IdleNs: int64(l.Idle), GapsNs: int64(l.Gaps), RecentTimeNs: int64(l.RecentTime), RecentBusyNs: int64(l.RecentBusy),
			ServedBusyNs: int64(l.ServedBusy), ServedNs: int64(l.Served), WindowCostNs: int64(l.WindowCost), Causes: causesToProto(l.Causes),
			RecentServedNs: int64(l.RecentServed), RecentWindowCostNs: int64(l.RecentWindowCost), RecentCauses: causesToProto(l.RecentCauses),
			Unsettled: l.Unsettled, ServedSpans: l.ServedSpans, RecentSpans: l.RecentSpans}
		for _, k := range l.Kernels {
			pl.Kernels = append(pl.Kernels, &gpuspansv1.KernelShare{Kernel: k.Kernel, TimeNs: int64(k.Time), Share: k.Share})
		}
		p.Lanes = append(p.Lanes, pl)
	}
	for _, s := range g.Steps {
		p.Steps = append(p.Steps, &gpuspansv1.StepGpuTime{Device: int32(s.Device), Step: s.Step, StartUnixNs: s.StartNs,
			ExtentNs: int64(s.Extent), BusyNs: int64(s.Busy), Kernels: uint32(s.Kernels)})
	}
	for _, x := range g.LargestGaps {
		p.LargestGaps = append(p.LargestGaps, &gpuspansv1.KernelGap{Device: int32(x.Device), Lane: x.Lane, Step: x.Step,
			StartUnixNs: x.StartNs, DurationNs: int64(x.Duration), Before: x.Before, After: x.After})
	}
	for _, m := range g.Moved {
		p.Moved = append(p.Moved, &gpuspansv1.KernelMove{Device: int32(m.Device), Lane: m.Lane, Kernel: m.Kernel,
			RecentNs: int64(m.Recent), BaselineNs: int64(m.Baseline), Launch: uint32(m.Launch)})
	}
	return p
}

// profileToProto is nil while no profile was ever kept.
func profileToProto(st *gpuspans.ProfileStatus) *gpuspansv1.Profile {
	if st.Path == "" {
		return nil
	}
	p := &gpuspansv1.Profile{Path: st.Path, Build: st.Build, Running: st.Running, Windows: st.Windows,
		WriteError: st.WriteErr, Before: st.Before, Ignored: st.Ignored}
	p.WrittenUnixNs = unixNs(st.Written)
	p.BeforeWrittenUnixNs = unixNs(st.BeforeWritten)
	if d := st.Since; d != nil {
		p.NotCompared = d.Skipped
		for i := range d.Lanes {
			l := &d.Lanes[i]
			pl := &gpuspansv1.LaneSinceBuild{DeviceModel: l.Model, Lane: l.Lane, DeviceModelAfter: l.Model2, Driver: l.Driver, DriverAfter: l.Driver2,
				WindowsBefore: l.Windows[0], WindowsAfter: l.Windows[1], TimeBeforeNs: l.Time[0], TimeAfterNs: l.Time[1],
				BusyBeforeNs: l.Busy[0], BusyAfterNs: l.Busy[1], TimeMoved: int32(l.TimeMoved), BusyMoved: int32(l.BusyMoved), More: uint32(l.More)}
			for _, k := range l.Kernels {
				pl.Kernels = append(pl.Kernels, &gpuspansv1.KernelChange{Name: k.Name, Launch: uint32(k.Launch), Change: string(k.Change), BeforeNs: k.Before, AfterNs: k.After})
			}
			p.Since = append(p.Since, pl)
		}
	}
	return p
}

// profileFromProto is profileToProto's inverse.
func profileFromProto(p *gpuspansv1.Profile) gpuspans.ProfileStatus {
	if p == nil {
		return gpuspans.ProfileStatus{}
	}
	st := gpuspans.ProfileStatus{Path: p.GetPath(), Build: p.GetBuild(), Running: p.GetRunning(), Windows: p.GetWindows(),
		WriteErr: p.GetWriteError(), Before: p.GetBefore(), Ignored: p.GetIgnored(),
		Written: fromUnixNs(p.GetWrittenUnixNs()), BeforeWritten: fromUnixNs(p.GetBeforeWrittenUnixNs())}
	if len(p.GetSince()) == 0 { // a comparison has a lane at least
		return st
	}
	d := &profile.Diff{Before: st.Before, After: st.Build, Skipped: p.GetNotCompared()}
	for _, pl := range p.GetSince() {
		l := profile.LaneDiff{Model: pl.GetDeviceModel(), Lane: pl.GetLane(), Model2: pl.GetDeviceModelAfter(), Driver: pl.GetDriver(), Driver2: pl.GetDriverAfter(),
			Windows: [2]uint64{pl.GetWindowsBefore(), pl.GetWindowsAfter()}, Time: [2]float64{pl.GetTimeBeforeNs(), pl.GetTimeAfterNs()},
			Busy: [2]float64{pl.GetBusyBeforeNs(), pl.GetBusyAfterNs()}, TimeMoved: int(pl.GetTimeMoved()), BusyMoved: int(pl.GetBusyMoved()), More: int(pl.GetMore())}
		for _, k := range pl.GetKernels() {
			l.Kernels = append(l.Kernels, profile.KernelChange{Name: k.GetName(), Launch: int(min(k.GetLaunch(), profile.MaxLaunches)), Change: profile.Change(k.GetChange()), Before: k.GetBeforeNs(), After: k.GetAfterNs()})
		}
		d.Lanes = append(d.Lanes, l)
	}
	st.Since = d
	return st
}

// unixNs is t in Unix ns; 0 for the zero time.
func unixNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNs is unixNs' inverse.
func fromUnixNs(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// RequestToProto converts a finished request's record to its wire form.
func RequestToProto(r *gpuspans.RequestRecord) *gpuspansv1.RequestRecord {
	p := &gpuspansv1.RequestRecord{
		Seq: r.Seq, Id: r.ID, Model: r.Model, Adapter: r.Adapter, Tenant: r.Tenant,
		Steps: r.Steps, FirstStep: r.FirstStep, LastStep: r.LastStep,
		NewTokens: r.NewTokens, DecodedTokens: r.DecodedTokens,
		GpuNs: int64(r.GPUTime), InputNs: int64(r.Input), OutputNs: int64(r.Output),
		BusyNs: int64(r.Busy), BusyTimeNs: int64(r.BusyTime),
		Unmeasured: r.Unmeasured, Fallback: r.Fallback, Abandoned: r.Abandoned,
		StartUnixNs: r.StartNs, EndUnixNs: r.EndNs,
	}
	if r.TraceID != ([16]byte{}) {
		p.TraceId = append([]byte(nil), r.TraceID[:]...)
		p.SpanId = append([]byte(nil), r.SpanID[:]...)
	}
	for _, l := range r.Lanes {
		p.Lanes = append(p.Lanes, &gpuspansv1.RequestLaneTime{Lane: l.Lane, Steps: l.Steps,
			GpuNs: int64(l.GPUTime), BusyNs: int64(l.Busy), BusyTimeNs: int64(l.BusyTime)})
	}
	return p
}

// RequestFromProto converts a wire record back. A trace or span id of
// another length than 16 and 8 bytes is an error.
func RequestFromProto(p *gpuspansv1.RequestRecord) (gpuspans.RequestRecord, error) {
	r := gpuspans.RequestRecord{
		Seq: p.GetSeq(), ID: p.GetId(), Model: p.GetModel(), Adapter: p.GetAdapter(), Tenant: p.GetTenant(),
		Steps: p.GetSteps(), FirstStep: p.GetFirstStep(), LastStep: p.GetLastStep(),
		NewTokens: p.GetNewTokens(), DecodedTokens: p.GetDecodedTokens(),
		GPUTime: time.Duration(p.GetGpuNs()), Input: time.Duration(p.GetInputNs()), Output: time.Duration(p.GetOutputNs()),
		Busy: time.Duration(p.GetBusyNs()), BusyTime: time.Duration(p.GetBusyTimeNs()),
		Unmeasured: p.GetUnmeasured(), Fallback: p.GetFallback(), Abandoned: p.GetAbandoned(),
		StartNs: p.GetStartUnixNs(), EndNs: p.GetEndUnixNs(),
	}
	if t, s := p.GetTraceId(), p.GetSpanId(); len(t) > 0 || len(s) > 0 {
		if len(t) != 16 || len(s) != 8 {
			return r, fmt.Errorf("spanfile: request %d: trace id of %d bytes and span id of %d, want 16 and 8", r.ID, len(t), len(s))
		}
		copy(r.TraceID[:], t)
		copy(r.SpanID[:], s)
	}
	for _, l := range p.GetLanes() {
		r.Lanes = append(r.Lanes, gpuspans.RequestLaneTime{Lane: l.GetLane(), Steps: l.GetSteps(),
			GPUTime: time.Duration(l.GetGpuNs()), Busy: time.Duration(l.GetBusyNs()), BusyTime: time.Duration(l.GetBusyTimeNs())})
	}
	return r, nil
}

// attributionToProto converts whose GPU time; nil while no request was
// ever said.
func attributionToProto(a *gpuspans.RequestAttribution) *gpuspansv1.RequestAttribution {
	if a.Counters == (gpuspans.RequestCounters{}) && len(a.Lanes) == 0 && a.InFlight == 0 {
		return nil
	}
	c := &a.Counters
	p := &gpuspansv1.RequestAttribution{InFlight: uint32(a.InFlight), Finished: a.Finished,
		Counters: &gpuspansv1.RequestCounters{Batches: c.Batches, Served: c.Served, Refused: c.Refused, Backlog: c.Backlog,
			Expired: c.Expired, Overrun: c.Overrun, Abandoned: c.Abandoned, RecordsOverwritten: c.RecordsOverwritten}}
	for i := range a.Lanes {
		l := &a.Lanes[i]
		p.Lanes = append(p.Lanes, &gpuspansv1.LaneAttribution{Device: int32(l.Device), Lane: l.Lane,
			Model: &gpuspansv1.CostModel{Status: l.Model.Status, FixedNs: int64(l.Model.Fixed), PerTokenNs: l.Model.PerToken,
				PerContextNs: l.Model.PerContext, PerPairNs: l.Model.PerPair, Residual: l.Model.Residual, Steps: l.Model.Steps},
			Spans: l.Spans, ModelSpans: l.ModelSpans, Unmeasured: l.Unmeasured,
			TimeNs: int64(l.Time), BusyNs: int64(l.Busy), BusyTimeNs: int64(l.BusyTime), WindowCostNs: int64(l.WindowCost),
			Flops: l.FLOPs, Bytes: l.Bytes, WorkTimeNs: int64(l.WorkTime), WorkBusyNs: int64(l.WorkBusy), WorkBusyTimeNs: int64(l.WorkBusyTime),
			PeakFlops: l.PeakFlops, PeakBandwidth: l.PeakBandwidth, Unattributed: l.Unattributed, UnattributedNs: int64(l.UnattributedTime)})
	}
	for i := range a.Classes {
		cl := &a.Classes[i]
		pc := &gpuspansv1.ClassAttribution{Model: cl.Model, Adapter: cl.Adapter, Tenant: cl.Tenant, Other: cl.Other,
			NewTokens: cl.NewTokens, DecodedTokens: cl.DecodedTokens, Finished: cl.Finished, Abandoned: cl.Abandoned, Flops: cl.FLOPs,
			PerRequest: aggregatesToProto([]gpuspans.Aggregate{cl.PerRequest})[0]}
		for _, l := range cl.Lanes {
			pc.Lanes = append(pc.Lanes, &gpuspansv1.ClassLaneTime{Lane: l.Lane, GpuNs: int64(l.GPUTime), InputNs: int64(l.Input),
				OutputNs: int64(l.Output), BusyNs: int64(l.Busy), BusyTimeNs: int64(l.BusyTime)})
		}
		p.Classes = append(p.Classes, pc)
	}
	for i := range a.Heaviest {
		p.Heaviest = append(p.Heaviest, RequestToProto(&a.Heaviest[i]))
	}
	return p
}

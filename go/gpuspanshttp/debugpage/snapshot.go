package debugpage

import (
	"time"

	"github.com/gpuspans/gpuspans/go/export/sparsehist"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// snapshotJSON is the body of SnapshotPath: a hub snapshot in the schema of
// proto/gpuspans/v1 Snapshot, every shared field named as protojson names
// it with UseProtoNames (a test holds them to it), plus a few fields for
// dashboards, marked page-only. Numbers are JSON numbers (protojson writes
// 64-bit ones as strings), and enums their lowercase short name ("kernel"
// for LEVEL_KERNEL). New fields may be added.
type snapshotJSON struct {
	TakenUnixNs     int64            `json:"taken_unix_ns"`
	Backend         string           `json:"backend,omitempty"` // page-only
	Level           string           `json:"level"`
	KernelSpanEvery int              `json:"kernel_span_every"`
	Step            uint64           `json:"step"`
	ArmedSteps      uint64           `json:"armed_steps"`
	ArmedRatio      float64          `json:"armed_ratio"` // page-only: armed_steps / step, 0 before the first step
	Counters        countersJSON     `json:"counters"`
	Devices         []deviceJSON     `json:"devices"`
	Schema          int              `json:"schema"`            // page-only: the buckets' Prometheus native-histogram schema, 2^schema buckets to a doubling
	ZeroThresholdNs float64          `json:"zero_threshold_ns"` // page-only: the zero bucket's upper bound
	Lanes           []aggregateJSON  `json:"lanes"`
	Kernels         []aggregateJSON  `json:"kernels"`
	KernelTiming    kernelTimingJSON `json:"kernel_timing"`
	Options         optionsJSON      `json:"options"` // page-only: gpuspans.Options as the hub runs with them
	// GPUTime is absent before the first kernel window was analysed.
	GPUTime *gpuTimeJSON `json:"gpu_time,omitempty"`
	// Profile is absent while no profile was ever kept.
	Profile *profileJSON `json:"profile,omitempty"`
	// Requests is absent while no request was ever said.
	Requests *attributionJSON `json:"requests,omitempty"`
	// RecentWindows are the hub's recent windows, oldest first, the open
	// one last (page-only; only from MarshalSnapshotWindows).
	RecentWindows []windowJSON `json:"recent_windows,omitempty"`
}

type countersJSON struct {
	outcomesJSON                  // begun .. errored, first, as the schema orders them
	InFlight               uint64 `json:"in_flight"`
	LaneAlreadyOpenCalls   uint64 `json:"lane_already_open_calls"`
	UnknownLaneCalls       uint64 `json:"unknown_lane_calls"`
	BadEndCalls            uint64 `json:"bad_end_calls"`
	InstallFailures        uint64 `json:"install_failures"`
	StickyDisables         uint64 `json:"sticky_disables"`
	PoolPanics             uint64 `json:"pool_panics"`
	HarvestFailures        uint64 `json:"harvest_failures"`
	PoolsAbandoned         uint64 `json:"pools_abandoned"`
	Harvests               uint64 `json:"harvests"`
	HarvestsSkipped        uint64 `json:"harvests_skipped"`
	HarvestNs              uint64 `json:"harvest_ns"`
	RecentSpansOverwritten uint64 `json:"recent_spans_overwritten"`
}

type deviceJSON struct {
	Device   int    `json:"device"`
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	Stream   uint64 `json:"stream"`
	Slots    int    `json:"slots"`
	InFlight uint64 `json:"in_flight"`
	UUID     string `json:"uuid,omitempty"`
	PCIBusID string `json:"pci_bus_id,omitempty"`
	Name     string `json:"name,omitempty"`
	Driver   string `json:"driver,omitempty"` // the driver's CUDA version, "13.0"
	// EventOffsetNs is subtracted from kernel spans; -1 until measured.
	EventOffsetNs int64 `json:"event_offset_ns"`
}

type aggregateJSON struct {
	Device int    `json:"device"`
	Name   string `json:"name"`
	Count  uint64 `json:"count"`
	SumNs  int64  `json:"sum_ns"`
	MinNs  int64  `json:"min_ns"`
	MaxNs  int64  `json:"max_ns"`
	P50Ns  int64  `json:"p50_ns"` // page-only, estimated within 1.1%, as Aggregate.Quantile
	P90Ns  int64  `json:"p90_ns"` // page-only
	P99Ns  int64  `json:"p99_ns"` // page-only
	// The non-empty buckets, in order (not cumulative): bucket_counts[i]
	// spans in the bucket whose upper bound, in whole nanoseconds rounded
	// down, is bucket_upper_ns[i]; 59 is the zero bucket's.
	BucketUpperNs []int64  `json:"bucket_upper_ns"`
	BucketCounts  []uint64 `json:"bucket_counts"`
}

func toJSON(s *gpuspans.Snapshot, backend string, now time.Time) snapshotJSON {
	c := &s.Counters
	j := snapshotJSON{
		Backend:         backend,
		Level:           s.Level.String(),
		KernelSpanEvery: s.KernelSpanEvery,
		Step:            s.Step,
		ArmedSteps:      s.ArmedSteps,
		Counters: countersJSON{
			outcomesJSON:         outcomes(c.Begun, c.Landed, c.Errored, &c.Dropped),
			InFlight:             c.InFlight,
			LaneAlreadyOpenCalls: c.LaneAlreadyOpen, UnknownLaneCalls: c.UnknownLane, BadEndCalls: c.BadEnd,
			InstallFailures: c.InstallFailures, StickyDisables: c.StickyDisables,
			PoolPanics: c.PoolPanics, HarvestFailures: c.HarvestFailures, PoolsAbandoned: c.AbandonedPools,
			Harvests: c.Harvests, HarvestsSkipped: c.HarvestsSkipped, HarvestNs: uint64(c.HarvestTime),
			RecentSpansOverwritten: c.RecentOverwritten,
		},
		Devices: []deviceJSON{},
		Lanes:   aggregates(s.Lanes),
		Kernels: aggregates(s.Kernels),
		KernelTiming: kernelTimingJSON{Mode: s.KernelTiming.Mode.String(), Tracing: s.KernelTiming.Tracing,
			Fallbacks: s.KernelTiming.Fallbacks, Records: s.KernelTiming.Records, Labels: s.KernelTiming.Labels,
			ReadsCut: s.KernelTiming.ReadsCut, Windows: kernelWindows(&s.KernelTiming.Windows)},
		Options: optionsJSON{Lanes: s.Options.Lanes, Level: s.Options.Level.String(),
			KernelSpanEvery: s.Options.KernelSpanEvery, Slots: s.Options.Slots, RecentSpans: s.Options.RecentSpans,
			StartTimes: s.Options.StartTimes.String(), RawKernelSpans: s.Options.RawKernelSpans,
			KernelTiming: s.Options.KernelTiming.String(), KernelWindowEveryNs: int64(s.Options.KernelWindowEvery),
			KernelWindowSteps: s.Options.KernelWindowSteps, KernelLabels: s.Options.KernelLabels,
			MaxRequests: s.Options.MaxRequests, RequestLabels: s.Options.RequestLabels,
			PeakFlops: s.Options.PeakFlops, PeakBandwidth: s.Options.PeakBandwidth},
	}
	if s.KernelTiming.Err != nil {
		j.KernelTiming.Reason = s.KernelTiming.Err.Error()
	}
	j.GPUTime = gpuTime(&s.GPUTime)
	j.Profile = profileOf(&s.Profile)
	j.Requests = attribution(&s.Requests)
	if !now.IsZero() {
		j.TakenUnixNs = now.UnixNano()
	}
	if s.Step > 0 {
		j.ArmedRatio = float64(s.ArmedSteps) / float64(s.Step)
	}
	for _, d := range s.Devices {
		dj := deviceJSON{
			Device: d.Device, State: d.State.String(), Stream: uint64(d.Stream), Slots: d.Slots, InFlight: d.InFlight,
			UUID: d.Identity.UUID, PCIBusID: d.Identity.PCIBusID, Name: d.Identity.Name, Driver: d.Identity.Driver,
			EventOffsetNs: int64(d.EventOffset),
		}
		if d.Err != nil {
			dj.Reason = d.Err.Error()
		}
		j.Devices = append(j.Devices, dj)
	}
	j.Schema, j.ZeroThresholdNs = gpuspans.Schema, gpuspans.ZeroThreshold*1e9
	return j
}

// optionsJSON is gpuspans.Options with its defaults filled in, each field
// named as gs_hub_options names it.
type optionsJSON struct {
	Lanes               []string `json:"lanes"`
	Level               string   `json:"level"`
	KernelSpanEvery     int      `json:"kernel_span_every"`
	Slots               int      `json:"slots"`
	RecentSpans         int      `json:"recent_spans"`
	StartTimes          string   `json:"start_times"`
	RawKernelSpans      bool     `json:"raw_kernel_spans"`
	KernelTiming        string   `json:"kernel_timing"`
	KernelWindowEveryNs int64    `json:"kernel_window_every_ns"`
	KernelWindowSteps   int      `json:"kernel_window_steps"`
	KernelLabels        int      `json:"kernel_labels"`
	MaxRequests         int      `json:"max_requests"`
	RequestLabels       int      `json:"request_labels"`
	PeakFlops           float64  `json:"peak_flops"`
	PeakBandwidth       float64  `json:"peak_bandwidth"`
}

// kernelTimingJSON is Snapshot.KernelTiming, with the proto's names.
type kernelTimingJSON struct {
	Mode      string            `json:"mode"`
	Tracing   bool              `json:"tracing"`
	Reason    string            `json:"reason,omitempty"`
	Fallbacks uint64            `json:"fallbacks"`
	Records   uint64            `json:"records"`
	Labels    int               `json:"labels"`
	ReadsCut  uint64            `json:"reads_cut"`
	Windows   kernelWindowsJSON `json:"windows"`
}

// kernelWindowsJSON is KernelTimingStatus.Windows: the costs on the
// stepping thread as p50, p99 and max from the hub's histograms.
type kernelWindowsJSON struct {
	EveryNs          int64            `json:"every_ns"`
	Steps            int              `json:"steps"`
	Open             bool             `json:"open"`
	Opened           uint64           `json:"opened"`
	Skipped          uint64           `json:"skipped"`
	Abandoned        uint64           `json:"abandoned"`
	LeftAttached     uint64           `json:"left_attached"`
	Kernels          uint64           `json:"kernels"`
	OpenNs           [3]int64         `json:"open_ns"`  // p50, p99, max
	CloseNs          [3]int64         `json:"close_ns"` // p50, p99, max
	KernelsPerWindow []uint64         `json:"kernels_per_window"`
	Last             kernelWindowJSON `json:"last"`
	SkippedGuard     uint64           `json:"skipped_guard"`
	Guard            launchGuardJSON  `json:"launch_guard"`
}

// launchGuardJSON is the process's launch guard (backend.LaunchGuard):
// who is inside it longest, and for how long.
type launchGuardJSON struct {
	Launches        uint64 `json:"launches"`
	Waits           uint64 `json:"waits"`
	InFlight        int64  `json:"in_flight"`
	Holder          uint32 `json:"holder_thread"`
	HeldNs          int64  `json:"held_ns"`
	UnmatchedExits  uint64 `json:"unmatched_exits"`
	UnmatchedThread uint32 `json:"unmatched_thread"`
	Backoffs        uint64 `json:"backoffs"`
}

type kernelWindowJSON struct {
	Seq          uint64 `json:"seq"`
	FirstStep    uint64 `json:"first_step"`
	Steps        uint64 `json:"steps"`
	Kernels      uint64 `json:"kernels"`
	OpenNs       int64  `json:"open_ns"`
	CloseNs      int64  `json:"close_ns"`
	OpenedUnixNs int64  `json:"opened_unix_ns"`
}

func costJSON(a *gpuspans.Aggregate) [3]int64 {
	if a.Count == 0 {
		return [3]int64{}
	}
	return [3]int64{int64(a.Quantile(0.5)), int64(a.Quantile(0.99)), int64(a.Max)}
}

func kernelWindows(w *gpuspans.KernelWindowStats) kernelWindowsJSON {
	j := kernelWindowsJSON{EveryNs: int64(w.Every), Steps: w.Steps, Open: w.Open, Opened: w.Opened, Skipped: w.Skipped,
		Abandoned: w.Abandoned, LeftAttached: w.LeftAttached, Kernels: w.Kernels, OpenNs: costJSON(&w.OpenTime), CloseNs: costJSON(&w.CloseTime),
		KernelsPerWindow: append([]uint64(nil), w.KernelsPerWindow[:]...),
		Last: kernelWindowJSON{Seq: w.Last.Seq, FirstStep: w.Last.FirstStep, Steps: w.Last.Steps, Kernels: w.Last.Kernels,
			OpenNs: int64(w.Last.OpenTime), CloseNs: int64(w.Last.CloseTime)},
		SkippedGuard: w.SkippedGuard,
		Guard: launchGuardJSON{Launches: w.Guard.Launches, Waits: w.Guard.Waits, InFlight: w.Guard.InFlight, Holder: w.Guard.Holder,
			HeldNs: int64(w.Guard.Held), UnmatchedExits: w.Guard.UnmatchedExits, UnmatchedThread: w.Guard.UnmatchedThread,
			Backoffs: w.Guard.Backoffs}}
	if !w.Last.Opened.IsZero() {
		j.Last.OpenedUnixNs = w.Last.Opened.UnixNano()
	}
	return j
}

func aggregates(aggs []gpuspans.Aggregate) []aggregateJSON {
	out := make([]aggregateJSON, 0, len(aggs))
	for i := range aggs {
		a := &aggs[i]
		bounds, counts := sparsehist.Of(a)
		if bounds == nil {
			bounds, counts = []int64{}, []uint64{}
		}
		out = append(out, aggregateJSON{
			Device: a.Device, Name: a.Name, Count: a.Count,
			SumNs: int64(a.Sum), MinNs: int64(a.Min), MaxNs: int64(a.Max),
			P50Ns: int64(a.Quantile(0.5)), P90Ns: int64(a.Quantile(0.9)), P99Ns: int64(a.Quantile(0.99)),
			BucketUpperNs: bounds, BucketCounts: counts,
		})
	}
	return out
}

// windowJSON is one of the hub's recent windows (gpuspans.Window): its
// times, the span outcomes counted in it, and per lane and kernel with
// spans landed in it their count and quantiles.
type windowJSON struct {
	StartUnixNs int64           `json:"start_unix_ns"` // 0 before the hub's first harvest
	EndUnixNs   int64           `json:"end_unix_ns"`   // for the open window, when it was read
	Open        bool            `json:"open"`
	Schema      int             `json:"schema"` // the quantiles' resolution: 5 is the aggregates' own (1.1%)
	Lost        uint64          `json:"lost"`   // spans landed with no room in the window
	Counters    outcomesJSON    `json:"counters"`
	Lanes       []windowAggJSON `json:"lanes"`
	Kernels     []windowAggJSON `json:"kernels"`
}

// outcomesJSON are span outcomes: the hub's counters begin with them, and
// they are all a window counts.
type outcomesJSON struct {
	Begun             uint64 `json:"begun"`
	Landed            uint64 `json:"landed"`
	DroppedSlotBusy   uint64 `json:"dropped_slot_busy"`
	DroppedCapturing  uint64 `json:"dropped_capturing"`
	DroppedRetired    uint64 `json:"dropped_retired"`
	DroppedLeaked     uint64 `json:"dropped_leaked"`
	DroppedTracerLost uint64 `json:"dropped_tracer_lost"`
	Errored           uint64 `json:"errored"`
}

func outcomes(begun, landed, errored uint64, dropped *[gpuspans.NumDropReasons]uint64) outcomesJSON {
	return outcomesJSON{
		Begun: begun, Landed: landed, Errored: errored,
		DroppedSlotBusy: dropped[gpuspans.DropSlotBusy], DroppedCapturing: dropped[gpuspans.DropCapturing],
		DroppedRetired: dropped[gpuspans.DropRetired], DroppedLeaked: dropped[gpuspans.DropLeaked],
		DroppedTracerLost: dropped[gpuspans.DropTracerLost],
	}
}

type windowAggJSON struct {
	Device int    `json:"device"`
	Name   string `json:"name"`
	Count  uint64 `json:"count"`
	P50Ns  int64  `json:"p50_ns"`
	P90Ns  int64  `json:"p90_ns"`
	P99Ns  int64  `json:"p99_ns"`
}

func windowsJSON(ws []gpuspans.Window) []windowJSON {
	out := make([]windowJSON, 0, len(ws))
	unixNs := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixNano()
	}
	aggs := func(list []gpuspans.WindowAggregate) []windowAggJSON {
		out := make([]windowAggJSON, 0, len(list))
		for i := range list {
			a := &list[i]
			out = append(out, windowAggJSON{Device: a.Device, Name: a.Name, Count: a.Count,
				P50Ns: int64(a.Quantile(0.5)), P90Ns: int64(a.Quantile(0.9)), P99Ns: int64(a.Quantile(0.99))})
		}
		return out
	}
	for i := range ws {
		w := &ws[i]
		out = append(out, windowJSON{
			StartUnixNs: unixNs(w.Start), EndUnixNs: unixNs(w.End), Open: w.Open, Schema: w.Schema, Lost: w.Lost,
			Counters: outcomes(w.Begun, w.Landed, w.Errored, &w.Dropped),
			Lanes:    aggs(w.Lanes), Kernels: aggs(w.Kernels),
		})
	}
	return out
}

// gpuTimeJSON is Snapshot.GPUTime, with the proto's names (GpuTime), plus
// the latest window's timelines for the page.
type gpuTimeJSON struct {
	Windows     uint64          `json:"windows"`
	Skipped     uint64          `json:"skipped"`
	Late        uint64          `json:"late"`
	Unplaced    uint64          `json:"unplaced"`
	AnalysisNs  uint64          `json:"analysis_ns"`
	Lanes       []laneGPUJSON   `json:"lanes"`
	Gaps        []aggregateJSON `json:"gaps"`
	Steps       []stepGPUJSON   `json:"steps"`
	LargestGaps []gapJSON       `json:"largest_gaps"`
	Moved       []moveJSON      `json:"moved"`
	Timelines   []timelineJSON  `json:"timelines"` // page-only
}

type laneGPUJSON struct {
	Device       int         `json:"device"`
	Lane         string      `json:"lane"`
	Spans        uint64      `json:"spans"`
	TimeNs       int64       `json:"time_ns"`
	BusyNs       int64       `json:"busy_ns"`
	IdleNs       int64       `json:"idle_ns"`
	GapsNs       int64       `json:"gaps_ns"`
	RecentTimeNs int64       `json:"recent_time_ns"`
	RecentBusyNs int64       `json:"recent_busy_ns"`
	BusyRatio    float64     `json:"busy_ratio"` // page-only: recent_busy_ns / recent_served_ns
	Kernels      []shareJSON `json:"kernels"`

	ServedSpans        uint64     `json:"served_spans"`
	ServedBusyNs       int64      `json:"served_busy_ns"`
	ServedNs           int64      `json:"served_ns"`
	WindowCostNs       int64      `json:"window_cost_ns"`
	Causes             causesJSON `json:"causes"`
	RecentSpans        uint64     `json:"recent_spans"`
	RecentServedNs     int64      `json:"recent_served_ns"`
	RecentWindowCostNs int64      `json:"recent_window_cost_ns"`
	RecentCauses       causesJSON `json:"recent_causes"`
	Unsettled          uint64     `json:"unsettled"`
}

// causesJSON is gpuspans.IdleCauses, with the proto's names (IdleCauses).
type causesJSON struct {
	HostNs   int64 `json:"host_ns"`
	LaunchNs int64 `json:"launch_ns"`
	CopyNs   int64 `json:"copy_ns"`
	WaitNs   int64 `json:"wait_ns"`
	OtherNs  int64 `json:"other_ns"`
}

func causes(c gpuspans.IdleCauses) causesJSON {
	return causesJSON{HostNs: int64(c.Host), LaunchNs: int64(c.Launch), CopyNs: int64(c.Copy), WaitNs: int64(c.Wait), OtherNs: int64(c.Other)}
}

type shareJSON struct {
	Kernel string  `json:"kernel"`
	TimeNs int64   `json:"time_ns"`
	Share  float64 `json:"share"`
}

type stepGPUJSON struct {
	Device      int    `json:"device"`
	Step        uint64 `json:"step"`
	StartUnixNs int64  `json:"start_unix_ns"`
	ExtentNs    int64  `json:"extent_ns"`
	BusyNs      int64  `json:"busy_ns"`
	Kernels     int    `json:"kernels"`
}

type gapJSON struct {
	Device      int    `json:"device"`
	Lane        string `json:"lane"`
	Step        uint64 `json:"step"`
	StartUnixNs int64  `json:"start_unix_ns"`
	DurationNs  int64  `json:"duration_ns"`
	Before      string `json:"before"`
	After       string `json:"after"`
}

type moveJSON struct {
	Device     int    `json:"device"`
	Lane       string `json:"lane"`
	Kernel     string `json:"kernel"`
	RecentNs   int64  `json:"recent_ns"`
	BaselineNs int64  `json:"baseline_ns"`
	Launch     int    `json:"launch"`
}

type timelineJSON struct {
	Device  int                  `json:"device"`
	Step    uint64               `json:"step"`
	Cut     int                  `json:"cut"`
	Lanes   []timelineLaneJSON   `json:"lanes"`
	Kernels []timelineKernelJSON `json:"kernels"`
}

type timelineLaneJSON struct {
	Lane        string     `json:"lane"`
	StartUnixNs int64      `json:"start_unix_ns"`
	EndUnixNs   int64      `json:"end_unix_ns"`
	BusyNs      int64      `json:"busy_ns"`
	ServedNs    int64      `json:"served_ns"`
	Causes      causesJSON `json:"causes"`
}

type timelineKernelJSON struct {
	Stream      uint32 `json:"stream"`
	Kernel      string `json:"kernel"`
	StartUnixNs int64  `json:"start_unix_ns"`
	EndUnixNs   int64  `json:"end_unix_ns"`
}

func gpuTime(g *gpuspans.GPUTime) *gpuTimeJSON {
	if g.Windows == 0 && g.Skipped == 0 {
		return nil
	}
	j := &gpuTimeJSON{Windows: g.Windows, Skipped: g.Skipped, Late: g.Late, Unplaced: g.Unplaced, AnalysisNs: uint64(g.AnalysisTime),
		Lanes: []laneGPUJSON{}, Gaps: aggregates(g.Gaps), Steps: []stepGPUJSON{}, LargestGaps: []gapJSON{}, Moved: []moveJSON{}, Timelines: []timelineJSON{}}
	for i := range g.Lanes {
		l := &g.Lanes[i]
		lj := laneGPUJSON{Device: l.Device, Lane: l.Lane, Spans: l.Spans, TimeNs: int64(l.Time), BusyNs: int64(l.Busy), IdleNs: int64(l.Idle), GapsNs: int64(l.Gaps),
			RecentTimeNs: int64(l.RecentTime), RecentBusyNs: int64(l.RecentBusy), BusyRatio: l.BusyRatio(), Kernels: []shareJSON{},
			ServedSpans: l.ServedSpans, ServedBusyNs: int64(l.ServedBusy), ServedNs: int64(l.Served), WindowCostNs: int64(l.WindowCost), Causes: causes(l.Causes),
			RecentSpans: l.RecentSpans, RecentServedNs: int64(l.RecentServed), RecentWindowCostNs: int64(l.RecentWindowCost), RecentCauses: causes(l.RecentCauses),
			Unsettled: l.Unsettled}
		for _, k := range l.Kernels {
			lj.Kernels = append(lj.Kernels, shareJSON{Kernel: k.Kernel, TimeNs: int64(k.Time), Share: k.Share})
		}
		j.Lanes = append(j.Lanes, lj)
	}
	for _, s := range g.Steps {
		j.Steps = append(j.Steps, stepGPUJSON{Device: s.Device, Step: s.Step, StartUnixNs: s.StartNs, ExtentNs: int64(s.Extent), BusyNs: int64(s.Busy), Kernels: s.Kernels})
	}
	for _, x := range g.LargestGaps {
		j.LargestGaps = append(j.LargestGaps, gapJSON{Device: x.Device, Lane: x.Lane, Step: x.Step, StartUnixNs: x.StartNs, DurationNs: int64(x.Duration), Before: x.Before, After: x.After})
	}
	for _, m := range g.Moved {
		j.Moved = append(j.Moved, moveJSON{Device: m.Device, Lane: m.Lane, Kernel: m.Kernel, RecentNs: int64(m.Recent), BaselineNs: int64(m.Baseline), Launch: m.Launch})
	}
	for _, t := range g.Timelines {
		tj := timelineJSON{Device: t.Device, Step: t.Step, Cut: t.Cut, Lanes: []timelineLaneJSON{}, Kernels: []timelineKernelJSON{}}
		for _, l := range t.Lanes {
			tj.Lanes = append(tj.Lanes, timelineLaneJSON{Lane: l.Lane, StartUnixNs: l.StartNs, EndUnixNs: l.EndNs, BusyNs: int64(l.Busy),
				ServedNs: int64(l.Served), Causes: causes(l.Causes)})
		}
		for _, k := range t.Kernels {
			tj.Kernels = append(tj.Kernels, timelineKernelJSON{Stream: k.Stream, Kernel: k.Kernel, StartUnixNs: k.StartNs, EndUnixNs: k.EndNs})
		}
		j.Timelines = append(j.Timelines, tj)
	}
	return j
}

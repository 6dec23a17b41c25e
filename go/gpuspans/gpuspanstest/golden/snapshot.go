package golden

import (
	"errors"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/profile"
)

// HandSnapshot is a snapshot written by hand that sets every field of the
// wire schema, including the ones a short hub run leaves at zero.
func HandSnapshot() gpuspans.Snapshot {
	s := gpuspans.Snapshot{
		Level: gpuspans.LevelStep, KernelSpanEvery: 7, Step: 100, ArmedSteps: 14,
		Counters: gpuspans.Counters{
			Begun: 1, Landed: 2, Dropped: [gpuspans.NumDropReasons]uint64{3, 4, 5}, Errored: 6, InFlight: 7,
			LaneAlreadyOpen: 8, UnknownLane: 9, BadEnd: 10, InstallFailures: 11, StickyDisables: 12,
			Harvests: 13, HarvestsSkipped: 14, HarvestTime: 15 * time.Millisecond, RecentOverwritten: 16,
		},
		Devices: []gpuspans.DeviceStatus{
			{Device: 3, State: gpuspans.DeviceRetiring, Stream: 1, Slots: 8, InFlight: 2},
			{Device: 3, State: gpuspans.DeviceDead, Err: errors.New("cuEventRecord: illegal address (700)"), Stream: 2, Slots: 8},
			{Device: 4, State: gpuspans.DevicePending},
		},
		Lanes:   []gpuspans.Aggregate{{Device: 3, Name: "decode", Count: 2, Sum: 3000, Min: 1000, Max: 2000}},
		Kernels: []gpuspans.Aggregate{{Device: 3, Name: "other", Count: 1, Sum: 7e9, Min: 7e9, Max: 7e9}},
	}
	s.Lanes[0].Buckets[gpuspans.BucketIndex(1000)], s.Lanes[0].Buckets[gpuspans.BucketIndex(2000)] = 1, 1
	s.Kernels[0].Buckets[gpuspans.BucketIndex(7e9)] = 1
	s.Kernels[0].ZeroCount = 2
	return s
}

// FullSnapshot is HandSnapshot with the rest of the fields set too (every
// drop reason, a dead device's identity, per-device counters), so that no
// zero value hides a mismatch.
func FullSnapshot() gpuspans.Snapshot {
	s := HandSnapshot()
	c := &s.Counters
	c.Dropped = [gpuspans.NumDropReasons]uint64{3, 4, 5, 17}
	c.PoolPanics, c.HarvestFailures, c.AbandonedPools = 18, 19, 20
	s.Devices[1] = gpuspans.DeviceStatus{
		Device: 3, State: gpuspans.DeviceDead, Err: errors.New("cuEventRecord: illegal address (700)"), Stream: 2, Slots: 8,
		InFlight: 1, EventOffset: 3344,
		Identity: backend.Identity{UUID: "GPU-00000000-0000-0000-0000-000000000003", PCIBusID: "00000000:19:00.0", Name: "NVIDIA H200", Driver: "13.0"},
	}
	s.PerDevice = []gpuspans.DeviceCounters{{Device: 3, Begun: 1, Landed: 2}}
	s.GPUTime = FullGPUTime()
	s.Profile = gpuspans.ProfileStatus{Path: "/var/lib/engine/decode.profile", Build: "v2", Running: true, Windows: 7,
		Written: time.Unix(1_700_000_000, 0), Before: "v1", BeforeWritten: time.Unix(1_699_990_000, 0),
		Since: &profile.Diff{Before: "v1", After: "v2", Lanes: []profile.LaneDiff{{Model: "NVIDIA H200", Lane: "decode",
			Windows: [2]uint64{40, 7}, Time: [2]float64{1_250_000, 1_400_000}, Busy: [2]float64{1_150_000, 1_300_000},
			TimeMoved: 1, BusyMoved: 1, Kernels: []profile.KernelChange{
				{Name: "gemm_256x128", Change: profile.Grew, Before: 400_000, After: 550_000},
				{Name: "rms_norm", Launch: 17, Change: profile.Grew, Before: 3_000, After: 6_100},
				{Name: "flash_fwd_sm90", Change: profile.New, After: 30_000},
				{Name: "flash_fwd_sm80", Change: profile.Gone, Before: 32_000}}}},
			Skipped: []string{`lane "prefill" on NVIDIA H200: 40 and 3 windows, comparing needs 5`}}}
	s.Requests = FullAttribution()
	return s
}

// FullAttribution is a RequestAttribution with every field set.
func FullAttribution() gpuspans.RequestAttribution {
	per := gpuspans.Aggregate{Name: "request"}
	per.Observe(9 * time.Millisecond)
	rec := gpuspans.RequestRecord{Seq: 5, ID: 42, Model: "llama", Adapter: "lora-7", Tenant: "acme", Steps: 17, FirstStep: 3, LastStep: 19,
		NewTokens: 512, DecodedTokens: 16, GPUTime: 9 * time.Millisecond, Input: 6 * time.Millisecond, Output: 3 * time.Millisecond,
		Busy: 7 * time.Millisecond, BusyTime: 8 * time.Millisecond, Unmeasured: 1, Fallback: 2, Abandoned: true,
		StartNs: 1_700_000_000_000_000_000, EndNs: 1_700_000_000_010_000_000,
		TraceID: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, SpanID: [8]byte{9, 8, 7, 6, 5, 4, 3, 2},
		Lanes: []gpuspans.RequestLaneTime{{Lane: "decode", Steps: 17, GPUTime: 9 * time.Millisecond, Busy: 7 * time.Millisecond, BusyTime: 8 * time.Millisecond}}}
	return gpuspans.RequestAttribution{InFlight: 3, Finished: 5,
		Counters: gpuspans.RequestCounters{Batches: 1, Served: 2, Refused: 3, Backlog: 4, Expired: 5, Overrun: 6, Abandoned: 7, RecordsOverwritten: 8},
		Lanes: []gpuspans.LaneAttribution{{Device: 3, Lane: "decode",
			Model: gpuspans.CostModel{Status: "ok", Fixed: 300 * time.Microsecond, PerToken: 40, PerContext: 3, PerPair: 0.02, Residual: 0.01, Steps: 120},
			Spans: 120, ModelSpans: 88, Unmeasured: 2, Time: 40 * time.Millisecond, Busy: 30 * time.Millisecond, BusyTime: 35 * time.Millisecond,
			WindowCost: 2 * time.Millisecond, FLOPs: 4e12, Bytes: 8e10, WorkTime: 39 * time.Millisecond, WorkBusy: 29 * time.Millisecond,
			WorkBusyTime: 34 * time.Millisecond, PeakFlops: 989e12, PeakBandwidth: 4.8e12,
			Unattributed: 4, UnattributedTime: 3 * time.Millisecond}},
		Classes: []gpuspans.ClassAttribution{{Class: 2, Model: "llama", Adapter: "lora-7", Tenant: "acme",
			Lanes:     []gpuspans.ClassLaneTime{{Lane: "decode", GPUTime: 9 * time.Millisecond, Input: 6 * time.Millisecond, Output: 3 * time.Millisecond, Busy: 7 * time.Millisecond, BusyTime: 8 * time.Millisecond}},
			NewTokens: 512, DecodedTokens: 16, Finished: 1, Abandoned: 1, FLOPs: 1e12, PerRequest: per},
			{Class: gpuspans.RequestClassOther, Model: "other", Adapter: "other", Tenant: "other", Other: true, Lanes: []gpuspans.ClassLaneTime{}}},
		Heaviest: []gpuspans.RequestRecord{rec}}
}

// FullGPUTime is a GPUTime with every field set.
func FullGPUTime() gpuspans.GPUTime {
	const t0 = 1_700_000_000_000_000_000
	gaps := gpuspans.Aggregate{Device: 3, Name: "gap"}
	gaps.Observe(40 * time.Microsecond)
	gaps.Observe(50 * time.Microsecond)
	return gpuspans.GPUTime{
		Windows: 12, Skipped: 1, Late: 2, Unplaced: 3, AnalysisTime: 900 * time.Microsecond,
		Lanes: []gpuspans.LaneGPUTime{{Device: 3, Lane: "decode", Spans: 12, Time: 5040 * time.Microsecond,
			Busy: 3960 * time.Microsecond, Idle: 1080 * time.Microsecond, Gaps: 900 * time.Microsecond, RecentTime: 420 * time.Microsecond, RecentBusy: 330 * time.Microsecond,
			ServedSpans: 11, RecentSpans: 1, ServedBusy: 3630 * time.Microsecond, Served: 4180 * time.Microsecond, WindowCost: 440 * time.Microsecond,
			Causes:       gpuspans.IdleCauses{Host: 300 * time.Microsecond, Launch: 150 * time.Microsecond, Copy: 50 * time.Microsecond, Wait: 30 * time.Microsecond, Other: 20 * time.Microsecond},
			RecentServed: 380 * time.Microsecond, RecentWindowCost: 40 * time.Microsecond,
			RecentCauses: gpuspans.IdleCauses{Host: 25 * time.Microsecond, Launch: 15 * time.Microsecond, Copy: 5 * time.Microsecond, Wait: 3 * time.Microsecond, Other: 2 * time.Microsecond},
			Unsettled:    1,
			Kernels:      []gpuspans.KernelShare{{Kernel: "gemm", Time: 200 * time.Microsecond, Share: 0.6}, {Kernel: "other", Time: 130 * time.Microsecond, Share: 0.4}}}},
		Gaps:        []gpuspans.Aggregate{gaps},
		Steps:       []gpuspans.StepGPUTime{{Device: 3, Step: 99, StartNs: t0, Extent: 520 * time.Microsecond, Busy: 380 * time.Microsecond, Kernels: 5}},
		LargestGaps: []gpuspans.KernelGap{{Device: 3, Lane: "decode", Step: 99, StartNs: t0 + 300_000, Duration: 50 * time.Microsecond, Before: "gemm", After: "other"}},
		Moved:       []gpuspans.KernelMove{{Device: 3, Lane: "decode", Kernel: "gemm", Launch: 2, Recent: 200 * time.Microsecond, Baseline: 100 * time.Microsecond}},
		Timelines: []gpuspans.Timeline{{Device: 3, Step: 99, Cut: 1,
			Lanes: []gpuspans.TimelineLane{{Lane: "decode", StartNs: t0 + 100_000, EndNs: t0 + 520_000, Busy: 330 * time.Microsecond,
				Served: 380 * time.Microsecond, Causes: gpuspans.IdleCauses{Host: 25 * time.Microsecond, Launch: 15 * time.Microsecond, Copy: 5 * time.Microsecond, Wait: 3 * time.Microsecond, Other: 2 * time.Microsecond}}},
			Kernels: []gpuspans.TimelineKernel{{Stream: 7, Kernel: "gemm", StartNs: t0 + 100_000, EndNs: t0 + 300_000}, {Stream: 7, Kernel: "other", StartNs: t0 + 350_000, EndNs: t0 + 480_000}}}},
	}
}

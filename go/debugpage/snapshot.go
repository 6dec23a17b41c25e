package debugpage

import (
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// snapshotJSON is the body of SnapshotPath: a hub snapshot with durations
// in integer nanoseconds and the quantiles a dashboard wants precomputed.
// Field names are snake_case and stable; new fields may be added.
type snapshotJSON struct {
	Time            time.Time       `json:"time"`
	Backend         string          `json:"backend,omitempty"`
	Level           string          `json:"level"`
	KernelSpanEvery int             `json:"kernel_span_every"`
	Step            uint64          `json:"step"`
	ArmedSteps      uint64          `json:"armed_steps"`
	ArmedRatio      float64         `json:"armed_ratio"` // armed_steps / step, 0 before the first step
	Counters        countersJSON    `json:"counters"`
	Devices         []deviceJSON    `json:"devices"`
	Schema          int             `json:"schema"`            // the buckets' Prometheus native-histogram schema: 2^schema buckets to a doubling
	ZeroThresholdNs float64         `json:"zero_threshold_ns"` // the zero bucket's upper bound
	Lanes           []aggregateJSON `json:"lanes"`
	Kernels         []aggregateJSON `json:"kernels"`
}

type countersJSON struct {
	Begun             uint64            `json:"begun"`
	Landed            uint64            `json:"landed"`
	Dropped           map[string]uint64 `json:"dropped"` // by reason: slot_busy, capturing, retired, leaked
	Errored           uint64            `json:"errored"`
	InFlight          uint64            `json:"in_flight"`
	LaneAlreadyOpen   uint64            `json:"lane_already_open"`
	UnknownLane       uint64            `json:"unknown_lane"`
	BadEnd            uint64            `json:"bad_end"`
	InstallFailures   uint64            `json:"install_failures"`
	StickyDisables    uint64            `json:"sticky_disables"`
	PoolPanics        uint64            `json:"pool_panics"`
	HarvestFailures   uint64            `json:"harvest_failures"`
	AbandonedPools    uint64            `json:"abandoned_pools"`
	Harvests          uint64            `json:"harvests"`
	HarvestsSkipped   uint64            `json:"harvests_skipped"`
	HarvestNs         int64             `json:"harvest_ns"`
	RecentOverwritten uint64            `json:"recent_overwritten"`
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
	// EventOffsetNs is subtracted from kernel spans; -1 until measured.
	EventOffsetNs int64 `json:"event_offset_ns"`
}

type aggregateJSON struct {
	Device    int          `json:"device"`
	Name      string       `json:"name"`
	Count     uint64       `json:"count"`
	SumNs     int64        `json:"sum_ns"`
	MinNs     int64        `json:"min_ns"`
	MaxNs     int64        `json:"max_ns"`
	P50Ns     int64        `json:"p50_ns"` // estimated within 1.1%, as Aggregate.Quantile
	P90Ns     int64        `json:"p90_ns"`
	P99Ns     int64        `json:"p99_ns"`
	ZeroCount uint64       `json:"zero_count"` // spans of at most zero_threshold_ns
	Buckets   []bucketJSON `json:"buckets"`    // the non-empty buckets, in order; not cumulative
}

// bucketJSON is one non-empty bucket: key k holds spans in
// (2^((k-1)/32), 2^(k/32)] seconds, le_ns being the upper bound.
type bucketJSON struct {
	Key   int     `json:"key"`
	LeNs  float64 `json:"le_ns"`
	Count uint64  `json:"count"`
}

func toJSON(s *gpuspans.Snapshot, backend string, now time.Time) snapshotJSON {
	c := &s.Counters
	j := snapshotJSON{
		Time:            now.UTC(),
		Backend:         backend,
		Level:           s.Level.String(),
		KernelSpanEvery: s.KernelSpanEvery,
		Step:            s.Step,
		ArmedSteps:      s.ArmedSteps,
		Counters: countersJSON{
			Begun: c.Begun, Landed: c.Landed, Dropped: map[string]uint64{},
			Errored: c.Errored, InFlight: c.InFlight,
			LaneAlreadyOpen: c.LaneAlreadyOpen, UnknownLane: c.UnknownLane, BadEnd: c.BadEnd,
			InstallFailures: c.InstallFailures, StickyDisables: c.StickyDisables,
			PoolPanics: c.PoolPanics, HarvestFailures: c.HarvestFailures, AbandonedPools: c.AbandonedPools,
			Harvests: c.Harvests, HarvestsSkipped: c.HarvestsSkipped, HarvestNs: int64(c.HarvestTime),
			RecentOverwritten: c.RecentOverwritten,
		},
		Devices: []deviceJSON{},
		Lanes:   aggregates(s.Lanes),
		Kernels: aggregates(s.Kernels),
	}
	if s.Step > 0 {
		j.ArmedRatio = float64(s.ArmedSteps) / float64(s.Step)
	}
	for r, n := range c.Dropped {
		j.Counters.Dropped[gpuspans.DropReason(r).String()] = n
	}
	for _, d := range s.Devices {
		dj := deviceJSON{
			Device: d.Device, State: d.State.String(), Stream: uint64(d.Stream), Slots: d.Slots, InFlight: d.InFlight,
			UUID: d.Identity.UUID, PCIBusID: d.Identity.PCIBusID, Name: d.Identity.Name, EventOffsetNs: int64(d.EventOffset),
		}
		if d.Err != nil {
			dj.Reason = d.Err.Error()
		}
		j.Devices = append(j.Devices, dj)
	}
	j.Schema, j.ZeroThresholdNs = gpuspans.Schema, gpuspans.ZeroThreshold*1e9
	return j
}

func aggregates(aggs []gpuspans.Aggregate) []aggregateJSON {
	out := make([]aggregateJSON, 0, len(aggs))
	for i := range aggs {
		a := &aggs[i]
		out = append(out, aggregateJSON{
			Device: a.Device, Name: a.Name, Count: a.Count,
			SumNs: int64(a.Sum), MinNs: int64(a.Min), MaxNs: int64(a.Max),
			P50Ns: int64(a.Quantile(0.5)), P90Ns: int64(a.Quantile(0.9)), P99Ns: int64(a.Quantile(0.99)),
			ZeroCount: a.ZeroCount, Buckets: []bucketJSON{},
		})
		for i, c := range a.Buckets {
			if c > 0 {
				b := &out[len(out)-1]
				b.Buckets = append(b.Buckets, bucketJSON{Key: gpuspans.BucketKey(i), LeNs: gpuspans.BucketUpperBound(i) * 1e9, Count: c})
			}
		}
	}
	return out
}

package golden

import (
	"errors"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/gpuspans"
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
		Identity: backend.Identity{UUID: "GPU-00000000-0000-0000-0000-000000000003", PCIBusID: "00000000:19:00.0", Name: "NVIDIA H200"},
	}
	s.PerDevice = []gpuspans.DeviceCounters{{Device: 3, Begun: 1, Landed: 2}}
	return s
}

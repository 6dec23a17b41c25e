package gpuspans

import (
	"fmt"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// DropReason is why a begun span was dropped before it could land.
type DropReason int

// Drop reasons, indexing Counters.Dropped.
const (
	// DropSlotBusy: the ring's next slot still held an older span (a long
	// kernel, or harvests too rare for the span rate).
	DropSlotBusy DropReason = iota
	// DropCapturing: the stream was being captured into a graph; nothing
	// was recorded, or the end could not be.
	DropCapturing
	// DropRetired: the recorder was retired or dead as the span began, or
	// the span was an open lane span of a retired recorder.
	DropRetired
	// DropLeaked: the span was begun and never ended, and was reclaimed
	// after LeakSteps steps so that its slot serves again.
	DropLeaked
	// DropTracerLost: a kernel the tracer saw but could not deliver (CUPTI
	// had no buffer for its record in time, or the tracer's ring was full).
	DropTracerLost
	numDropReasons
)

// NumDropReasons is the number of DropReason values.
const NumDropReasons = int(numDropReasons)

// String names the reason as a label value: "slot_busy", "capturing",
// "retired", "leaked", "tracer_lost".
func (d DropReason) String() string {
	switch d {
	case DropSlotBusy:
		return "slot_busy"
	case DropCapturing:
		return "capturing"
	case DropRetired:
		return "retired"
	case DropLeaked:
		return "leaked"
	case DropTracerLost:
		return "tracer_lost"
	}
	return fmt.Sprintf("DropReason(%d)", int(d))
}

// Counters are the hub's totals since New. Every span begun ends up in
// exactly one of Landed, Dropped, InFlight and Errored, so in a snapshot
// taken while no span call is running,
//
//	Begun == Landed + DroppedTotal() + InFlight + Errored
//
// InFlight is counted from the slots themselves, not derived from the other
// counters, so the identity is a real check. With span calls running
// concurrently each counter is exact and the right side can only lag:
// Begun >= Landed + DroppedTotal() + InFlight + Errored.
type Counters struct {
	Begun    uint64                 // spans that reached a recorder and took a ring position
	Landed   uint64                 // spans harvested with a duration
	Dropped  [NumDropReasons]uint64 // spans given up before landing, by DropReason
	Errored  uint64                 // spans a backend call failed for
	InFlight uint64                 // spans holding a slot: open, or ended and awaiting a harvest

	LaneAlreadyOpen uint64 // LaneBegin calls on a lane already open (ignored)
	UnknownLane     uint64 // LaneBegin calls with an index outside Lanes() (ignored)
	BadEnd          uint64 // KernelEnd calls with a span not open on this hub, or reclaimed as leaked (ignored)

	InstallFailures uint64 // pools that could not be opened
	StickyDisables  uint64 // recorders turned off by a sticky error
	PoolPanics      uint64 // recorders turned off because a pool method panicked
	HarvestFailures uint64 // harvest calls that failed as a whole, not sticky (their spans wait for the next)
	AbandonedPools  uint64 // retired pools given up on while still busy, past MaxBusyRetired (left unclosed)

	Harvests          uint64        // harvests run
	HarvestsSkipped   uint64        // harvests skipped because the harvest lock was held
	HarvestTime       time.Duration // total time spent in harvests
	RecentOverwritten uint64        // recent spans overwritten before RecentSpans returned them
}

// DroppedTotal is the sum of Dropped over all reasons.
func (c *Counters) DroppedTotal() uint64 {
	var n uint64
	for _, d := range c.Dropped {
		n += d
	}
	return n
}

// DeviceCounters are one device's share of Counters' span outcomes, with
// the same identity: Begun == Landed + DroppedTotal() + InFlight + Errored
// in a snapshot taken while no span call is running.
type DeviceCounters struct {
	Device   int
	Begun    uint64
	Landed   uint64
	Dropped  [NumDropReasons]uint64
	Errored  uint64
	InFlight uint64
}

// DroppedTotal is the sum of Dropped over all reasons.
func (c *DeviceCounters) DroppedTotal() uint64 {
	var n uint64
	for _, d := range c.Dropped {
		n += d
	}
	return n
}

// DeviceState is the state of a device's recorder.
type DeviceState int

// Device states.
const (
	DevicePending  DeviceState = iota // installed; the pool opens at the first step at Kernel
	DeviceOpen                        // recording spans
	DeviceFailed                      // the pool could not be opened; spans are off (Err says why)
	DeviceDead                        // a sticky error or a pool panic turned spans off until the next Install (Err says why)
	DeviceRetiring                    // replaced or uninstalled; its last spans are landing before its pool closes
)

// String names the state as a label value.
func (s DeviceState) String() string {
	switch s {
	case DevicePending:
		return "pending"
	case DeviceOpen:
		return "open"
	case DeviceFailed:
		return "failed"
	case DeviceDead:
		return "dead"
	case DeviceRetiring:
		return "retiring"
	}
	return fmt.Sprintf("DeviceState(%d)", int(s))
}

// DeviceStatus describes one recorder. A device being replaced has two: the
// retiring one first, then the installed one.
type DeviceStatus struct {
	Device   int
	State    DeviceState
	Err      error // why the recorder is failed or dead (errors.Is works: backend.ErrNoDriver, backend.ErrSticky), else nil
	Stream   backend.Stream
	Slots    int    // ring slots; 0 until the pool opens
	InFlight uint64 // slots held
	// Identity is the device's UUID, PCI bus id and name, once its pool
	// opened and if the backend can tell them (backend.Identifier).
	Identity backend.Identity
	// EventOffset is the device's event offset, subtracted from kernel spans
	// unless Options.RawKernelSpans; -1 until the pool has measured it.
	EventOffset time.Duration
}

// Snapshot is a consistent view of a hub, for exporters. Reuse one with
// SnapshotInto to avoid allocating. A Snapshot and everything in it are
// plain values owned by the caller: the hub never touches them once
// SnapshotInto returns (the names in it are immutable strings the hub
// shares).
type Snapshot struct {
	Level           Level
	KernelSpanEvery int
	Step            uint64 // steps counted (at LevelStep and above)
	ArmedSteps      uint64 // steps armed for kernel spans
	Counters        Counters
	// PerDevice splits Counters' span outcomes by device: one entry for
	// every device ever installed, by device.
	PerDevice []DeviceCounters
	Devices   []DeviceStatus // by device
	Lanes     []Aggregate    // by installed device, then lane; lanes with no span yet are there, empty
	Kernels   []Aggregate    // by installed device, then registration order ([0] is OtherKernel), empty ones included
	// KernelTiming is where kernel spans come from now.
	KernelTiming KernelTimingStatus
	// GPUTime is what kernel windows measured of where the GPU's time
	// went (Hub.GPUTime).
	GPUTime GPUTime
	// Profile is the hub's profile across builds (Hub.StartProfile).
	Profile ProfileStatus
	// Requests is whose GPU time: what each lane's spans gave the
	// requests engines said they served (Hub.Attribution).
	Requests RequestAttribution
	// Options are the options the hub runs with now (Hub.Options).
	Options Options
}

// Snapshot returns a new snapshot. Takes the
// harvest lock briefly (a harvest due meanwhile is skipped, not delayed, and
// span paths never wait).
func (h *Hub) Snapshot() Snapshot {
	var s Snapshot
	h.SnapshotInto(&s)
	return s
}

// SnapshotInto fills s, reusing its slices, so that a steady exporter
// allocates nothing. It copies every aggregate of every installed device,
// about 8 KiB each (540 KiB for 2 lanes and 64 registered kernels), under
// the harvest lock, like Snapshot; s must not be
// shared with a concurrent reader.
func (h *Hub) SnapshotInto(s *Snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.Level = h.Level()
	s.KernelSpanEvery = h.KernelSpanEvery()
	h.optionsInto(&s.Options)
	s.Step = h.step.Load()
	s.ArmedSteps = h.armedSteps.Load()

	// Outcome counters first, then the slots, then the hand-outs: span
	// paths free a slot before counting its outcome and take a position
	// before claiming a slot, so in this order no span is seen twice. Each
	// is kept per device; the totals are their sums.
	var at [MaxDevices]int // index+1 of a device's entry in s.PerDevice
	s.PerDevice = s.PerDevice[:0]
	for dev, d := range h.devs {
		if d == nil {
			continue
		}
		dc := &h.devc[dev]
		pd := DeviceCounters{Device: dev, Landed: dc.landed, Errored: dc.errored.Load(), Begun: dc.begunFinished}
		for i := range pd.Dropped {
			pd.Dropped[i] = dc.dropped[i].Load()
		}
		s.PerDevice = append(s.PerDevice, pd)
		at[dev] = len(s.PerDevice)
	}
	s.Devices = s.Devices[:0]
	for _, r := range h.recs {
		n := r.inFlight()
		s.PerDevice[at[r.device]-1].InFlight += n
		st := r.status.Load()
		ds := DeviceStatus{Device: r.device, Stream: r.stream, Slots: len(r.slots), InFlight: n, Identity: r.id, EventOffset: -1}
		if r.pool != nil {
			ds.EventOffset = time.Duration(r.offset)
		}
		switch {
		case st&recRetired != 0:
			ds.State = DeviceRetiring
		case st == recPending:
			ds.State = DevicePending
		case st == recOpen:
			ds.State = DeviceOpen
		case st == recFailed:
			ds.State = DeviceFailed
		default:
			ds.State = DeviceDead
		}
		if e := r.err.Load(); e != nil {
			ds.Err = e.err
		}
		s.Devices = append(s.Devices, ds)
	}
	for _, r := range h.recs {
		s.PerDevice[at[r.device]-1].Begun += r.next.Load()
	}
	c := &s.Counters
	c.Begun, c.Landed, c.Errored, c.InFlight, c.Dropped = 0, 0, 0, 0, [NumDropReasons]uint64{}
	for i := range s.PerDevice {
		d := &s.PerDevice[i]
		c.Begun += d.Begun
		c.Landed += d.Landed
		c.Errored += d.Errored
		c.InFlight += d.InFlight
		for k, n := range d.Dropped {
			c.Dropped[k] += n
		}
	}

	c.LaneAlreadyOpen = h.laneAlreadyOpen.Load()
	c.UnknownLane = h.unknownLane.Load()
	c.BadEnd = h.badEnd.Load()
	c.InstallFailures = h.installFailures
	c.StickyDisables = h.stickyDisables.Load()
	c.PoolPanics = h.poolPanics.Load()
	c.HarvestFailures = h.harvestFailures
	c.AbandonedPools = h.abandonedPools
	c.Harvests = h.harvests
	c.HarvestsSkipped = h.harvestsSkipped.Load()
	c.HarvestTime = h.harvestTime
	c.RecentOverwritten = h.recentOverwritten
	s.KernelTiming = h.kernelTimingStatus()
	h.gpuTimeInto(&s.GPUTime)
	s.Profile = h.ProfileStatus()
	h.attributionInto(&s.Requests)

	s.Lanes = s.Lanes[:0]
	s.Kernels = s.Kernels[:0]
	for _, d := range h.devs {
		if d == nil {
			continue
		}
		// Empty ones too: a lane that loses every span must read zero,
		// not vanish from pages and scrapes.
		s.Lanes = append(s.Lanes, d.lanes...)
		s.Kernels = append(s.Kernels, d.kernels...)
	}
}

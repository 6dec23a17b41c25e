package sim

import "github.com/gpuspans/gpuspans/go/backend"

// NopDuration is the duration of every span a NopPool lands.
const NopDuration = 1000 // ns

// NopPool is a backend.Pool that does no GPU work: every record succeeds at
// once and every harvest finds each span done, NopDuration long. A hub on
// it costs only the hub's own work. It is a plain value, safe from any
// goroutine, on device 0 with as many slots as the hub asks.
type NopPool struct{ slots int }

// NopOpener is a backend.Opener of NopPools.
func NopOpener(slots int) (backend.Pool, error) { return NopPool{slots: slots}, nil }

// Device returns 0.
func (NopPool) Device() int { return 0 }

// Slots returns the size NopOpener was asked for.
func (p NopPool) Slots() int { return p.slots }

// RecordBegin does nothing.
func (NopPool) RecordBegin(int, backend.Stream) error { return nil }

// RecordEnd does nothing.
func (NopPool) RecordEnd(int, backend.Stream) error { return nil }

// RecordNext does nothing (backend.Chainer).
func (NopPool) RecordNext(int, int, backend.Stream) error { return nil }

// Close does nothing.
func (NopPool) Close() error { return nil }

// Harvest reports every item done, NopDuration long.
func (NopPool) Harvest(items []backend.HarvestItem) error {
	for i := range items {
		items[i].State, items[i].DurationNs = backend.Done, NopDuration
	}
	return nil
}

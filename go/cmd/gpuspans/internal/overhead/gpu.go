package overhead

import (
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// gpuRig is what the GPU rows share: the kit, for a stream and the empty
// kernel, and a pool of the driver floor's own.
type gpuRig struct {
	kit    *cudakit.Kit
	stream backend.Stream
	pool   *cuda.Pool
}

func openGPU(device int) (*gpuRig, error) {
	if err := cuda.Load(); err != nil {
		return nil, err
	}
	kit, stream, err := cudakit.NewKitStream(device)
	if err != nil {
		return nil, err
	}
	pool, err := cuda.Open(device, gpuspans.DefaultSlots)
	if err != nil {
		_ = kit.DestroyStream(stream)
		_ = kit.Close()
		return nil, err
	}
	return &gpuRig{kit: kit, stream: stream, pool: pool}, nil
}

// floor times n Pool.RecordBegin+RecordEnd pairs, no hub.
func (g *gpuRig) floor(sw *stopwatch, n int) error {
	slots := g.pool.Slots()
	sw.StartTimer()
	for i := 0; i < n; i++ {
		slot := i % slots
		if err := g.pool.RecordBegin(slot, g.stream); err != nil {
			return err
		}
		if err := g.pool.RecordEnd(slot, g.stream); err != nil {
			return err
		}
		if slot == slots-1 {
			// The slots are reused: let the earlier records complete,
			// untimed, so a record never races its own slot's query.
			sw.StopTimer()
			_ = g.kit.Sync(g.stream)
			sw.StartTimer()
		}
	}
	sw.StopTimer()
	return g.kit.Sync(g.stream)
}

// empty times n launches of the kit's empty kernel.
func (g *gpuRig) empty(sw *stopwatch, n int) error {
	sw.StartTimer()
	for i := 0; i < n; i++ {
		if err := g.kit.Empty(g.stream); err != nil {
			return err
		}
		if i%1024 == 1023 {
			sw.StopTimer() // keep the launch queue from filling, which would time queue waits
			_ = g.kit.Sync(g.stream)
			sw.StartTimer()
		}
	}
	sw.StopTimer()
	return g.kit.Sync(g.stream)
}

// settle waits for the rig's stream, so every event recorded on it is
// complete.
func (g *gpuRig) settle() { _ = g.kit.Sync(g.stream) }

func (g *gpuRig) close() {
	_ = g.kit.Sync(g.stream)
	for i := 0; i < 100; i++ {
		if err := g.pool.Close(); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	_ = g.kit.DestroyStream(g.stream)
	_ = g.kit.Close()
}

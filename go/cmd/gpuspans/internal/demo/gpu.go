package demo

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/cuda/cudakit"
)

// GPU is what the demo engine needs from a GPU: one stream to launch
// kernels of chosen durations on, one graph captured on it and replayed,
// and a pool opener for the hub. The engine calls it from its one
// goroutine; implementations need not be safe for concurrent use, except
// Opener's pools, which follow backend.Pool's rules.
type GPU interface {
	// Describe says what runs the kernels, for the first output line and
	// the live page.
	Describe() string
	// Device is the device ordinal, for Hub.Install.
	Device() int
	// Stream is the stream kernels, graphs and lane spans go on.
	Stream() backend.Stream
	// Opener opens the hub's event pool of slots pairs on this GPU.
	Opener() backend.Opener
	// Tracer opens the kernel tracer that sees this GPU's kernels: CUPTI,
	// or the simulator's.
	Tracer() backend.TracerOpener
	// Launch queues a kernel called name that runs for d on the stream
	// (a real GPU runs the kit's spin kernel, whatever the name).
	Launch(name string, d time.Duration) error
	// BeginCapture starts capturing the stream into a graph; launches then
	// become graph nodes and run nothing. EndCapture ends it and makes the
	// graph executable; Replay launches it on the stream.
	BeginCapture() error
	EndCapture() error
	Replay() error
	// Wait returns once the stream's queued work is done, as an engine does
	// when it reads back a step's tokens. (gpuspans itself never waits.)
	Wait() error
	// Close releases the stream and graph. Call it after the hub's pool on
	// this GPU is closed.
	Close() error
}

// simGPU runs the demo on the simulated GPU, with the simulator's kernel
// tracer. The simulator keeps its queue to itself, so simGPU tracks when
// the stream's work ends for Wait.
type simGPU struct {
	gpu       *sim.GPU
	tracer    *sim.Tracer
	stream    backend.Stream
	device    int
	busyUntil time.Time
	capturing bool
	nodes     []sim.GraphKernel // the captured launches
	captured  bool
}

// simGraph is the id the tracer gives the captured graph's kernels.
const simGraph = 1

// NewSimGPU returns a simulated GPU with device ordinal device, on the host
// clock. Safe from any goroutine; the GPU follows the GPU interface's rules.
func NewSimGPU(device int) GPU {
	t := sim.NewTracer()
	g := sim.New(sim.Options{Device: device, Tracer: t})
	return &simGPU{gpu: g, tracer: t, stream: g.NewStream(), device: device}
}

func (s *simGPU) Describe() string       { return "simulated GPU" }
func (s *simGPU) Device() int            { return s.device }
func (s *simGPU) Stream() backend.Stream { return s.stream }
func (s *simGPU) Opener() backend.Opener { return s.gpu.Opener() }

// Tracer opens the simulator's tracer, which records the kernels as the
// simulator runs them.
func (s *simGPU) Tracer() backend.TracerOpener { return s.tracer.Opener() }

func (s *simGPU) Launch(name string, d time.Duration) error {
	s.gpu.LaunchKernel(s.stream, d, name, 0)
	if s.capturing {
		s.nodes = append(s.nodes, sim.GraphKernel{Name: name, Duration: d})
		return nil
	}
	s.queue(d)
	return nil
}

// queue mirrors the simulator's queue: work starts when the stream is free.
func (s *simGPU) queue(d time.Duration) {
	now := time.Now()
	if s.busyUntil.Before(now) {
		s.busyUntil = now
	}
	s.busyUntil = s.busyUntil.Add(d)
}

func (s *simGPU) BeginCapture() error {
	if s.capturing {
		return errors.New("sim: capture already in progress")
	}
	s.gpu.BeginCapture(s.stream)
	s.capturing, s.nodes = true, s.nodes[:0]
	return nil
}

func (s *simGPU) EndCapture() error {
	if !s.capturing {
		return errors.New("sim: no capture in progress")
	}
	s.gpu.EndCapture(s.stream)
	s.capturing, s.captured = false, true
	return nil
}

// Replay queues the graph's launches back to back, as its nodes run, by
// one launch call.
func (s *simGPU) Replay() error {
	if !s.captured {
		return errors.New("sim: no graph captured")
	}
	s.gpu.LaunchGraph(s.stream, simGraph, s.nodes)
	for _, n := range s.nodes {
		s.queue(n.Duration)
	}
	return nil
}

func (s *simGPU) Wait() error {
	time.Sleep(time.Until(s.busyUntil))
	return nil
}

func (s *simGPU) Close() error { return nil }

// cudaGPU runs the demo on a real GPU through the GPU kit (go/cuda/cudakit):
// %globaltimer spin kernels of the chosen durations on a stream of its own.
type cudaGPU struct {
	kit       *cudakit.Kit
	device    int
	stream    backend.Stream
	capturing bool
	graph     cudakit.Graph
	exec      cudakit.GraphExec
	closeOnce sync.Once
}

// NewCUDAGPU opens device through the CUDA driver: it loads the driver,
// checks the device exists, and makes the kit and a stream. Errors wrap
// backend.ErrNoDriver when there is no driver (or no cgo). Safe from any
// goroutine; the GPU follows the GPU interface's rules.
func NewCUDAGPU(device int) (GPU, error) {
	if err := cuda.Load(); err != nil {
		return nil, err
	}
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, err
	}
	if device < 0 || device >= n {
		return nil, fmt.Errorf("CUDA device %d: the driver sees %d device(s)", device, n)
	}
	kit, stream, err := cudakit.NewKitStream(device)
	if err != nil {
		return nil, err
	}
	return &cudaGPU{kit: kit, device: device, stream: stream}, nil
}

func (c *cudaGPU) Describe() string       { return fmt.Sprintf("CUDA device %d", c.device) }
func (c *cudaGPU) Device() int            { return c.device }
func (c *cudaGPU) Stream() backend.Stream { return c.stream }
func (c *cudaGPU) Opener() backend.Opener { return cuda.Opener(c.device) }

// Tracer opens CUPTI ($GPUSPANS_CUPTI, a libcupti already loaded, the
// toolkit's).
func (c *cudaGPU) Tracer() backend.TracerOpener           { return cuda.TracerOpener("") }
func (c *cudaGPU) Launch(_ string, d time.Duration) error { return c.kit.Spin(c.stream, d, nil) }

// BeginCapture captures in CaptureGlobal mode, the strictest: any unsafe
// driver call from any thread would invalidate it, so a capture that ends
// cleanly shows that nothing gpuspans did meanwhile broke it. The mode ties
// the capture to this OS thread until EndCapture.
func (c *cudaGPU) BeginCapture() error {
	if c.capturing {
		return errors.New("cuda: capture already in progress")
	}
	runtime.LockOSThread()
	if err := c.kit.CaptureBegin(c.stream, cudakit.CaptureGlobal); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	c.capturing = true
	return nil
}

func (c *cudaGPU) EndCapture() error {
	if !c.capturing {
		return errors.New("cuda: no capture in progress")
	}
	g, err := c.kit.CaptureEnd(c.stream)
	c.capturing = false
	runtime.UnlockOSThread()
	if err != nil {
		return fmt.Errorf("the capture broke: %w", err)
	}
	x, err := c.kit.Instantiate(g)
	if err != nil {
		_ = c.kit.DestroyGraph(g)
		return err
	}
	c.graph, c.exec = g, x
	return nil
}

func (c *cudaGPU) Replay() error {
	if c.exec == 0 {
		return errors.New("cuda: no graph captured")
	}
	return c.kit.Launch(c.exec, c.stream)
}

func (c *cudaGPU) Wait() error { return c.kit.Sync(c.stream) }

// Close waits for the stream, then destroys the graph, the stream and the
// kit, returning the first error. Calling it again does nothing.
func (c *cudaGPU) Close() error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	c.closeOnce.Do(func() {
		keep(c.kit.Sync(c.stream))
		if c.exec != 0 {
			keep(c.kit.DestroyGraphExec(c.exec))
		}
		if c.graph != 0 {
			keep(c.kit.DestroyGraph(c.graph))
		}
		keep(c.kit.DestroyStream(c.stream))
		keep(c.kit.Close())
	})
	return first
}

// Backend choices for OpenGPU.
const (
	BackendAuto = "auto" // CUDA when a driver and the device are there, else the simulator
	BackendSim  = "sim"
	BackendCUDA = "cuda"
)

// OpenGPU opens the GPU backend names. It returns the GPU and a line for
// the user saying what was chosen and, for auto, why. Safe from any
// goroutine.
func OpenGPU(backendName string, device int) (GPU, string, error) {
	switch backendName {
	case BackendSim:
		return NewSimGPU(device), "using the simulated GPU (--backend=sim)", nil
	case BackendCUDA:
		g, err := NewCUDAGPU(device)
		if err != nil {
			return nil, "", fmt.Errorf("--backend=cuda: %w", err)
		}
		return g, fmt.Sprintf("using %s: real spin kernels on a stream, and a CUDA graph replayed each step", g.Describe()), nil
	case BackendAuto, "":
		g, err := NewCUDAGPU(device)
		if err == nil {
			return g, fmt.Sprintf("CUDA driver found; using %s: real spin kernels on a stream, and a CUDA graph replayed each step", g.Describe()), nil
		}
		why := "no CUDA driver"
		if !errors.Is(err, backend.ErrNoDriver) {
			why = "CUDA unusable"
		}
		return NewSimGPU(device), fmt.Sprintf("%s (%v); using the simulated GPU", why, err), nil
	}
	return nil, "", fmt.Errorf("unknown backend %q: want auto, sim or cuda", backendName)
}

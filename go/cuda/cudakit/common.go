// Package cudakit gives spans known GPU work: streams, a %globaltimer spin
// kernel, an empty kernel and graph capture, through the CUDA driver that
// go/cuda loads (//cuda:kit). The demo's GPU workload, benchmarks and GPU
// tests use it; the library never imports it (tools/ci/checks.sh).
//
// It imports "C" itself and compiles the kit, which calls into the core
// that go/cuda links. Built without cgo it keeps its API: NewKit reports
// backend.ErrNoDriver.
package cudakit

import "github.com/gpuspans/gpuspans/go/backend"

// CaptureMode is a CUDA stream capture mode (CUstreamCaptureMode).
type CaptureMode int32

// Capture modes; values match the driver's.
const (
	CaptureGlobal      CaptureMode = 0 // unsafe calls from any thread break the capture
	CaptureThreadLocal CaptureMode = 1 // only this thread's unsafe calls do
	CaptureRelaxed     CaptureMode = 2 // no call is checked
)

// Graph is a captured CUDA graph (CUgraph) as an integer.
type Graph uint64

// GraphExec is an instantiated CUDA graph (CUgraphExec) as an integer.
type GraphExec uint64

// NewKitStream is NewKit and a stream of the kit's: what a benchmark or a
// demo on one stream starts with. On error nothing is left open.
func NewKitStream(device int) (*Kit, backend.Stream, error) {
	k, err := NewKit(device)
	if err != nil {
		return nil, 0, err
	}
	s, err := k.NewStream()
	if err != nil {
		_ = k.Close()
		return nil, 0, err
	}
	return k, s, nil
}

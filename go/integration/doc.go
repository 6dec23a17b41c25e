// Package integration holds the integration tests of gpuspans: tests that
// drive a hub end to end across packages. It has no API of its own.
//
// The rule: a test lives here when what it checks is the hub at work on
// the real parts beneath or around it, a hub on go/cuda and the C++ core
// (through the fake driver, the fake CUPTI or the GPU) or a hub behind the
// HTTP surface under load; a test of one package's own code stays beside
// that code even where a hub drives it (go/cuda's driver loading, cuda.Pool
// and cuda.Tracer), and the hub's policy alone is go/gpuspans's, over
// go/backend/fake.
//
// What is here:
//
//   - hub_fake_test.go: faults from the C++ fake driver, end to end.
//   - tracer_fake_test.go: kernel windows and the tracer's fallbacks, on
//     cuda.Tracer and the C++ core's record parsing with the fake CUPTI.
//   - load_test.go, soak_test.go: the served stack (/metrics, the live page,
//     the control endpoints over loopback) on the simulated GPU under load,
//     and a soak of ten million spans with memory sampled, behind -soak.
//   - *_gpu_test.go: the same on a real GPU (hub_gpu_test.go,
//     kernelwindows_gpu_test.go), skipped unless GPUSPANS_GPU=1.
//
// The tests on the fakes need cgo (they are built with it only); the load
// and soak tests need none. Each is short enough for CI by default; the
// long modes:
//
//	go test ./go/integration -run TestLoad -load.duration=60s -v
//	go test ./go/integration -run TestSoak -soak -v -timeout=30m
//
// The GPU tests run on a GPU machine: under Bazel the target
// //go/integration:integration_gpu_test, tagged "gpu", runs them (bazel
// test --config=gpu; plain bazel test skips the tag); tools/gpu/stage.sh
// stages it, or with --plain builds the package's test binary with go test
// -c, and tools/gpu/run.sh runs it there. With go alone, on a machine with
// a GPU:
//
//	GPUSPANS_GPU=1 go test ./go/integration -run GPU -v -count=1
package integration

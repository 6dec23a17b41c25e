// Package reliability holds the end-to-end reliability tests of gpuspans,
// those that need the hub, a backend and the exporters together: load (spans
// far past the ring on every step, many goroutines, and /metrics, the live
// page and the control endpoints used over loopback while the engine runs on
// the simulated GPU) and soak (ten million spans with memory sampled, behind
// the -soak flag). It has no API of its own. Each test is short enough for
// CI by default; the long modes:
//
//	go test ./go/gpuspanshttp/reliability -run TestLoad -load.duration=60s -v
//	go test ./go/gpuspanshttp/reliability -run TestSoak -soak -v -timeout=30m
package reliability

package overhead

import (
	"runtime"
	"time"
)

// stopwatch times a run's measured parts and counts their allocations, as
// testing.B's timer does, without package testing: a library must not
// import it (it registers flags and reads the process-wide benchtime).
// It implements loop.Timer.
type stopwatch struct {
	running bool
	start   time.Time
	mallocs uint64 // at the last start
	elapsed time.Duration
	allocs  uint64
	ms      runtime.MemStats
}

// StartTimer starts or resumes timing; a no-op while timing.
func (s *stopwatch) StartTimer() {
	if s.running {
		return
	}
	runtime.ReadMemStats(&s.ms)
	s.mallocs = s.ms.Mallocs
	s.running = true
	s.start = time.Now()
}

// StopTimer pauses timing; a no-op while paused.
func (s *stopwatch) StopTimer() {
	if !s.running {
		return
	}
	s.elapsed += time.Since(s.start)
	runtime.ReadMemStats(&s.ms)
	s.allocs += s.ms.Mallocs - s.mallocs
	s.running = false
}

// runFunc is one run of a row: n ops, with sw started (by runFunc, once its
// untimed set-up is done) around what is measured.
type runFunc func(sw *stopwatch, n int) error

// maxOps bounds a run's ops, as testing does.
const maxOps = 1e9

// result is a row's figures from its last run.
type result struct {
	nsOp   float64
	allocs int64 // per op, rounded down as testing's AllocsPerOp does
}

// timed runs f for n ops.
func timed(f runFunc, n int) (*stopwatch, error) {
	runtime.GC() // a collection owed by an earlier run is not this one's cost
	sw := new(stopwatch)
	err := f(sw, n)
	sw.StopTimer()
	return sw, err
}

// perOp is the figures of a run of n ops.
func (s *stopwatch) perOp(n int) result {
	return result{nsOp: float64(s.elapsed.Nanoseconds()) / float64(n), allocs: int64(s.allocs / uint64(n))}
}

// once runs f for n ops and returns its figures.
func once(f runFunc, n int) (result, error) {
	sw, err := timed(f, n)
	if err != nil {
		return result{}, err
	}
	return sw.perOp(n), nil
}

// measure runs f with a growing op count until one run's measured time
// lasts at least d, and returns that run's figures.
func measure(f runFunc, d time.Duration) (result, error) {
	for n := 1; ; {
		sw, err := timed(f, n)
		if err != nil {
			return result{}, err
		}
		if sw.elapsed >= d || n >= maxOps {
			return sw.perOp(n), nil
		}
		n = nextOps(n, sw.elapsed, d)
	}
}

// nextOps predicts the op count of a run that lasts d from one of n ops
// that took took, aiming 20% past d, growing at least by one and at most
// a hundredfold, as testing does.
func nextOps(n int, took, d time.Duration) int {
	if took <= 0 {
		took = 1
	}
	next := int64(1.2 * float64(d) * float64(n) / float64(took))
	if next > 100*int64(n) {
		next = 100 * int64(n)
	}
	if next <= int64(n) {
		next = int64(n) + 1
	}
	if next > maxOps {
		next = maxOps
	}
	return int(next)
}

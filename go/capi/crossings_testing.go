//go:build cgo && gpuspans_testing

package main

/*
#include <stdint.h>
*/
import "C"

import (
	"sync/atomic"

	// The fake CUDA driver, whose gs_testing_* functions (gpuspans_testing.h)
	// the tests' library then exports: testdata/spanpath_test.c installs
	// devices on it.
	_ "github.com/gpuspans/gpuspans/go/cuda/cudatest"
)

// The test hooks, built only with -tags gpuspans_testing (the C and Python
// tests' library): counting proves that a disabled path made no call.
var (
	countCrossings atomic.Bool
	crossings      atomic.Uint64
)

// cross counts a call from C when a test asked for it.
func cross() {
	if countCrossings.Load() {
		crossings.Add(1)
	}
}

//export gs_hub_testing_count_crossings
func gs_hub_testing_count_crossings(on C.int32_t) { countCrossings.Store(on != 0) }

//export gs_hub_testing_crossings
func gs_hub_testing_crossings() C.uint64_t { return C.uint64_t(crossings.Load()) }

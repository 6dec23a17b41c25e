//go:build cgo

// Command capi is the C ABI of the gpuspans hub: built with
// -buildmode=c-archive or c-shared, it lets engines in C, C++ and Python
// (ctypes, python/gpuspans) drive a gpuspans.Hub, install CUDA or simulated
// devices, record spans, take snapshots and serve the HTTP surface. The
// functions are documented in include/gpuspans/hub.h, the header callers
// include (not the one go build writes).
//
// It is the one Go package besides go/cuda (and go/cuda/cudatest, test
// support) that imports "C": exported Go functions can only live in a cgo
// package main. Its own C code is the array of state words (words.c),
// which must be C memory: the header's inline span functions read it
// without calling into Go; and the span path (spanpath.c, published to by
// spanpath.go), which records steps and lane spans on the hub's own ring
// words without entering Go (docs/design.md, the C span path).
//
// Rules every export follows: handles are integers checked against a table
// (never Go pointers handed to C), each call on a hub is counted while it
// runs so that gs_hub_close can wait for it (close may race any call), a
// panic is recovered into GS_HUB_ERR_INTERNAL, sizes from C are never
// converted to int before they are bounded, and errors are returned as
// status codes with the message (bounded) kept for gs_hub_last_error.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/include -I${SRCDIR}/../../cuda/include
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

func main() {}

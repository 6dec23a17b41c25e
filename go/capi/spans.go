//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

import (
	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// The span calls' Go paths: each checks its handle and calls the hub's
// method once. The inline functions of the header make a call only when
// the state word says there is work; the step and lane calls go to
// spanpath.c, which sends here only what it leaves to Go.

//export gs_hub_begin_step_go
func gs_hub_begin_step_go(handle C.gs_hub) C.gs_hub_status {
	return onHub("gs_hub_begin_step", handle, func(c call) C.gs_hub_status {
		c.e.h.BeginStep()
		return statusOK
	})
}

//export gs_hub_lane_begin_go
func gs_hub_lane_begin_go(handle C.gs_hub, lane C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_lane_begin", handle, func(c call) C.gs_hub_status {
		c.e.h.LaneBegin(int(lane))
		return statusOK
	})
}

//export gs_hub_lane_end_go
func gs_hub_lane_end_go(handle C.gs_hub, lane C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_lane_end", handle, func(c call) C.gs_hub_status {
		c.e.h.LaneEnd(int(lane))
		return statusOK
	})
}

//export gs_hub_next_lane_go
func gs_hub_next_lane_go(handle C.gs_hub, from, to C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_next_lane", handle, func(c call) C.gs_hub_status {
		c.e.h.NextLane(int(from), int(to))
		return statusOK
	})
}

//export gs_hub_next_step_go
func gs_hub_next_step_go(handle C.gs_hub, last, first C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_next_step", handle, func(c call) C.gs_hub_status {
		c.e.h.NextStep(int(last), int(first))
		return statusOK
	})
}

//export gs_hub_kernel_begin_go
func gs_hub_kernel_begin_go(handle C.gs_hub, device C.int32_t, kernel, stream C.uint64_t) (tok C.uint64_t) {
	// The token is the result; a failure (0) is recorded as the others'.
	onHub("gs_hub_kernel_begin", handle, func(c call) C.gs_hub_status {
		if device < -1 || device >= gpuspans.MaxDevices {
			return c.fail(statusInvalidArgument, "device %d, want -1 (the lane stream's) or 0..%d", int(device), gpuspans.MaxDevices-1)
		}
		tok = C.uint64_t(c.e.tokens.begin(c.e.h, int(device), uint64(kernel), backend.Stream(stream)))
		return statusOK
	})
	return tok
}

//export gs_hub_kernel_end_go
func gs_hub_kernel_end_go(handle C.gs_hub, token C.uint64_t) C.gs_hub_status {
	return onHub("gs_hub_kernel_end", handle, func(c call) C.gs_hub_status {
		if !c.e.tokens.mine(uint64(token)) {
			return c.fail(statusInvalidArgument, "token %d is not a kernel span open on this hub: it carries another hub's tag (from another hub, or made up)", uint64(token))
		}
		sp, ok := c.e.tokens.end(uint64(token))
		if !ok {
			return c.fail(statusInvalidArgument, "token %d is not a kernel span open on this hub (ended already, reclaimed as leaked, or not from gs_hub_kernel_begin)", uint64(token))
		}
		c.e.h.KernelEnd(sp)
		return statusOK
	})
}

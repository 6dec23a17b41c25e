//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

import (
	"context"
	"math"
	"time"

	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Control: the level, kernel timing and windows, the arming period, and
// harvests.

//export gs_hub_set_level_go
func gs_hub_set_level_go(handle C.gs_hub, level C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_set_level", handle, func(c call) C.gs_hub_status {
		if level < 0 || level > C.GS_HUB_LEVEL_KERNEL {
			return c.fail(statusInvalidArgument, "level %d, want GS_HUB_LEVEL_OFF (0), _STEP (1) or _KERNEL (2)", int(level))
		}
		if err := c.e.h.SetLevel(gpuspans.Level(level)); err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		return statusOK
	})
}

//export gs_hub_get_level_go
func gs_hub_get_level_go(handle C.gs_hub, level *C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_get_level", handle, func(c call) C.gs_hub_status {
		if level == nil {
			return c.fail(statusInvalidArgument, "level is NULL")
		}
		*level = C.int32_t(c.e.h.Level())
		return statusOK
	})
}

//export gs_hub_set_kernel_timing_go
func gs_hub_set_kernel_timing_go(handle C.gs_hub, timing C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_set_kernel_timing", handle, func(c call) C.gs_hub_status {
		if timing < 0 || timing > C.GS_HUB_KERNEL_TIMING_ATTACHED {
			return c.fail(statusInvalidArgument, "timing %d, want GS_HUB_KERNEL_TIMING_EVENTS (0), _AUTO (1), _CUPTI (2) or _ATTACHED (3)", int(timing))
		}
		if err := c.e.h.SetKernelTiming(gpuspans.KernelTiming(timing)); err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		return statusOK
	})
}

//export gs_hub_get_kernel_timing_go
func gs_hub_get_kernel_timing_go(handle C.gs_hub, timing, tracing *C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_get_kernel_timing", handle, func(c call) C.gs_hub_status {
		s := c.e.h.KernelTimingStatus()
		if timing != nil {
			*timing = C.int32_t(s.Mode)
		}
		if tracing != nil {
			*tracing = 0
			if s.Tracing {
				*tracing = 1
			}
		}
		return statusOK
	})
}

//export gs_hub_set_kernel_windows_go
func gs_hub_set_kernel_windows_go(handle C.gs_hub, everyNs C.int64_t, steps C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_set_kernel_windows", handle, func(c call) C.gs_hub_status {
		if err := c.e.h.SetKernelWindows(time.Duration(everyNs), int(steps)); err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		return statusOK
	})
}

//export gs_hub_request_kernel_window_go
func gs_hub_request_kernel_window_go(handle C.gs_hub) C.gs_hub_status {
	return onHub("gs_hub_request_kernel_window", handle, func(c call) C.gs_hub_status {
		if err := c.e.h.RequestKernelWindow(); err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		return statusOK
	})
}

//export gs_hub_set_kernel_span_every_go
func gs_hub_set_kernel_span_every_go(handle C.gs_hub, n C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_set_kernel_span_every", handle, func(c call) C.gs_hub_status {
		if err := c.e.h.SetKernelSpanEvery(int(n)); err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		return statusOK
	})
}

//export gs_hub_harvest_go
func gs_hub_harvest_go(handle C.gs_hub) C.gs_hub_status {
	return onHub("gs_hub_harvest", handle, func(c call) C.gs_hub_status {
		c.e.h.Harvest()
		return statusOK
	})
}

//export gs_hub_start_harvester_go
func gs_hub_start_harvester_go(handle C.gs_hub, intervalUs C.int64_t) C.gs_hub_status {
	return onHub("gs_hub_start_harvester", handle, func(c call) C.gs_hub_status {
		if intervalUs < 1 || intervalUs > 1_000_000 {
			return c.fail(statusInvalidArgument, "interval_us %d, want 1..1000000", int64(intervalUs))
		}
		c.e.mu.Lock()
		defer c.e.mu.Unlock()
		if c.e.harvestStop != nil {
			return c.fail(statusLimit, "a harvester runs already on this hub; stop it first")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		c.e.harvestStop, c.e.harvestDone = cancel, done
		go func() {
			defer close(done)
			_ = c.e.h.RunHarvester(ctx, time.Duration(intervalUs)*time.Microsecond)
		}()
		return statusOK
	})
}

//export gs_hub_stop_harvester_go
func gs_hub_stop_harvester_go(handle C.gs_hub) C.gs_hub_status {
	return onHub("gs_hub_stop_harvester", handle, func(c call) C.gs_hub_status {
		c.e.stopHarvester()
		return statusOK
	})
}

// stopHarvester stops the background harvester, if one runs, and waits for
// it to return.
func (e *hub) stopHarvester() {
	e.mu.Lock()
	stop, done := e.harvestStop, e.harvestDone
	e.harvestStop, e.harvestDone = nil, nil
	e.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

//export gs_hub_start_profile_go
func gs_hub_start_profile_go(handle C.gs_hub, path, build *C.char, everyMs C.int64_t) C.gs_hub_status {
	return onHub("gs_hub_start_profile", handle, func(c call) C.gs_hub_status {
		p, st := goString(c, "path", path)
		if st != statusOK {
			return st
		}
		b, st := goString(c, "build", build)
		if st != statusOK {
			return st
		}
		if everyMs < 0 || int64(everyMs) > math.MaxInt64/int64(time.Millisecond) {
			return c.fail(statusInvalidArgument, "every_ms %d, want 0 (a minute) to %d (below a second counts as a second)", int64(everyMs), math.MaxInt64/int64(time.Millisecond))
		}
		o := gpuspans.ProfileOptions{Path: p, Build: b, Every: time.Duration(everyMs) * time.Millisecond}
		if err := o.Check(); err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		c.e.profMu.Lock()
		defer c.e.profMu.Unlock()
		stop, err := c.e.h.StartProfile(o) // checked: its one error left is a profile kept already
		if err != nil {
			return c.fail(statusLimit, "%v; stop it first", err)
		}
		c.e.stopProfile = stop
		return statusOK
	})
}

//export gs_hub_stop_profile_go
func gs_hub_stop_profile_go(handle C.gs_hub) C.gs_hub_status {
	return onHub("gs_hub_stop_profile", handle, func(c call) C.gs_hub_status {
		c.e.endProfile()
		return statusOK
	})
}

// endProfile writes the profile and stops keeping it, if one is kept.
func (e *hub) endProfile() {
	e.profMu.Lock()
	defer e.profMu.Unlock()
	if e.stopProfile != nil {
		e.stopProfile()
		e.stopProfile = nil
	}
}

//export gs_hub_drain_go
func gs_hub_drain_go(handle C.gs_hub, timeoutMs C.int32_t, inFlight *C.uint64_t) C.gs_hub_status {
	return onHub("gs_hub_drain", handle, func(c call) C.gs_hub_status {
		if timeoutMs < 0 {
			return c.fail(statusInvalidArgument, "timeout_ms is %d, want >= 0", int(timeoutMs))
		}
		n := drain(c.e.h, time.Duration(timeoutMs)*time.Millisecond, &c.e.closed)
		if inFlight != nil {
			*inFlight = C.uint64_t(n)
		}
		return statusOK
	})
}

//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

import (
	"context"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/optname"
	"github.com/gpuspans/gpuspans/go/internal/spanring"
)

// The hub's life: creating and closing it, the devices it records from,
// its kernels and lanes, and the errors every export records.

// Every function below is documented in include/gpuspans/hub.h.

//export gs_hub_last_error_go
func gs_hub_last_error_go(handle C.gs_hub, buf *C.char, capacity C.size_t) (n C.size_t) {
	cross()
	defer func() {
		if r := recover(); r != nil {
			panicked("gs_hub_last_error", nil, r)
			n = 0
		}
	}()
	var msg string
	if e := lookup(handle); e != nil {
		e.errMu.Lock()
		msg = e.lastErr
		e.errMu.Unlock()
	} else {
		globalErrMu.Lock()
		msg = globalErr
		globalErrMu.Unlock()
	}
	if buf != nil && capacity > 0 {
		// Only what is written is sliced: cap may be anything a C caller
		// passes ((size_t)-1 included), and no int conversion of it is safe.
		w := min(uint64(capacity)-1, uint64(len(msg)))
		dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), w+1)
		copy(dst, msg[:w])
		dst[w] = 0
	}
	return C.size_t(len(msg))
}

// slotCursor is where the search for a free slot starts, so that a closed
// hub's slot (and handle's low bits) is reused as late as possible.
var slotCursor int

//export gs_hub_create_go
func gs_hub_create_go(opts *C.gs_hub_options, out *C.gs_hub) (st C.gs_hub_status) {
	cross()
	defer recoverTo("gs_hub_create", nil, &st)
	if out == nil {
		return fail(nil, statusInvalidArgument, "gs_hub_create: out is NULL")
	}
	o, quiet, err := hubOptions(opts)
	if err != nil {
		return fail(nil, statusInvalidArgument, "gs_hub_create: %v", err)
	}
	cPath, err := spanPathChoice()
	if err != nil {
		return fail(nil, statusInvalidArgument, "gs_hub_create: %v", err)
	}
	// The handle is known only below; the sink reads it at delivery.
	logs := newLogSink(0, quiet)
	o.Logf = logs.logf(C.GS_HUB_LOG_WARNING) // the rare events: pool failures, sticky errors
	o.KernelTracer = cuda.TracerOpener("")   // for kernel timings other than events

	tableMu.Lock()
	defer tableMu.Unlock()
	slot := -1
	for i := 1; i <= maxHubs; i++ {
		if s := (slotCursor + i) % maxHubs; table[s].Load() == nil {
			slot = s
			break
		}
	}
	if slot < 0 {
		return fail(nil, statusLimit, "gs_hub_create: %d hubs are open already (GS_HUB_MAX_HUBS); close one first", maxHubs)
	}
	o.StateMirror = wordOf(slot)
	h, err := gpuspans.New(o)
	if err != nil {
		// New wrote nothing to the word: it fails before publishing. Its
		// message names the field as gs_hub_options does.
		return fail(nil, statusInvalidArgument, "gs_hub_create: %s", optname.Rewrite(err.Error(), cName))
	}
	slotCursor = slot
	gens[slot]++
	e := &hub{
		handle:  gens[slot]*maxHubs + uint64(slot),
		h:       h,
		word:    o.StateMirror,
		logs:    logs,
		sims:    map[int]*sim.GPU{},
		cudaDev: map[int]bool{},
	}
	e.closing, e.closeCancel = context.WithCancel(context.Background())
	e.tokens.tag = (e.handle & 0xffff) << tokenHubShift
	logs.handle = e.handle // before the hub is published: no callback can be set earlier
	if cPath {
		e.spans = newSpanPath(slot)
		spanring.Attach(h, e.spans)
	}
	table[slot].Store(e)
	if e.spans != nil {
		e.spans.open(e.handle)
	}
	*out = C.gs_hub(e.handle)
	return statusOK
}

//export gs_hub_close_go
func gs_hub_close_go(handle C.gs_hub) (st C.gs_hub_status) {
	cross()
	e := lookup(handle)
	if e == nil {
		return badHandle("gs_hub_close", handle)
	}
	defer recoverTo("gs_hub_close", e, &st)
	// The handle stops working at once, but the slot stays taken until the
	// hub has stopped writing its word, so a hub created meanwhile cannot
	// get the slot and see its word overwritten.
	if !e.closed.CompareAndSwap(false, true) {
		return badHandle("gs_hub_close", handle)
	}
	// Closing the server first ends its connections, so that requests
	// blocked reading a body return; then every call that entered before
	// closed was set finishes (each is short: gs_hub_drain stops early for a
	// closed hub), and a server that a racing gs_hub_serve started
	// meanwhile is closed by the second stopServing. Nothing runs on the
	// hub after that but close itself.
	e.closeCancel() // an OTLP stop on another thread stops sending
	if e.spans != nil {
		e.spans.shut() // lane calls in C leave; later ones go to Go, which refuses them
	}
	e.stopServing()
	for e.calls.Load() != 0 {
		time.Sleep(50 * time.Microsecond)
	}
	e.stopServing()
	e.stopHarvester()
	// On the stepping thread (the usual close) a window detaches here; on
	// another, it is abandoned, attached, rather than detached under that
	// thread's launches.
	_ = e.h.CloseKernelTracer()
	_ = e.h.SetLevel(gpuspans.LevelOff)
	for d := 0; d < gpuspans.MaxDevices; d++ {
		e.h.Uninstall(d)
	}
	drain(e.h, time.Second, nil)
	e.endProfile()              // its last write has the windows the drain analysed
	_ = e.stopOTLP(time.Second) // sends what landed; a failure is counted and logged by the exporter
	e.logs.close()              // delivers what is queued; the callback is not called after close
	if e.spans != nil {
		e.spans.release()
	}
	tableMu.Lock()
	atomicStoreWord(e.word, 0)
	table[e.handle%maxHubs].Store(nil)
	tableMu.Unlock()
	return statusOK
}

// drain harvests until nothing is in flight, d passed or stop (may be nil)
// says so, and returns what is still in flight.
func drain(h *gpuspans.Hub, d time.Duration, stop *atomic.Bool) uint64 {
	limit := time.Now().Add(d)
	for {
		h.Harvest()
		n := h.Snapshot().Counters.InFlight
		if n == 0 || !time.Now().Before(limit) || stop != nil && stop.Load() {
			return n
		}
		time.Sleep(time.Millisecond)
	}
}

// checkDevice validates a device ordinal argument of c.
func checkDevice(c call, device C.int32_t) (int, C.gs_hub_status) {
	if device < 0 || device >= gpuspans.MaxDevices {
		return 0, c.fail(statusInvalidArgument, "device %d outside 0..%d", int(device), gpuspans.MaxDevices-1)
	}
	return int(device), statusOK
}

//export gs_hub_install_cuda_go
func gs_hub_install_cuda_go(handle C.gs_hub, device C.int32_t, stream C.uint64_t) C.gs_hub_status {
	return onHub("gs_hub_install_cuda", handle, func(c call) C.gs_hub_status {
		dev, st := checkDevice(c, device)
		if st != statusOK {
			return st
		}
		c.e.mu.Lock()
		defer c.e.mu.Unlock()
		if err := c.e.h.Install(dev, backend.Stream(stream), cuda.Opener(dev)); err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		delete(c.e.sims, dev)
		c.e.cudaDev[dev] = true
		return statusOK
	})
}

//export gs_hub_install_sim_go
func gs_hub_install_sim_go(handle C.gs_hub, device C.int32_t, stream C.uint64_t, offsetNs C.int64_t) C.gs_hub_status {
	return onHub("gs_hub_install_sim", handle, func(c call) C.gs_hub_status {
		dev, st := checkDevice(c, device)
		if st != statusOK {
			return st
		}
		if offsetNs < 0 {
			return c.fail(statusInvalidArgument, "event_offset_ns is %d, want >= 0", int64(offsetNs))
		}
		g := sim.New(sim.Options{Device: dev, EventOffset: time.Duration(offsetNs)})
		c.e.mu.Lock()
		defer c.e.mu.Unlock()
		if err := c.e.h.Install(dev, backend.Stream(stream), g.Opener()); err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		delete(c.e.cudaDev, dev)
		c.e.sims[dev] = g
		return statusOK
	})
}

//export gs_hub_sim_launch_go
func gs_hub_sim_launch_go(handle C.gs_hub, device C.int32_t, stream C.uint64_t, durationNs C.int64_t) C.gs_hub_status {
	return onHub("gs_hub_sim_launch", handle, func(c call) C.gs_hub_status {
		if durationNs < 0 {
			return c.fail(statusInvalidArgument, "duration_ns is %d, want >= 0", int64(durationNs))
		}
		c.e.mu.Lock()
		g := c.e.sims[int(device)]
		c.e.mu.Unlock()
		if g == nil {
			return c.fail(statusInvalidArgument, "device %d is not a simulated device (install one with gs_hub_install_sim)", int(device))
		}
		g.Launch(backend.Stream(stream), time.Duration(durationNs))
		return statusOK
	})
}

//export gs_hub_uninstall_go
func gs_hub_uninstall_go(handle C.gs_hub, device C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_uninstall", handle, func(c call) C.gs_hub_status {
		dev, st := checkDevice(c, device)
		if st != statusOK {
			return st
		}
		c.e.mu.Lock()
		defer c.e.mu.Unlock()
		c.e.h.Uninstall(dev)
		delete(c.e.sims, dev)
		delete(c.e.cudaDev, dev)
		return statusOK
	})
}

// goString reads the C string argument named arg of c; NULL is an error.
func goString(c call, arg string, s *C.char) (string, C.gs_hub_status) {
	if s == nil {
		return "", c.fail(statusInvalidArgument, "%s is NULL", arg)
	}
	return C.GoString(s), statusOK
}

//export gs_hub_register_kernel_go
func gs_hub_register_kernel_go(handle C.gs_hub, kernel C.uint64_t, name *C.char) C.gs_hub_status {
	return onHub("gs_hub_register_kernel", handle, func(c call) C.gs_hub_status {
		n, st := goString(c, "name", name)
		if st != statusOK {
			return st
		}
		if err := c.e.h.RegisterKernel(uint64(kernel), n); err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		return statusOK
	})
}

//export gs_hub_lane_index_go
func gs_hub_lane_index_go(handle C.gs_hub, name *C.char, lane *C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_lane_index", handle, func(c call) C.gs_hub_status {
		n, st := goString(c, "name", name)
		if st != statusOK {
			return st
		}
		if lane == nil {
			return c.fail(statusInvalidArgument, "lane is NULL")
		}
		i, ok := c.e.h.LaneIndex(n)
		if !ok {
			return c.fail(statusInvalidArgument, "no lane %q (lanes: %s)", truncate(n, 64), strings.Join(c.e.h.Lanes(), ", "))
		}
		*lane = C.int32_t(i)
		return statusOK
	})
}

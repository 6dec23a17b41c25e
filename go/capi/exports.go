//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/cuda"
	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/debugpage"
)

// Every function below is documented in include/gpuspans/hub.h.

// statusNames are C strings made once and never freed: gs_hub_status_name
// returns them.
var statusNames = func() map[int32]*C.char {
	m := map[int32]*C.char{}
	for st, name := range map[int32]string{
		statusOK:              "GS_HUB_OK",
		statusBadHandle:       "GS_HUB_ERR_BAD_HANDLE",
		statusInvalidArgument: "GS_HUB_ERR_INVALID_ARGUMENT",
		statusTooSmall:        "GS_HUB_ERR_TOO_SMALL",
		statusListen:          "GS_HUB_ERR_LISTEN",
		statusLimit:           "GS_HUB_ERR_LIMIT",
		statusInternal:        "GS_HUB_ERR_INTERNAL",
		-1:                    "GS_HUB_STATUS_UNKNOWN",
	} {
		m[st] = C.CString(name)
	}
	return m
}()

//export gs_hub_status_name
func gs_hub_status_name(st C.int32_t) (name *C.char) {
	cross()
	defer func() {
		if r := recover(); r != nil {
			panicked("gs_hub_status_name", nil, r)
			name = statusNames[-1]
		}
	}()
	if s, ok := statusNames[int32(st)]; ok {
		return s
	}
	return statusNames[-1]
}

//export gs_hub_last_error
func gs_hub_last_error(handle C.gs_hub, buf *C.char, capacity C.size_t) (n C.size_t) {
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

//export gs_hub_create
func gs_hub_create(opts *C.gs_hub_options, out *C.gs_hub) (st C.gs_hub_status) {
	cross()
	defer recoverTo("gs_hub_create", nil, &st)
	if out == nil {
		return fail(nil, statusInvalidArgument, "gs_hub_create: out is NULL")
	}
	var o gpuspans.Options
	quiet := false
	if opts != nil {
		n := int(opts.num_lanes)
		switch {
		case opts.lanes != nil:
			if n < 1 || n > gpuspans.MaxLanes {
				return fail(nil, statusInvalidArgument, "gs_hub_create: num_lanes is %d, want 1..%d", n, gpuspans.MaxLanes)
			}
			o.Lanes = make([]string, n)
			for i, p := range unsafe.Slice(opts.lanes, n) {
				if p == nil {
					return fail(nil, statusInvalidArgument, "gs_hub_create: lanes[%d] is NULL", i)
				}
				o.Lanes[i] = C.GoString(p)
			}
		case n != 0:
			return fail(nil, statusInvalidArgument, "gs_hub_create: num_lanes is %d but lanes is NULL", n)
		}
		if opts.level < 0 || opts.level > C.GS_HUB_LEVEL_KERNEL {
			return fail(nil, statusInvalidArgument, "gs_hub_create: level is %d, want GS_HUB_LEVEL_OFF (0), _STEP (1) or _KERNEL (2)", int(opts.level))
		}
		o.Level = gpuspans.Level(opts.level)
		o.KernelSpanEvery = int(opts.kernel_span_every)
		o.Slots = int(opts.slots)
		o.RecentSpans = int(opts.recent_spans)
		if opts.start_times < 0 || opts.start_times > C.GS_HUB_START_TIMES_ALWAYS {
			return fail(nil, statusInvalidArgument, "gs_hub_create: start_times is %d, want GS_HUB_START_TIMES_AUTO (0), _NEVER (1) or _ALWAYS (2)", int(opts.start_times))
		}
		o.StartTimes = gpuspans.StartTimes(opts.start_times)
		o.RawKernelSpans = opts.raw_kernel_spans != 0
		quiet = opts.quiet != 0
	}
	// The handle is known only below; the sink reads it at delivery.
	logs := newLogSink(0, quiet)
	o.Logf = logs.logf(C.GS_HUB_LOG_WARNING) // the rare events: pool failures, sticky errors
	// Kernel timing starts as events; gs_hub_set_kernel_timing picks CUPTI.
	o.KernelTracer = cuda.TracerOpener("")

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
		// New wrote nothing to the word: it fails before publishing.
		return fail(nil, statusInvalidArgument, "gs_hub_create: %v", err)
	}
	slotCursor = slot
	gens[slot]++
	e := &hub{
		handle:  gens[slot]*maxHubs + uint64(slot),
		h:       h,
		word:    o.StateMirror,
		slots:   o.Slots,
		logs:    logs,
		sims:    map[int]*sim.GPU{},
		cudaDev: map[int]bool{},
	}
	e.closing, e.closeCancel = context.WithCancel(context.Background())
	e.tokens.tag = (e.handle & 0xffff) << tokenHubShift
	logs.handle = e.handle // before the hub is published: no callback can be set earlier
	table[slot].Store(e)
	*out = C.gs_hub(e.handle)
	return statusOK
}

//export gs_hub_close
func gs_hub_close(handle C.gs_hub) (st C.gs_hub_status) {
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
	_ = e.stopOTLP(time.Second) // sends what landed; a failure is counted and logged by the exporter
	e.logs.close()              // delivers what is queued; the callback is not called after close
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

// checkDevice validates a device ordinal for op.
func checkDevice(e *hub, op string, device C.int32_t) (int, C.gs_hub_status) {
	if device < 0 || device >= gpuspans.MaxDevices {
		return 0, fail(e, statusInvalidArgument, "%s: device %d outside 0..%d", op, int(device), gpuspans.MaxDevices-1)
	}
	return int(device), statusOK
}

//export gs_hub_install_cuda
func gs_hub_install_cuda(handle C.gs_hub, device C.int32_t, stream C.uint64_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_install_cuda", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_install_cuda", e, &st)
	dev, st := checkDevice(e, "gs_hub_install_cuda", device)
	if st != statusOK {
		return st
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.h.Install(dev, backend.Stream(stream), cuda.Opener(dev)); err != nil {
		return fail(e, statusInvalidArgument, "gs_hub_install_cuda: %v", err)
	}
	delete(e.sims, dev)
	e.cudaDev[dev] = true
	return statusOK
}

//export gs_hub_install_sim
func gs_hub_install_sim(handle C.gs_hub, device C.int32_t, stream C.uint64_t, offsetNs C.int64_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_install_sim", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_install_sim", e, &st)
	dev, st := checkDevice(e, "gs_hub_install_sim", device)
	if st != statusOK {
		return st
	}
	if offsetNs < 0 {
		return fail(e, statusInvalidArgument, "gs_hub_install_sim: event_offset_ns is %d, want >= 0", int64(offsetNs))
	}
	g := sim.New(sim.Options{Device: dev, EventOffset: time.Duration(offsetNs)})
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.h.Install(dev, backend.Stream(stream), g.Opener()); err != nil {
		return fail(e, statusInvalidArgument, "gs_hub_install_sim: %v", err)
	}
	delete(e.cudaDev, dev)
	e.sims[dev] = g
	return statusOK
}

//export gs_hub_sim_launch
func gs_hub_sim_launch(handle C.gs_hub, device C.int32_t, stream C.uint64_t, durationNs C.int64_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_sim_launch", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_sim_launch", e, &st)
	if durationNs < 0 {
		return fail(e, statusInvalidArgument, "gs_hub_sim_launch: duration_ns is %d, want >= 0", int64(durationNs))
	}
	e.mu.Lock()
	g := e.sims[int(device)]
	e.mu.Unlock()
	if g == nil {
		return fail(e, statusInvalidArgument, "gs_hub_sim_launch: device %d is not a simulated device (install one with gs_hub_install_sim)", int(device))
	}
	g.Launch(backend.Stream(stream), time.Duration(durationNs))
	return statusOK
}

//export gs_hub_uninstall
func gs_hub_uninstall(handle C.gs_hub, device C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_uninstall", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_uninstall", e, &st)
	dev, st := checkDevice(e, "gs_hub_uninstall", device)
	if st != statusOK {
		return st
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.h.Uninstall(dev)
	delete(e.sims, dev)
	delete(e.cudaDev, dev)
	return statusOK
}

// goString reads a C string argument named arg of op; ok is false (and the
// error recorded) for NULL.
func goString(e *hub, op, arg string, s *C.char) (string, C.gs_hub_status) {
	if s == nil {
		return "", fail(e, statusInvalidArgument, "%s: %s is NULL", op, arg)
	}
	return C.GoString(s), statusOK
}

//export gs_hub_register_kernel
func gs_hub_register_kernel(handle C.gs_hub, kernel C.uint64_t, name *C.char) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_register_kernel", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_register_kernel", e, &st)
	n, st := goString(e, "gs_hub_register_kernel", "name", name)
	if st != statusOK {
		return st
	}
	if err := e.h.RegisterKernel(uint64(kernel), n); err != nil {
		return fail(e, statusInvalidArgument, "gs_hub_register_kernel: %v", err)
	}
	return statusOK
}

//export gs_hub_lane_index
func gs_hub_lane_index(handle C.gs_hub, name *C.char, lane *C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_lane_index", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_lane_index", e, &st)
	n, st := goString(e, "gs_hub_lane_index", "name", name)
	if st != statusOK {
		return st
	}
	if lane == nil {
		return fail(e, statusInvalidArgument, "gs_hub_lane_index: lane is NULL")
	}
	i, ok := e.h.LaneIndex(n)
	if !ok {
		return fail(e, statusInvalidArgument, "gs_hub_lane_index: no lane %q (lanes: %s)", truncate(n, 64), strings.Join(e.h.Lanes(), ", "))
	}
	*lane = C.int32_t(i)
	return statusOK
}

//export gs_hub_set_level
func gs_hub_set_level(handle C.gs_hub, level C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_set_level", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_set_level", e, &st)
	if level < 0 || level > C.GS_HUB_LEVEL_KERNEL {
		return fail(e, statusInvalidArgument, "gs_hub_set_level: level %d, want GS_HUB_LEVEL_OFF (0), _STEP (1) or _KERNEL (2)", int(level))
	}
	if err := e.h.SetLevel(gpuspans.Level(level)); err != nil {
		return fail(e, statusInvalidArgument, "gs_hub_set_level: %v", err)
	}
	return statusOK
}

//export gs_hub_set_kernel_timing
func gs_hub_set_kernel_timing(handle C.gs_hub, timing C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_set_kernel_timing", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_set_kernel_timing", e, &st)
	if timing < 0 || timing > C.GS_HUB_KERNEL_TIMING_ATTACHED {
		return fail(e, statusInvalidArgument, "gs_hub_set_kernel_timing: timing %d, want GS_HUB_KERNEL_TIMING_EVENTS (0), _AUTO (1), _CUPTI (2) or _ATTACHED (3)", int(timing))
	}
	if err := e.h.SetKernelTiming(gpuspans.KernelTiming(timing)); err != nil {
		return fail(e, statusInvalidArgument, "gs_hub_set_kernel_timing: %v", err)
	}
	return statusOK
}

//export gs_hub_set_kernel_windows
func gs_hub_set_kernel_windows(handle C.gs_hub, everyNs C.int64_t, steps C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_set_kernel_windows", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_set_kernel_windows", e, &st)
	if err := e.h.SetKernelWindows(time.Duration(everyNs), int(steps)); err != nil {
		return fail(e, statusInvalidArgument, "gs_hub_set_kernel_windows: %v", err)
	}
	return statusOK
}

//export gs_hub_request_kernel_window
func gs_hub_request_kernel_window(handle C.gs_hub) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_request_kernel_window", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_request_kernel_window", e, &st)
	if err := e.h.RequestKernelWindow(); err != nil {
		return fail(e, statusInvalidArgument, "gs_hub_request_kernel_window: %v", err)
	}
	return statusOK
}

//export gs_hub_get_kernel_timing
func gs_hub_get_kernel_timing(handle C.gs_hub, timing, tracing *C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_get_kernel_timing", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_get_kernel_timing", e, &st)
	s := e.h.KernelTimingStatus()
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
}

//export gs_hub_get_level
func gs_hub_get_level(handle C.gs_hub, level *C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_get_level", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_get_level", e, &st)
	if level == nil {
		return fail(e, statusInvalidArgument, "gs_hub_get_level: level is NULL")
	}
	*level = C.int32_t(e.h.Level())
	return statusOK
}

//export gs_hub_set_kernel_span_every
func gs_hub_set_kernel_span_every(handle C.gs_hub, n C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_set_kernel_span_every", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_set_kernel_span_every", e, &st)
	if err := e.h.SetKernelSpanEvery(int(n)); err != nil {
		return fail(e, statusInvalidArgument, "gs_hub_set_kernel_span_every: %v", err)
	}
	return statusOK
}

//export gs_hub_harvest
func gs_hub_harvest(handle C.gs_hub) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_harvest", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_harvest", e, &st)
	e.h.Harvest()
	return statusOK
}

//export gs_hub_start_harvester
func gs_hub_start_harvester(handle C.gs_hub, intervalUs C.int64_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_start_harvester", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_start_harvester", e, &st)
	if intervalUs < 1 || intervalUs > 1_000_000 {
		return fail(e, statusInvalidArgument, "gs_hub_start_harvester: interval_us %d, want 1..1000000", int64(intervalUs))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.harvestStop != nil {
		return fail(e, statusLimit, "gs_hub_start_harvester: a harvester runs already on this hub; stop it first")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	e.harvestStop, e.harvestDone = cancel, done
	go func() {
		defer close(done)
		_ = e.h.RunHarvester(ctx, time.Duration(intervalUs)*time.Microsecond)
	}()
	return statusOK
}

//export gs_hub_stop_harvester
func gs_hub_stop_harvester(handle C.gs_hub) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_stop_harvester", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_stop_harvester", e, &st)
	e.stopHarvester()
	return statusOK
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

//export gs_hub_drain
func gs_hub_drain(handle C.gs_hub, timeoutMs C.int32_t, inFlight *C.uint64_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_drain", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_drain", e, &st)
	if timeoutMs < 0 {
		return fail(e, statusInvalidArgument, "gs_hub_drain: timeout_ms is %d, want >= 0", int(timeoutMs))
	}
	n := drain(e.h, time.Duration(timeoutMs)*time.Millisecond, &e.closed)
	if inFlight != nil {
		*inFlight = C.uint64_t(n)
	}
	return statusOK
}

// describe says what the hub records from, for the live page and the JSON
// snapshot: "CUDA device 0", "simulated GPU 0, 1".
func (e *hub) describe() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var parts []string
	for _, g := range []struct {
		what string
		devs []int
	}{{"CUDA device", keys(e.cudaDev)}, {"simulated GPU", keys(e.sims)}} {
		if len(g.devs) == 0 {
			continue
		}
		s := make([]string, len(g.devs))
		for i, d := range g.devs {
			s[i] = fmt.Sprint(d)
		}
		parts = append(parts, g.what+" "+strings.Join(s, ", "))
	}
	if len(parts) == 0 {
		return "no device installed (C API)"
	}
	return strings.Join(parts, "; ") + " (C API)"
}

func keys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

//export gs_hub_snapshot
func gs_hub_snapshot(handle C.gs_hub, format C.int32_t, buf unsafe.Pointer, capacity C.size_t, length *C.size_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_snapshot", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_snapshot", e, &st)
	if length == nil {
		return fail(e, statusInvalidArgument, "gs_hub_snapshot: len is NULL")
	}
	snap := e.h.Snapshot()
	var b []byte
	var err error
	nul := 0
	switch format {
	case C.GS_HUB_SNAPSHOT_JSON:
		b, err = debugpage.MarshalSnapshotWindows(&snap, e.h.Windows(), e.describe(), time.Now())
		nul = 1
	case C.GS_HUB_SNAPSHOT_PROTO:
		b, err = proto.Marshal(spanfile.SnapshotToProto(&snap, time.Now()))
	default:
		return fail(e, statusInvalidArgument, "gs_hub_snapshot: format %d, want GS_HUB_SNAPSHOT_JSON (0) or _PROTO (1)", int(format))
	}
	if err != nil {
		return fail(e, statusInternal, "gs_hub_snapshot: encoding: %v", err)
	}
	need := len(b) + nul
	if buf == nil || uint64(capacity) < uint64(need) {
		*length = C.size_t(need)
		return fail(e, statusTooSmall, "gs_hub_snapshot: the snapshot needs %d bytes, the buffer has %d", need, uint64(capacity))
	}
	dst := unsafe.Slice((*byte)(buf), need)
	copy(dst, b)
	if nul == 1 {
		dst[len(b)] = 0
	}
	*length = C.size_t(len(b))
	return statusOK
}

//export gs_hub_serve
func gs_hub_serve(handle C.gs_hub, addr, token *C.char, flags C.int32_t, bound *C.char, boundCap C.size_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_serve", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_serve", e, &st)
	a, st := goString(e, "gs_hub_serve", "addr", addr)
	if st != statusOK {
		return st
	}
	tok := ""
	if token != nil {
		tok = C.GoString(token)
	}
	if flags&^C.GS_HUB_SERVE_PROTECT_READS != 0 {
		return fail(e, statusInvalidArgument, "gs_hub_serve: unknown flags %#x", int(flags))
	}
	protect := flags&C.GS_HUB_SERVE_PROTECT_READS != 0
	if protect && tok == "" {
		return fail(e, statusInvalidArgument, "gs_hub_serve: GS_HUB_SERVE_PROTECT_READS needs a token: with none, /metrics and the live page would be open after all")
	}
	if err := control.CheckToken(tok); err != nil {
		return fail(e, statusListen, "gs_hub_serve: %v", err)
	}
	backendDesc := e.describe()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		return fail(e, statusInvalidArgument, "gs_hub_serve: serving on %v already (gs_hub_stop_serving first)", e.ln.Addr())
	}
	ln, err := net.Listen("tcp", a)
	if err != nil {
		return fail(e, statusListen, "gs_hub_serve: %v", err)
	}
	if err := control.CheckListen(ln.Addr(), tok); err != nil {
		_ = ln.Close()
		return fail(e, statusListen, "gs_hub_serve: %v (here: gs_hub_serve's token argument)", err)
	}
	// The bound address is written before anything serves, so that a
	// failure here leaves nothing running.
	boundAddr := ln.Addr().String()
	if bound != nil && boundCap > 0 {
		if uint64(boundCap) <= uint64(len(boundAddr)) {
			_ = ln.Close()
			return fail(e, statusTooSmall, "gs_hub_serve: the bound address %s needs %d bytes, bound_cap is %d; nothing served", boundAddr, len(boundAddr)+1, uint64(boundCap))
		}
		dst := unsafe.Slice((*byte)(unsafe.Pointer(bound)), len(boundAddr)+1)
		copy(dst, boundAddr)
		dst[len(boundAddr)] = 0
	}
	h := gpuspanshttp.New(e.h, gpuspanshttp.Options{
		Backend:      backendDesc,
		Token:        tok,
		ProtectReads: protect,
		Logf:         e.logs.logf(C.GS_HUB_LOG_INFO), // changes made through the control endpoints
		Collectors:   []prometheus.Collector{otlpCollector{e}},
		Prom:         append(e.promOptions(), prom.WithExemplars(otlpExemplars{e})),
	})
	srv := gpuspanshttp.NewServer(e.guard(h), nil)
	go func() { _ = srv.Serve(ln) }() // returns ErrServerClosed at Close
	e.srv, e.ln = srv, ln
	return statusOK
}

// guard counts each request as a call on the hub (gs_hub_close waits for
// them) and answers 503 once the hub is closing.
func (e *hub) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.calls.Add(1)
		defer e.calls.Add(-1)
		if e.closed.Load() {
			http.Error(w, "the hub is closed", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}

//export gs_hub_stop_serving
func gs_hub_stop_serving(handle C.gs_hub) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_stop_serving", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_stop_serving", e, &st)
	e.stopServing()
	return statusOK
}

// stopServing closes the server and its connections, if any.
func (e *hub) stopServing() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		_ = e.srv.Close()
		// Close misses a listener that Serve's goroutine has not begun to
		// track yet (Serve then returns without closing it).
		_ = e.ln.Close()
		e.srv, e.ln = nil, nil
	}
}

// The span calls: each checks its handle and calls the hub's method once.
// They are the only crossings of a span, and the inline functions of the
// header make them only when the state word says there is work.

//export gs_hub_begin_step_call
func gs_hub_begin_step_call(handle C.gs_hub) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_begin_step", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_begin_step", e, &st)
	e.h.BeginStep()
	return statusOK
}

//export gs_hub_lane_begin_call
func gs_hub_lane_begin_call(handle C.gs_hub, lane C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_lane_begin", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_lane_begin", e, &st)
	e.h.LaneBegin(int(lane))
	return statusOK
}

//export gs_hub_lane_end_call
func gs_hub_lane_end_call(handle C.gs_hub, lane C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_lane_end", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_lane_end", e, &st)
	e.h.LaneEnd(int(lane))
	return statusOK
}

//export gs_hub_next_lane_call
func gs_hub_next_lane_call(handle C.gs_hub, from, to C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_next_lane", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_next_lane", e, &st)
	e.h.NextLane(int(from), int(to))
	return statusOK
}

//export gs_hub_next_step_call
func gs_hub_next_step_call(handle C.gs_hub, last, first C.int32_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_next_step", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_next_step", e, &st)
	e.h.NextStep(int(last), int(first))
	return statusOK
}

//export gs_hub_kernel_begin_call
func gs_hub_kernel_begin_call(handle C.gs_hub, device C.int32_t, kernel, stream C.uint64_t) (tok C.uint64_t) {
	cross()
	e := enter(handle)
	if e == nil {
		badHandle("gs_hub_kernel_begin", handle)
		return 0
	}
	defer e.exit()
	defer func() {
		if r := recover(); r != nil {
			panicked("gs_hub_kernel_begin", e, r)
			tok = 0
		}
	}()
	if device < -1 || device >= gpuspans.MaxDevices {
		fail(e, statusInvalidArgument, "gs_hub_kernel_begin_on: device %d, want 0..%d", int(device), gpuspans.MaxDevices-1)
		return 0
	}
	return C.uint64_t(e.tokens.begin(e.h, int(device), uint64(kernel), backend.Stream(stream)))
}

//export gs_hub_kernel_end_call
func gs_hub_kernel_end_call(handle C.gs_hub, token C.uint64_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_kernel_end", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_kernel_end", e, &st)
	if !e.tokens.mine(uint64(token)) {
		return fail(e, statusInvalidArgument, "gs_hub_kernel_end: token %d is not a kernel span open on this hub: it carries another hub's tag (from another hub, or made up)", uint64(token))
	}
	sp, ok := e.tokens.end(uint64(token))
	if !ok {
		return fail(e, statusInvalidArgument, "gs_hub_kernel_end: token %d is not a kernel span open on this hub (ended already, reclaimed as leaked, or not from gs_hub_kernel_begin)", uint64(token))
	}
	e.h.KernelEnd(sp)
	return statusOK
}

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
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/gpuspans/gpuspans/go/backend/sim"
	"github.com/gpuspans/gpuspans/go/export/otlp"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// Status codes of gpuspans/hub.h.
const (
	statusOK              = C.GS_HUB_OK
	statusBadHandle       = C.GS_HUB_ERR_BAD_HANDLE
	statusInvalidArgument = C.GS_HUB_ERR_INVALID_ARGUMENT
	statusTooSmall        = C.GS_HUB_ERR_TOO_SMALL
	statusListen          = C.GS_HUB_ERR_LISTEN
	statusLimit           = C.GS_HUB_ERR_LIMIT
	statusInternal        = C.GS_HUB_ERR_INTERNAL
	statusForked          = C.GS_HUB_ERR_FORKED
)

// maxHubs is GS_HUB_MAX_HUBS; a handle is gen*maxHubs + slot, gen >= 1, so
// handle % maxHubs indexes both the table and the state words, and 0 is
// never a handle.
const (
	maxHubs    = C.GS_HUB_MAX_HUBS
	wordStride = C.GS_HUB_WORD_STRIDE
)

// The header's word bits must be the hub's mirror bits.
var _ = [1]struct{}{}[C.GS_HUB_WORD_LEVEL^gpuspans.MirrorLevel]
var _ = [1]struct{}{}[C.GS_HUB_WORD_ARMED^gpuspans.MirrorArmed]
var _ = [1]struct{}{}[C.GS_HUB_WORD_POOLS^gpuspans.MirrorPools]
var _ = [1]struct{}{}[C.GS_HUB_WORD_TRACER^gpuspans.MirrorTracer]

// hub is one open hub and what the C side attached to it.
type hub struct {
	handle uint64
	h      *gpuspans.Hub
	word   *uint32 // its state word in C memory
	logs   *logSink
	tokens tokenTable
	spans  *spanPath    // the C span path's publisher; nil with GPUSPANS_SPAN_PATH=go
	closed atomic.Bool  // set first thing by gs_hub_close
	calls  atomic.Int64 // exports (and HTTP requests) running on the hub: gs_hub_close waits for 0
	// closing is done once gs_hub_close begins: calls that would wait (an
	// OTLP stop sending what is queued) stop waiting, so close is bounded.
	closing     context.Context
	closeCancel context.CancelFunc

	errMu   sync.Mutex // guards lastErr alone, so that fail works under mu
	lastErr string

	mu      sync.Mutex       // guards the rest
	sims    map[int]*sim.GPU // simulated devices by ordinal
	cudaDev map[int]bool     // CUDA devices installed
	srv     *http.Server
	ln      net.Listener
	// What the Prometheus families hold (gs_hub_set_metrics).
	metricsFlags   C.int32_t
	classicBuckets int
	constLabels    prometheus.Labels // gs_hub_set_metric_labels
	// The background harvester, while one runs: its cancel and the
	// channel its goroutine closes when it returns.
	harvestStop context.CancelFunc
	harvestDone chan struct{}

	// profMu guards stopProfile, held across a profile's start and stop
	// (file I/O), so that neither blocks the calls that take mu, and a
	// stop returns once the profile is written, whoever called it.
	profMu      sync.Mutex
	stopProfile func() // gs_hub_start_profile's, while its profile is kept

	readMu sync.Mutex      // guards recent, finished and finishedJSON
	recent []gpuspans.Span // gs_hub_recent_spans' buffer, reused
	// gs_hub_finished_requests' buffers, reused.
	finished     []gpuspans.RequestRecord
	finishedJSON []byte

	otlpMu   sync.Mutex          // guards otlp, otlpLast and links
	otlp     *otlp.Exporter      // the OTLP exporter, while one runs
	otlpLast *otlp.Exporter      // the one last started: its counts stay on /metrics
	links    []trace.SpanContext // gs_hub_link_step's buffer, reused
}

var (
	table   [maxHubs]atomic.Pointer[hub]
	tableMu sync.Mutex // serialises create and close
	gens    [maxHubs]uint64

	globalErrMu sync.Mutex
	globalErr   string // the last failure with no hub to blame

)

// words is the array of state words the callers read (words.c).
var words = unsafe.Slice((*uint32)(unsafe.Pointer(C.gs_hub_words)), maxHubs*wordStride)

// wordOf returns slot's state word.
func wordOf(slot int) *uint32 { return &words[slot*wordStride] }

// lookup returns the open hub of handle, or nil.
func lookup(handle C.gs_hub) *hub {
	e := table[uint64(handle)%maxHubs].Load()
	if e == nil || e.handle != uint64(handle) || e.closed.Load() {
		return nil
	}
	return e
}

// enter returns the open hub of handle, counted as in use until its exit,
// or nil. gs_hub_close sets closed and then waits for the count to reach 0:
// either close sees this call's count, or this call sees closed (both are
// sequentially consistent atomics), so no call touches a hub, or writes its
// state word, once close has moved on to free the slot.
func enter(handle C.gs_hub) *hub {
	e := lookup(handle)
	if e == nil {
		return nil
	}
	e.calls.Add(1)
	if e.closed.Load() {
		e.calls.Add(-1)
		return nil
	}
	return e
}

// exit ends a call begun by enter.
func (e *hub) exit() { e.calls.Add(-1) }

// maxErrLen bounds a kept message: one that quotes a caller's argument (a
// huge lane name, say) must not keep memory as large as the argument.
const maxErrLen = 2048

// fail records msg as hub e's last error (e nil: the global one) and
// returns st.
func fail(e *hub, st C.gs_hub_status, format string, args ...interface{}) C.gs_hub_status {
	msg := truncate(fmt.Sprintf(format, args...), maxErrLen)
	if e == nil {
		globalErrMu.Lock()
		globalErr = msg
		globalErrMu.Unlock()
		return st
	}
	e.errMu.Lock()
	e.lastErr = msg
	e.errMu.Unlock()
	return st
}

// badHandle records and returns GS_HUB_ERR_BAD_HANDLE for a call named op.
func badHandle(op string, handle C.gs_hub) C.gs_hub_status {
	return fail(nil, statusBadHandle, "%s: %d is not an open hub (closed, or never returned by gs_hub_create)", op, uint64(handle))
}

// A call is one export's run on an open hub: op, the export's name as
// hub.h spells it, begins every error it records.
type call struct {
	e  *hub
	op string
}

// fail records "op: msg" as the hub's last error and returns st.
func (c call) fail(st C.gs_hub_status, format string, args ...interface{}) C.gs_hub_status {
	return fail(c.e, st, c.op+": "+format, args...)
}

// onHub is every export's prologue on a hub handle: it counts the
// crossing, refuses a bad or closed handle, keeps the hub open (gs_hub_close
// waits) while f runs, and turns a panic into GS_HUB_ERR_INTERNAL. The
// call goes to f by value: a pointer would escape through the func value
// and cost every export an allocation.
func onHub(op string, handle C.gs_hub, f func(c call) C.gs_hub_status) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle(op, handle)
	}
	defer e.exit()
	defer recoverTo(op, e, &st)
	if e.spans != nil {
		e.spans.tidy() // a call into Go frees the C path's replaced sets
	}
	return f(call{e: e, op: op})
}

// recoverTo turns a panic in an export named op into GS_HUB_ERR_INTERNAL
// in *st: onHub defers it for the exports on a hub, and gs_hub_create and
// gs_hub_close for themselves.
func recoverTo(op string, e *hub, st *C.gs_hub_status) {
	if r := recover(); r != nil {
		*st = panicked(op, e, r)
	}
}

// panicked records the recovered panic r of an export named op.
func panicked(op string, e *hub, r interface{}) C.gs_hub_status {
	return fail(e, statusInternal, "%s: internal error (a bug in gpuspans, please report): %v\n%s", op, r, debug.Stack())
}

// atomicStoreWord sets a state word, as the hub does.
func atomicStoreWord(w *uint32, v uint32) { atomic.StoreUint32(w, v) }

// truncate cuts s to at most max bytes on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "... (truncated)"
	n := max - len(mark)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}

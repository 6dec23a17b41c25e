//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

import (
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/gpuspans/gpuspans/go/export/spanfile"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/control"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/debugpage"
)

// Serving: snapshots, and the HTTP surface (the live page, /metrics and
// the control endpoints).

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

//export gs_hub_snapshot_go
func gs_hub_snapshot_go(handle C.gs_hub, format C.int32_t, buf unsafe.Pointer, capacity C.size_t, length *C.size_t) C.gs_hub_status {
	return onHub("gs_hub_snapshot", handle, func(c call) C.gs_hub_status {
		if length == nil {
			return c.fail(statusInvalidArgument, "len is NULL")
		}
		snap := c.e.h.Snapshot()
		var b []byte
		var err error
		nul := 0
		switch format {
		case C.GS_HUB_SNAPSHOT_JSON:
			b, err = debugpage.MarshalSnapshotWindows(&snap, c.e.h.Windows(), c.e.describe(), time.Now())
			nul = 1
		case C.GS_HUB_SNAPSHOT_PROTO:
			b, err = proto.Marshal(spanfile.SnapshotToProto(&snap, time.Now()))
		default:
			return c.fail(statusInvalidArgument, "format %d, want GS_HUB_SNAPSHOT_JSON (0) or _PROTO (1)", int(format))
		}
		if err != nil {
			return c.fail(statusInternal, "encoding: %v", err)
		}
		need := len(b) + nul
		if buf == nil || uint64(capacity) < uint64(need) {
			*length = C.size_t(need)
			return c.fail(statusTooSmall, "the snapshot needs %d bytes, the buffer has %d", need, uint64(capacity))
		}
		dst := unsafe.Slice((*byte)(buf), need)
		copy(dst, b)
		if nul == 1 {
			dst[len(b)] = 0
		}
		*length = C.size_t(len(b))
		return statusOK
	})
}

//export gs_hub_serve_go
func gs_hub_serve_go(handle C.gs_hub, addr, token *C.char, flags C.int32_t, bound *C.char, boundCap C.size_t) C.gs_hub_status {
	return onHub("gs_hub_serve", handle, func(c call) C.gs_hub_status {
		a, st := goString(c, "addr", addr)
		if st != statusOK {
			return st
		}
		tok := ""
		if token != nil {
			tok = C.GoString(token)
		}
		if flags&^C.GS_HUB_SERVE_PROTECT_READS != 0 {
			return c.fail(statusInvalidArgument, "unknown flags %#x", int(flags))
		}
		protect := flags&C.GS_HUB_SERVE_PROTECT_READS != 0
		if protect && tok == "" {
			return c.fail(statusInvalidArgument, "GS_HUB_SERVE_PROTECT_READS needs a token: with none, /metrics and the live page would be open after all")
		}
		if err := control.CheckToken(tok); err != nil {
			return c.fail(statusListen, "%v", err)
		}
		backendDesc := c.e.describe()
		c.e.mu.Lock()
		defer c.e.mu.Unlock()
		if c.e.srv != nil {
			return c.fail(statusInvalidArgument, "serving on %v already (gs_hub_stop_serving first)", c.e.ln.Addr())
		}
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return c.fail(statusListen, "%v", err)
		}
		if err := control.CheckListen(ln.Addr(), tok); err != nil {
			_ = ln.Close()
			return c.fail(statusListen, "%v (here: gs_hub_serve's token argument)", err)
		}
		// The bound address is written before anything serves, so that a
		// failure here leaves nothing running.
		boundAddr := ln.Addr().String()
		if bound != nil && boundCap > 0 {
			if uint64(boundCap) <= uint64(len(boundAddr)) {
				_ = ln.Close()
				return c.fail(statusTooSmall, "the bound address %s needs %d bytes, bound_cap is %d; nothing served", boundAddr, len(boundAddr)+1, uint64(boundCap))
			}
			dst := unsafe.Slice((*byte)(unsafe.Pointer(bound)), len(boundAddr)+1)
			copy(dst, boundAddr)
			dst[len(boundAddr)] = 0
		}
		promOpts := c.e.promOptions()
		promOpts.Exemplars = otlpExemplars{c.e}
		h := gpuspanshttp.New(c.e.h, gpuspanshttp.Options{
			Backend:      backendDesc,
			Token:        tok,
			ProtectReads: protect,
			Logf:         c.e.logs.logf(C.GS_HUB_LOG_INFO), // changes made through the control endpoints
			Collectors:   []prometheus.Collector{otlpCollector{c.e}},
			Prom:         promOpts,
			ConstLabels:  c.e.constLabels,
		})
		srv := gpuspanshttp.NewServer(c.e.guard(h), nil)
		go func() { _ = srv.Serve(ln) }() // returns ErrServerClosed at Close
		c.e.srv, c.e.ln = srv, ln
		return statusOK
	})
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

//export gs_hub_stop_serving_go
func gs_hub_stop_serving_go(handle C.gs_hub) C.gs_hub_status {
	return onHub("gs_hub_stop_serving", handle, func(c call) C.gs_hub_status {
		c.e.stopServing()
		return statusOK
	})
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

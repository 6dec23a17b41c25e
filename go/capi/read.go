//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

import (
	"net/http"
	"net/http/httptest"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuspans/gpuspans/go/export/prom"
	"github.com/gpuspans/gpuspans/go/gpuspans"
)

// The readers of a hub for a host that serves its own endpoints: the
// Prometheus families as text, and the recent spans.

// The header's span struct must hold every name the hub accepts, and its
// kinds must be the hub's.
var _ = [1]struct{}{}[C.sizeof_gs_hub_span-192]
var _ = [C.GS_HUB_SPAN_NAME_CAP - gpuspans.MaxNameLen - 1]struct{}{}
var _ = [1]struct{}{}[C.GS_HUB_SPAN_LANE^C.int(gpuspans.KindLane)]
var _ = [1]struct{}{}[C.GS_HUB_SPAN_KERNEL^C.int(gpuspans.KindKernel)]

//export gs_hub_metrics_go
func gs_hub_metrics_go(handle C.gs_hub, buf *C.char, capacity C.size_t, length *C.size_t) C.gs_hub_status {
	return onHub("gs_hub_metrics", handle, func(c call) C.gs_hub_status {
		if length == nil {
			return c.fail(statusInvalidArgument, "len is NULL")
		}
		// The hub's collector and the OTLP exporter's (no Go runtime or
		// process families: the host has its own), rendered by the handler
		// /metrics uses,
		// asked for text: classic histograms only, as text carries no native
		// ones.
		c.e.mu.Lock()
		opts, labels := c.e.promOptions(), c.e.constLabels
		c.e.mu.Unlock()
		opts.NoNativeHistograms = true
		reg := prometheus.NewRegistry()
		ours := prometheus.WrapRegistererWith(labels, reg)
		if err := ours.Register(prom.NewCollector(c.e.h, opts)); err != nil {
			return c.fail(statusInternal, "registering the collector: %v", err)
		}
		if err := ours.Register(otlpCollector{c.e}); err != nil {
			return c.fail(statusInternal, "registering the collector: %v", err)
		}
		rec := httptest.NewRecorder()
		req, err := http.NewRequest(http.MethodGet, "/metrics", nil)
		if err != nil {
			return c.fail(statusInternal, "%v", err)
		}
		req.Header.Set("Accept", "text/plain;version=0.0.4")
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return c.fail(statusInternal, "gathering answered %d: %s", rec.Code, truncate(rec.Body.String(), 512))
		}
		b := rec.Body.Bytes()
		need := len(b) + 1
		if buf == nil || uint64(capacity) < uint64(need) {
			*length = C.size_t(need)
			return c.fail(statusTooSmall, "the families need %d bytes, the buffer has %d", need, uint64(capacity))
		}
		dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), need)
		copy(dst, b)
		dst[len(b)] = 0
		*length = C.size_t(len(b))
		return statusOK
	})
}

//export gs_hub_set_metrics_go
func gs_hub_set_metrics_go(handle C.gs_hub, flags, classicBuckets C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_set_metrics", handle, func(c call) C.gs_hub_status {
		if flags&^C.GS_HUB_METRICS_KERNEL_HISTOGRAMS != 0 {
			return c.fail(statusInvalidArgument, "unknown flags %#x", int(flags))
		}
		n := int(classicBuckets)
		if n == 0 {
			n = prom.DefaultClassicBuckets
		}
		if err := prom.CheckClassicBuckets(n); err != nil {
			return c.fail(statusInvalidArgument, "classic_buckets %d: want 0 (the default, 1), 1, 2, 4 or 8", int(classicBuckets))
		}
		c.e.mu.Lock()
		c.e.metricsFlags, c.e.classicBuckets = flags, n
		c.e.mu.Unlock()
		return statusOK
	})
}

//export gs_hub_set_metric_labels_go
func gs_hub_set_metric_labels_go(handle C.gs_hub, names, values **C.char, n C.size_t) C.gs_hub_status {
	return onHub("gs_hub_set_metric_labels", handle, func(c call) C.gs_hub_status {
		if n > prom.MaxConstLabels {
			return c.fail(statusInvalidArgument, "n is %d: at most %d labels", uint64(n), prom.MaxConstLabels)
		}
		if n > 0 && (names == nil || values == nil) {
			return c.fail(statusInvalidArgument, "n is %d but names or values is NULL", uint64(n))
		}
		labels := prometheus.Labels{}
		if n > 0 {
			vs := unsafe.Slice(values, int(n))
			for i, name := range unsafe.Slice(names, int(n)) {
				if name == nil || vs[i] == nil {
					return c.fail(statusInvalidArgument, "names[%d] or values[%d] is NULL", i, i)
				}
				k := C.GoString(name)
				if _, dup := labels[k]; dup {
					return c.fail(statusInvalidArgument, "label %q given twice", truncate(k, 100))
				}
				labels[k] = C.GoString(vs[i])
			}
		}
		if err := prom.CheckConstLabels(labels); err != nil {
			return c.fail(statusInvalidArgument, "%s", truncate(err.Error(), 300))
		}
		c.e.mu.Lock()
		c.e.constLabels = labels
		c.e.mu.Unlock()
		return statusOK
	})
}

// promOptions are the collector options gs_hub_set_metrics set. Call with
// e.mu held.
func (e *hub) promOptions() prom.Options {
	return prom.Options{
		ClassicBuckets:   e.classicBuckets, // 0 before gs_hub_set_metrics: prom's default
		KernelHistograms: e.metricsFlags&C.GS_HUB_METRICS_KERNEL_HISTOGRAMS != 0,
	}
}

//export gs_hub_recent_spans_go
func gs_hub_recent_spans_go(handle C.gs_hub, afterSeq C.uint64_t, out *C.gs_hub_span, capacity C.size_t, n *C.size_t) C.gs_hub_status {
	return onHub("gs_hub_recent_spans", handle, func(c call) C.gs_hub_status {
		if n == nil {
			return c.fail(statusInvalidArgument, "n is NULL")
		}
		*n = 0
		if out == nil && capacity != 0 {
			return c.fail(statusInvalidArgument, "out is NULL with cap %d", uint64(capacity))
		}
		c.e.readMu.Lock()
		defer c.e.readMu.Unlock()
		// Read even for cap 0: the call keeps start times placed.
		c.e.recent = c.e.h.RecentSpans(uint64(afterSeq), c.e.recent[:0])
		spans := c.e.recent
		if uint64(len(spans)) > uint64(capacity) {
			spans = spans[:int(capacity)] // the oldest: the caller asks again after the last seq
		}
		if len(spans) == 0 {
			return statusOK
		}
		dst := unsafe.Slice(out, len(spans))
		for i := range spans {
			s, d := &spans[i], &dst[i]
			d.seq = C.uint64_t(s.Seq)
			d.step = C.uint64_t(s.Step)
			d.stream = C.uint64_t(s.Stream)
			d.start_ns = C.int64_t(s.StartNs)
			d.duration_ns = C.int64_t(s.DurationNs)
			d.kind = C.int32_t(s.Kind)
			d.device = C.int32_t(s.Device)
			d.graph = C.uint32_t(s.Graph)
			name := s.Name
			if len(name) > C.GS_HUB_SPAN_NAME_CAP-1 {
				name = name[:C.GS_HUB_SPAN_NAME_CAP-1] // unreachable: the hub bounds names (checked above)
			}
			d.name_len = C.uint32_t(len(name))
			nb := unsafe.Slice((*byte)(unsafe.Pointer(&d.name[0])), C.GS_HUB_SPAN_NAME_CAP)
			copy(nb, name)
			nb[len(name)] = 0
		}
		*n = C.size_t(len(spans))
		return statusOK
	})
}

//export gs_hub_keep_start_times_go
func gs_hub_keep_start_times_go(handle C.gs_hub) C.gs_hub_status {
	return onHub("gs_hub_keep_start_times", handle, func(c call) C.gs_hub_status {
		c.e.h.KeepStartTimes()
		return statusOK
	})
}

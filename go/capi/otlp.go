//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

import (
	"context"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/gpuspans/gpuspans/go/export/otlp"
	"github.com/gpuspans/gpuspans/go/export/prom"
)

// The OTLP exporter of a hub (go/export/otlp), and request links.

var _ = [1]struct{}{}[C.sizeof_gs_hub_link-24]

//export gs_hub_otlp_start_go
func gs_hub_otlp_start_go(handle C.gs_hub, opts *C.gs_hub_otlp_options) C.gs_hub_status {
	return onHub("gs_hub_otlp_start", handle, func(c call) C.gs_hub_status {
		if opts == nil {
			return c.fail(statusInvalidArgument, "opts is NULL")
		}
		var co C.gs_hub_otlp_options
		if err := readSized("gs_hub_otlp_options", unsafe.Pointer(opts), uint32(opts.size), unsafe.Pointer(&co), otlpOptionsLayouts); err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		var o otlp.Options // NULL strings: the environment's
		if co.endpoint != nil {
			o.Endpoint = C.GoString(co.endpoint)
		}
		if co.protocol != nil {
			o.Protocol = C.GoString(co.protocol)
		}
		if co.service_name != nil {
			o.ServiceName = C.GoString(co.service_name)
		}
		if co.sample_every < 0 || co.poll_every_ms < 0 || co.max_links < 0 {
			return c.fail(statusInvalidArgument, "sample_every %d, poll_every_ms %d, max_links %d: want >= 0 (0: the default)",
				int(co.sample_every), int(co.poll_every_ms), int(co.max_links))
		}
		o.SampleEvery = int(co.sample_every)
		o.NoKernelSpans = co.no_kernel_spans != 0
		o.PollEvery = time.Duration(co.poll_every_ms) * time.Millisecond
		o.MaxLinks = int(co.max_links)
		o.Logf = c.e.logs.logf(C.GS_HUB_LOG_WARNING)
		c.e.otlpMu.Lock()
		defer c.e.otlpMu.Unlock()
		if c.e.otlp != nil {
			return c.fail(statusLimit, "an OTLP exporter runs already on this hub; stop it first")
		}
		exp, err := otlp.New(context.Background(), c.e.h, o)
		if err != nil {
			return c.fail(statusInvalidArgument, "%v", err)
		}
		c.e.otlp, c.e.otlpLast = exp, exp
		return statusOK
	})
}

//export gs_hub_otlp_stop_go
func gs_hub_otlp_stop_go(handle C.gs_hub, timeoutMs C.int32_t) C.gs_hub_status {
	return onHub("gs_hub_otlp_stop", handle, func(c call) C.gs_hub_status {
		if timeoutMs < 0 {
			return c.fail(statusInvalidArgument, "timeout_ms %d is negative", int(timeoutMs))
		}
		if err := c.e.stopOTLP(time.Duration(timeoutMs) * time.Millisecond); err != nil {
			return c.fail(statusInternal, "shutting the transport down: %v", err)
		}
		return statusOK
	})
}

// stopOTLP closes the exporter, if one runs, sending what is queued for up
// to d, or until gs_hub_close begins: the export in flight is cut short
// then, and what was not sent is counted as dropped (gpuspans_otlp_*).
func (e *hub) stopOTLP(d time.Duration) error {
	e.otlpMu.Lock()
	exp := e.otlp
	e.otlp = nil
	e.otlpMu.Unlock()
	if exp == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(e.closing, d)
	defer cancel()
	return exp.Close(ctx)
}

//export gs_hub_get_step_go
func gs_hub_get_step_go(handle C.gs_hub, step *C.uint64_t) C.gs_hub_status {
	return onHub("gs_hub_get_step", handle, func(c call) C.gs_hub_status {
		if step == nil {
			return c.fail(statusInvalidArgument, "step is NULL")
		}
		*step = C.uint64_t(c.e.h.Step())
		return statusOK
	})
}

//export gs_hub_link_step_go
func gs_hub_link_step_go(handle C.gs_hub, step C.uint64_t, links *C.gs_hub_link, n C.size_t) C.gs_hub_status {
	return onHub("gs_hub_link_step", handle, func(c call) C.gs_hub_status {
		if n > otlp.MaxLinks {
			return c.fail(statusInvalidArgument, "n is %d, more than %d", uint64(n), otlp.MaxLinks)
		}
		if n > 0 && links == nil {
			return c.fail(statusInvalidArgument, "links is NULL with n %d", uint64(n))
		}
		c.e.otlpMu.Lock()
		defer c.e.otlpMu.Unlock()
		if c.e.otlp == nil || n == 0 || !c.e.otlp.Sampled(uint64(step)) {
			return statusOK // nothing to link: no exporter, or a step it does not send
		}
		buf := c.e.links[:0]
		for i, l := range unsafe.Slice(links, int(n)) {
			var cfg trace.SpanContextConfig
			copy(cfg.TraceID[:], unsafe.Slice((*byte)(unsafe.Pointer(&l.trace_id[0])), 16))
			copy(cfg.SpanID[:], unsafe.Slice((*byte)(unsafe.Pointer(&l.span_id[0])), 8))
			if !cfg.TraceID.IsValid() || !cfg.SpanID.IsValid() {
				return c.fail(statusInvalidArgument, "links[%d] has an all-zero trace or span id", i)
			}
			cfg.TraceFlags = trace.FlagsSampled
			cfg.Remote = true
			buf = append(buf, trace.NewSpanContext(cfg))
		}
		c.e.links = buf
		c.e.otlp.LinkStep(uint64(step), buf)
		return statusOK
	})
}

// otlpExemplars gives /metrics' lane histograms the exemplars of the
// exporter last started, stopped or not: the traces it sent stay where
// they went.
type otlpExemplars struct{ e *hub }

func (x otlpExemplars) LaneExemplar(device int, lane string) (prom.Exemplar, bool) {
	x.e.otlpMu.Lock()
	exp := x.e.otlpLast
	x.e.otlpMu.Unlock()
	if exp == nil {
		return prom.Exemplar{}, false
	}
	return exp.LaneExemplar(device, lane)
}

// otlpCollector exports the series (gpuspans_otlp_*) of the exporter last
// started, stopped or not, so that its final counts stay (none before the
// first): an unchecked collector (it describes nothing), as exporters come
// and go while the registry stays.
type otlpCollector struct{ e *hub }

func (c otlpCollector) Describe(chan<- *prometheus.Desc) {}

func (c otlpCollector) Collect(ch chan<- prometheus.Metric) {
	c.e.otlpMu.Lock()
	exp := c.e.otlpLast
	c.e.otlpMu.Unlock()
	if exp != nil {
		exp.Collector().Collect(ch)
	}
}

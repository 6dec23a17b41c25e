//go:build cgo

package main

/*
#include <stddef.h>
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
enum {
  offsetof_request_new_tokens = offsetof(gs_hub_request, new_tokens),
  offsetof_request_decoded_tokens = offsetof(gs_hub_request, decoded_tokens),
  offsetof_request_context = offsetof(gs_hub_request, context),
  offsetof_request_class = offsetof(gs_hub_request, request_class),
  offsetof_request_trace_id = offsetof(gs_hub_request, trace_id),
  offsetof_request_span_id = offsetof(gs_hub_request, span_id),
};
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/gpuspanshttp/debugpage"
)

// gs_hub_request is gpuspans.RequestWork's layout, so that a C array of
// them is handed to ServeRequests as it is, copied once by the hub. These
// fail the build until the two agree.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(gpuspans.RequestWork{})-C.sizeof_gs_hub_request]
	_ = [1]struct{}{}[unsafe.Offsetof(gpuspans.RequestWork{}.NewTokens)-C.offsetof_request_new_tokens]
	_ = [1]struct{}{}[unsafe.Offsetof(gpuspans.RequestWork{}.DecodedTokens)-C.offsetof_request_decoded_tokens]
	_ = [1]struct{}{}[unsafe.Offsetof(gpuspans.RequestWork{}.Context)-C.offsetof_request_context]
	_ = [1]struct{}{}[unsafe.Offsetof(gpuspans.RequestWork{}.Class)-C.offsetof_request_class]
	_ = [1]struct{}{}[unsafe.Offsetof(gpuspans.RequestWork{}.TraceID)-C.offsetof_request_trace_id]
	_ = [1]struct{}{}[unsafe.Offsetof(gpuspans.RequestWork{}.SpanID)-C.offsetof_request_span_id]
)

// requestFail turns a refused call's error into the C status and message.
func requestFail(c call, err error) C.gs_hub_status {
	if errors.Is(err, gpuspans.ErrRequestsBacklog) {
		return c.fail(statusLimit, "the request inbox is full (harvests too rare for the batches declared): the call was dropped and counted")
	}
	var re *gpuspans.RequestError
	if errors.As(err, &re) {
		where := ""
		if re.Lane >= 0 {
			where = fmt.Sprintf("lane %d: ", re.Lane)
		}
		if re.Index >= 0 {
			where += fmt.Sprintf("requests[%d] (id %d): ", re.Index, re.ID)
		}
		return c.fail(statusInvalidArgument, "%s%s", where, re.Why)
	}
	return c.fail(statusInvalidArgument, "%v", err)
}

//export gs_hub_request_class_go
func gs_hub_request_class_go(handle C.gs_hub, model, adapter, tenant *C.char, class *C.uint16_t) C.gs_hub_status {
	return onHub("gs_hub_request_class", handle, func(c call) C.gs_hub_status {
		if class == nil {
			return c.fail(statusInvalidArgument, "request_class is NULL")
		}
		var names [3]string
		for i, s := range [3]*C.char{model, adapter, tenant} {
			if s != nil {
				names[i] = C.GoString(s)
			}
		}
		rc, err := c.e.h.RequestClass(names[0], names[1], names[2])
		switch {
		case err == nil:
			*class = C.uint16_t(rc)
		case rc == gpuspans.RequestClassOther:
			*class = C.uint16_t(rc)
			return c.fail(statusLimit, "%d classes are registered already: this one counts as other", gpuspans.MaxRequestClasses)
		default:
			return requestFail(c, err)
		}
		return statusOK
	})
}

//export gs_hub_serve_requests_go
func gs_hub_serve_requests_go(handle C.gs_hub, lane C.int32_t, requests *C.gs_hub_request, n C.size_t) C.gs_hub_status {
	return onHub("gs_hub_serve_requests", handle, func(c call) C.gs_hub_status {
		if n > 0 && requests == nil {
			return c.fail(statusInvalidArgument, "requests is NULL with n %d", uint64(n))
		}
		if uint64(n) > gpuspans.MaxRequests {
			return c.fail(statusInvalidArgument, "n is %d, more than %d", uint64(n), gpuspans.MaxRequests)
		}
		var reqs []gpuspans.RequestWork
		if n > 0 {
			reqs = unsafe.Slice((*gpuspans.RequestWork)(unsafe.Pointer(requests)), int(n))
		}
		if err := c.e.h.ServeRequests(int(lane), reqs); err != nil {
			return requestFail(c, err)
		}
		return statusOK
	})
}

//export gs_hub_end_request_go
func gs_hub_end_request_go(handle C.gs_hub, id C.uint64_t) C.gs_hub_status {
	return onHub("gs_hub_end_request", handle, func(c call) C.gs_hub_status {
		if err := c.e.h.EndRequest(uint64(id)); err != nil {
			return c.fail(statusInvalidArgument, "no request of id %d is in flight", uint64(id))
		}
		return statusOK
	})
}

//export gs_hub_lane_work_go
func gs_hub_lane_work_go(handle C.gs_hub, lane C.int32_t, flops, bytes C.double) C.gs_hub_status {
	return onHub("gs_hub_lane_work", handle, func(c call) C.gs_hub_status {
		if err := c.e.h.LaneWork(int(lane), float64(flops), float64(bytes)); err != nil {
			return requestFail(c, err)
		}
		return statusOK
	})
}

//export gs_hub_finished_requests_go
func gs_hub_finished_requests_go(handle C.gs_hub, afterSeq C.uint64_t, buf *C.char, capacity C.size_t, length *C.size_t, lastSeq *C.uint64_t) C.gs_hub_status {
	return onHub("gs_hub_finished_requests", handle, func(c call) C.gs_hub_status {
		if length == nil || lastSeq == nil {
			return c.fail(statusInvalidArgument, "len or last_seq is NULL")
		}
		*length, *lastSeq = 0, afterSeq
		if buf == nil && capacity != 0 {
			return c.fail(statusInvalidArgument, "buf is NULL with cap %d", uint64(capacity))
		}
		c.e.readMu.Lock()
		defer c.e.readMu.Unlock()
		c.e.finished = c.e.h.FinishedRequests(uint64(afterSeq), c.e.finished[:0])
		recs := c.e.finished
		dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(min(uint64(capacity), math.MaxInt32)))
		// Whole records, as many as fit: "[" + records joined by "," + "]" + NUL.
		out := append(c.e.finishedJSON[:0], '[')
		last := uint64(afterSeq)
		for i := range recs {
			b, err := debugpage.MarshalRequests(recs[i : i+1])
			if err != nil {
				return c.fail(statusInternal, "encoding: %v", err)
			}
			b = b[1 : len(b)-1] // the record without its array's brackets
			need := len(out) + len(b) + 2
			if i > 0 {
				need++
			}
			if need > len(dst) {
				if i == 0 {
					*length = C.size_t(need)
					return c.fail(statusTooSmall, "the first record needs %d bytes, the buffer has %d", need, uint64(capacity))
				}
				break
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, b...)
			last = recs[i].Seq
		}
		out = append(out, ']')
		c.e.finishedJSON = out
		if len(out)+1 > len(dst) {
			*length = C.size_t(len(out) + 1)
			return c.fail(statusTooSmall, "the answer needs %d bytes, the buffer has %d", len(out)+1, uint64(capacity))
		}
		copy(dst, out)
		dst[len(out)] = 0
		*length, *lastSeq = C.size_t(len(out)), C.uint64_t(last)
		return statusOK
	})
}

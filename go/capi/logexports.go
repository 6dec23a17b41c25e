//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

import "unsafe"

//export gs_hub_set_log_callback_go
func gs_hub_set_log_callback_go(handle C.gs_hub, fn C.gs_hub_log_fn, user unsafe.Pointer) C.gs_hub_status {
	return onHub("gs_hub_set_log_callback", handle, func(c call) C.gs_hub_status {
		c.e.logs.setCallback(fn, user)
		return statusOK
	})
}

//export gs_hub_log_dropped_go
func gs_hub_log_dropped_go(handle C.gs_hub, dropped *C.uint64_t) C.gs_hub_status {
	return onHub("gs_hub_log_dropped", handle, func(c call) C.gs_hub_status {
		if dropped == nil {
			return c.fail(statusInvalidArgument, "dropped is NULL")
		}
		*dropped = C.uint64_t(c.e.logs.droppedLines())
		return statusOK
	})
}

//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

import "unsafe"

//export gs_hub_set_log_callback
func gs_hub_set_log_callback(handle C.gs_hub, fn C.gs_hub_log_fn, user unsafe.Pointer) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_set_log_callback", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_set_log_callback", e, &st)
	e.logs.setCallback(fn, user)
	return statusOK
}

//export gs_hub_log_dropped
func gs_hub_log_dropped(handle C.gs_hub, dropped *C.uint64_t) (st C.gs_hub_status) {
	cross()
	e := enter(handle)
	if e == nil {
		return badHandle("gs_hub_log_dropped", handle)
	}
	defer e.exit()
	defer recoverTo("gs_hub_log_dropped", e, &st)
	if dropped == nil {
		return fail(e, statusInvalidArgument, "gs_hub_log_dropped: dropped is NULL")
	}
	*dropped = C.uint64_t(e.logs.droppedLines())
	return statusOK
}

//go:build cgo

package main

/*
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
*/
import "C"

import (
	"fmt"
	"reflect"
	"time"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/optname"
)

// The options structs of the C ABI. Each starts with its size, so that it
// can grow at the end (hub.h says the rule): a caller compiled against an
// older header passes fewer bytes, and the fields it lacks read as zero,
// their defaults.

// readSized copies the size bytes of a caller's struct named name at src
// into dst, a zeroed struct of known bytes. It refuses a size of 0 (a
// struct not made with its _init function) and one larger than known (a
// caller built against a newer header, whose fields this library would
// silently ignore).
func readSized(name string, src unsafe.Pointer, size C.uint32_t, dst unsafe.Pointer, known uintptr) error {
	switch {
	case size == 0:
		return fmt.Errorf("%s.size is 0: start the struct from %s_init(), which sets it to sizeof(%s)", name, name, name)
	case uintptr(size) > known:
		return fmt.Errorf("%s.size is %d, larger than the %d bytes of the %s this library knows: the caller was built against a newer gpuspans/hub.h than this library", name, uint32(size), known, name)
	}
	copy(unsafe.Slice((*byte)(dst), known), unsafe.Slice((*byte)(src), uintptr(size)))
	return nil
}

// cName spells an Options field as gs_hub_options does: in snake case,
// with _ns after a duration's name.
func cName(field string) string {
	if f, ok := reflect.TypeOf(gpuspans.Options{}).FieldByName(field); ok && f.Type == reflect.TypeOf(time.Duration(0)) {
		return optname.Snake(field) + "_ns"
	}
	return optname.Snake(field)
}

// hubOptions reads gs_hub_create's options (nil: every default) into the
// hub's; quiet is the C ABI's own. Errors name the field as hub.h does.
func hubOptions(p *C.gs_hub_options) (o gpuspans.Options, quiet bool, err error) {
	if p == nil {
		return o, false, nil
	}
	var c C.gs_hub_options
	if err := readSized("gs_hub_options", unsafe.Pointer(p), p.size, unsafe.Pointer(&c), unsafe.Sizeof(c)); err != nil {
		return o, false, err
	}
	n := int(c.num_lanes)
	switch {
	case c.lanes != nil:
		if n < 1 || n > gpuspans.MaxLanes {
			return o, false, fmt.Errorf("num_lanes is %d, want 1..%d", n, gpuspans.MaxLanes)
		}
		o.Lanes = make([]string, n)
		for i, s := range unsafe.Slice(c.lanes, n) {
			if s == nil {
				return o, false, fmt.Errorf("lanes[%d] is NULL", i)
			}
			o.Lanes[i] = C.GoString(s)
		}
	case n != 0:
		return o, false, fmt.Errorf("num_lanes is %d but lanes is NULL", n)
	}
	// The enums' ranges are checked here, where their C names are known;
	// every bound of the numbers is gpuspans.Options'.
	if c.level < 0 || c.level > C.GS_HUB_LEVEL_KERNEL {
		return o, false, fmt.Errorf("level is %d, want GS_HUB_LEVEL_OFF (0), _STEP (1) or _KERNEL (2)", int(c.level))
	}
	if c.start_times < 0 || c.start_times > C.GS_HUB_START_TIMES_ALWAYS {
		return o, false, fmt.Errorf("start_times is %d, want GS_HUB_START_TIMES_AUTO (0), _NEVER (1) or _ALWAYS (2)", int(c.start_times))
	}
	if c.kernel_timing < 0 || c.kernel_timing > C.GS_HUB_KERNEL_TIMING_ATTACHED {
		return o, false, fmt.Errorf("kernel_timing is %d, want GS_HUB_KERNEL_TIMING_EVENTS (0), _AUTO (1), _CUPTI (2) or _ATTACHED (3)", int(c.kernel_timing))
	}
	o.Level = gpuspans.Level(c.level)
	o.KernelSpanEvery = int(c.kernel_span_every)
	o.Slots = int(c.slots)
	o.RecentSpans = int(c.recent_spans)
	o.StartTimes = gpuspans.StartTimes(c.start_times)
	o.RawKernelSpans = c.raw_kernel_spans != 0
	o.KernelTiming = gpuspans.KernelTiming(c.kernel_timing)
	o.KernelWindowEvery = time.Duration(c.kernel_window_every_ns)
	o.KernelWindowSteps = int(c.kernel_window_steps)
	o.KernelLabels = int(c.kernel_labels)
	return o, c.quiet != 0, nil
}

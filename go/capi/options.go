//go:build cgo

package main

/*
#include <stddef.h>
#define GS_HUB_TYPES_ONLY
#include "gpuspans/hub.h"
enum { offsetof_max_requests = offsetof(gs_hub_options, max_requests) };
*/
import "C"

import (
	"fmt"
	"reflect"
	"strings"
	"time"
	"unsafe"

	"github.com/gpuspans/gpuspans/go/gpuspans"
	"github.com/gpuspans/gpuspans/go/internal/optname"
)

// The options structs of the C ABI. Each starts with its size, so that it
// can grow at the end (hub.h says the rule). A caller compiled against an
// older header passes one of the sizes its struct has had, and the fields
// it lacks read as zero, their defaults. Only those sizes are read: a size
// in between could end inside a pointer, and reading through half of one
// would crash the process, which no recover catches.

// A layout is one published size of an options struct and how many of its
// bytes hold fields (the rest is tail padding, which a later field may
// occupy and which so must not be read from an older caller).
type layout struct{ size, fields uintptr }

// The layouts each struct has been published with, oldest first; the last
// is this library's own. A field added to a struct adds its new size here,
// and the size before it stays readable.
var (
	hubOptionsLayouts = []layout{
		// Up to kernel_labels, its tail padding up to 8 bytes.
		{(C.offsetof_max_requests + 7) &^ 7, C.offsetof_max_requests},
		{C.sizeof_gs_hub_options, C.sizeof_gs_hub_options},
	}
	otlpOptionsLayouts = []layout{{C.sizeof_gs_hub_otlp_options, C.sizeof_gs_hub_otlp_options}}
)

// readSized copies the fields of a caller's struct named name at src, of
// size bytes, into dst, a zeroed struct of this library's layout (the last
// of layouts). It refuses a size of 0 (a struct not made with its _init
// function), one past this library's (a caller built against a newer
// header, whose fields it would silently ignore), and one of no published
// layout.
func readSized(name string, src unsafe.Pointer, size uint32, dst unsafe.Pointer, layouts []layout) error {
	own := layouts[len(layouts)-1].size
	switch {
	case size == 0:
		return fmt.Errorf("%s.size is 0: start the struct from %s_init(), which sets it to sizeof(%s)", name, name, name)
	case uintptr(size) > own:
		return fmt.Errorf("%s.size is %d, larger than the %d bytes of the %s this library knows: the caller was built against a newer gpuspans/hub.h than this library", name, size, own, name)
	}
	for _, l := range layouts {
		if l.size == uintptr(size) {
			copy(unsafe.Slice((*byte)(dst), own), unsafe.Slice((*byte)(src), l.fields))
			return nil
		}
	}
	sizes := make([]string, len(layouts))
	for i, l := range layouts {
		sizes[i] = fmt.Sprint(l.size)
	}
	return fmt.Errorf("%s.size is %d, which no gpuspans/hub.h has given it (%s): set it with %s_init()", name, size, strings.Join(sizes, ", "), name)
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
	if err := readSized("gs_hub_options", unsafe.Pointer(p), uint32(p.size), unsafe.Pointer(&c), hubOptionsLayouts); err != nil {
		return o, false, err
	}
	n := int(c.num_lanes)
	switch {
	case c.lanes != nil:
		// Zero lanes is gpuspans.Options' to refuse; these bounds only keep
		// the slice below in lanes' array.
		if n < 0 || n > gpuspans.MaxLanes {
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
	o.MaxRequests = int(c.max_requests)
	o.RequestLabels = int(c.request_labels)
	o.PeakFlops = float64(c.peak_flops)
	o.PeakBandwidth = float64(c.peak_bandwidth)
	return o, c.quiet != 0, nil
}

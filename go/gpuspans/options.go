package gpuspans

import (
	"errors"
	"fmt"
	"log"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpuspans/gpuspans/go/backend"
)

// A hub's settings, each said once: its Options field, bounds, default and
// validation live here; the C ABI (gs_hub_options), Python (Hub's keywords)
// and the command's flags map onto these fields, and go/capi's
// TestOptionsAgree walks every field through all of them.

// Bounds on what a hub holds, so that memory and exported label sets stay
// bounded whatever the caller does.
const (
	MaxLanes       = 64      // lanes per hub
	MaxDevices     = 64      // device ordinals 0..MaxDevices-1
	MaxKernels     = 1024    // registered kernel handles, and distinct kernel names
	MaxRecentSpans = 1 << 20 // Options.RecentSpans
	MaxNameLen     = 128     // bytes in a lane or kernel name

	// MaxKernelSpanEvery bounds the arming period, however it is set
	// (Options, SetKernelSpanEvery, and through them the C ABI, Python and
	// the control endpoint): a period of a million steps is hours of
	// serving between armed steps, so anything larger is a typo.
	MaxKernelSpanEvery = 1_000_000
)

// Defaults for the zero Options.
const (
	DefaultKernelSpanEvery = 16
	DefaultSlots           = 4096
	DefaultRecentSpans     = 8192
	DefaultKernelLabels    = 32
)

// defaultLanes are the serve lanes of the default hub and of Options with no
// Lanes.
var defaultLanes = []string{"prefill", "decode"}

// Options configures a Hub. The zero value is valid: lanes "prefill" and
// "decode", level Off, and the defaults above.
type Options struct {
	// Lanes names the serve lanes, 1..MaxLanes of them; LaneBegin and
	// LaneEnd take an index into it. Fixed after New. Nil means
	// "prefill", "decode"; empty is an error.
	Lanes []string
	// KernelSpanEvery arms kernel spans on one step in this many (0: 16).
	KernelSpanEvery int
	// Slots is the size of each device's span ring (0: 4096, at most
	// backend.MaxSlots): the hub asks each device's Opener for a pool of
	// this many event pairs, and a pool with fewer makes that device's
	// ring smaller.
	Slots int
	// RecentSpans is the size of the ring of recent spans (0: 8192).
	RecentSpans int
	// Level is the initial level.
	Level Level
	// Logf reports the rare events worth a line: a pool that cannot open, a
	// sticky error, the first span error of a recorder. Nil means log.Printf.
	Logf func(format string, args ...interface{})
	// Now is the host clock used to time harvests. Nil means time.Now.
	Now func() time.Time
	// StartTimes says when harvests place spans on the host clock
	// (StartTimesAuto, the zero value: while something reads them).
	StartTimes StartTimes
	// RawKernelSpans reports kernel spans as their event pairs read them.
	// By default a kernel span's duration has its device's event offset
	// (DeviceStatus.EventOffset) subtracted, clamped at 0; lane spans are
	// never corrected. docs/design.md (offset calibration) says why.
	RawKernelSpans bool
	// KernelTiming chooses the source of kernel spans: event pairs around
	// the launches the engine brackets (the zero value), or the kernel
	// tracer, which sees every kernel (KernelTimingAuto, KernelTimingCUPTI
	// in kernel windows, KernelTimingAttached; docs/design.md, kernel
	// spans, compares them). KernelTracer opens the tracer
	// (cuda.TracerOpener) on the stepping thread, inside BeginStep at level
	// Kernel; it is required for all but events. Auto or cupti here is as
	// SetKernelTiming right after New: the first window takes CUPTI over
	// from the subscriber a profiler that ran earlier left.
	KernelTiming KernelTiming
	KernelTracer backend.TracerOpener
	// KernelWindowEvery is the period of kernel windows (0:
	// DefaultKernelWindowEvery, else MinKernelWindowEvery up to
	// MaxKernelWindowEvery): the first opens at the first step at Kernel,
	// then one at the first step a period after the last one opened.
	// KernelWindowSteps is how many consecutive steps a window collects (0:
	// DefaultKernelWindowSteps, at most MaxKernelWindowSteps).
	KernelWindowEvery time.Duration
	KernelWindowSteps int
	// KernelLabels bounds the traced kernel names that get a label of their
	// own (0: DefaultKernelLabels): names registered with RegisterKernel
	// keep theirs; new names take the labels left, heaviest GPU time first
	// in the harvest that first sees them; the rest land as OtherKernel.
	KernelLabels int
	// MaxRequests bounds the requests a hub holds at once for whose GPU
	// time (ServeRequests): in flight, or ended with spans still to land
	// (0: DefaultMaxRequests, at most MaxRequests); it sizes the request
	// table, made at the first ServeRequests or LaneWork, and the records
	// FinishedRequests keeps. RequestLabels bounds the request classes
	// exporters label (0: DefaultRequestLabels, at most
	// MaxRequestClasses): the first served take them, heaviest first; the
	// rest count as "other".
	MaxRequests   int
	RequestLabels int
	// PeakFlops and PeakBandwidth are each device's peak FLOP/s and memory
	// bytes/s, for utilisation (LaneAttribution); 0: the device model's
	// dense BF16 and memory figures, where the hub knows the model.
	// At most 1e18 and 1e15.
	PeakFlops, PeakBandwidth float64
	// StateMirror, when not nil, is a word the hub keeps equal to its state
	// (the level, MirrorArmed and MirrorPools: see MirrorLevel), so that a
	// caller in another language can test it with one load and skip calling
	// in, as the Go entry points' inlined checks do (package capi gives C
	// callers a word outside Go's heap). The hub writes it with atomic
	// stores whenever the level, the arming or the open pools change; once
	// no call is changing them, it holds exactly the hub's state. Fixed
	// after New; the word must outlive the hub.
	StateMirror *uint32
}

// Defaults and bounds of the window settings (Options.KernelWindowEvery,
// Options.KernelWindowSteps, SetKernelWindows).
const (
	// DefaultKernelWindowEvery: a window costs the stepping thread about
	// 11-15 ms on an H200 in a torch process (CUPTI's initialisation and
	// detach) plus its steps collected, 0.1-0.2% of serving time at one
	// window in 10 s.
	DefaultKernelWindowEvery = 10 * time.Second
	MinKernelWindowEvery     = time.Millisecond
	MaxKernelWindowEvery     = 24 * time.Hour
	DefaultKernelWindowSteps = 1
	MaxKernelWindowSteps     = 1024
)

// StartTimesIdle is how long after the last RecentSpans or KeepStartTimes
// call a hub at StartTimesAuto keeps placing spans on the host clock. Readers (span files, traces, OTLP)
// poll every few seconds; a minute covers a slow one.
const StartTimesIdle = time.Minute

// StartTimes says when harvests place spans on the host clock
// (Span.StartNs). Placing a span costs one more driver call per span in
// the harvest (the elapsed time from the host-clock anchor: about 600 ns
// on an H200, as much as the rest of the landing), which a hub that is
// only scraped for metrics then never pays. Unplaced spans carry StartNs 0
// (timeline traces and OTLP leave them out); durations, aggregates and
// metrics are the same either way.
type StartTimes uint8

const (
	// StartTimesAuto places spans only while something reads them: from a
	// RecentSpans or KeepStartTimes call until StartTimesIdle passes
	// without one.
	StartTimesAuto StartTimes = iota
	// StartTimesNever never places a span.
	StartTimesNever
	// StartTimesAlways places every span.
	StartTimesAlways
)

// String names the mode as the C ABI and Python spell it: "auto",
// "never" or "always".
func (s StartTimes) String() string {
	switch s {
	case StartTimesAuto:
		return "auto"
	case StartTimesNever:
		return "never"
	case StartTimesAlways:
		return "always"
	}
	return fmt.Sprintf("StartTimes(%d)", uint8(s))
}

// ParseStartTimes reads "auto", "never" or "always", in any case, with
// surrounding white space ignored.
func ParseStartTimes(text string) (StartTimes, error) {
	t := strings.ToLower(strings.TrimSpace(text))
	for s := StartTimesAuto; s <= StartTimesAlways; s++ {
		if t == s.String() {
			return s, nil
		}
	}
	return 0, fmt.Errorf("gpuspans: start times %q: want auto, never or always", text)
}

// MarshalText implements encoding.TextMarshaler (flags, JSON).
func (s StartTimes) MarshalText() ([]byte, error) {
	if s > StartTimesAlways {
		return nil, fmt.Errorf("gpuspans: invalid start times %d", uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler, as ParseStartTimes.
func (s *StartTimes) UnmarshalText(b []byte) error {
	v, err := ParseStartTimes(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Validate reports the first field of o out of bounds, as New would. New
// also needs KernelTracer for a KernelTiming other than events, which a
// caller may fill in later.
func (o Options) Validate() error {
	_, err := o.resolve()
	return err
}

// resolve returns o with every default filled in, or an error naming the
// first field out of bounds. Lanes is copied: the hub keeps its own.
func (o Options) resolve() (Options, error) {
	if o.Lanes == nil {
		o.Lanes = defaultLanes
	}
	// Zero lanes is decided here, for every surface: refused, since a hub
	// without lanes records nothing every step.
	if len(o.Lanes) == 0 {
		return o, errors.New("gpuspans: Options.Lanes is empty: want at least one lane name (unset: the default lanes)")
	}
	if len(o.Lanes) > MaxLanes {
		return o, fmt.Errorf("gpuspans: Options.Lanes has %d lanes, more than %d", len(o.Lanes), MaxLanes)
	}
	o.Lanes = append([]string(nil), o.Lanes...)
	seen := make(map[string]bool, len(o.Lanes))
	for i, name := range o.Lanes {
		if err := checkName(name); err != nil {
			return o, fmt.Errorf("gpuspans: Options.Lanes[%d]: %w", i, err)
		}
		if seen[name] {
			return o, fmt.Errorf("gpuspans: Options.Lanes[%d]: duplicate lane %q", i, name)
		}
		seen[name] = true
	}
	if !o.Level.valid() {
		return o, fmt.Errorf("gpuspans: Options.Level is %v", o.Level)
	}
	var err error
	if o.KernelSpanEvery, err = orDefault(o.KernelSpanEvery, DefaultKernelSpanEvery, MaxKernelSpanEvery, "KernelSpanEvery"); err != nil {
		return o, err
	}
	if o.Slots, err = orDefault(o.Slots, DefaultSlots, backend.MaxSlots, "Slots"); err != nil {
		return o, err
	}
	if o.RecentSpans, err = orDefault(o.RecentSpans, DefaultRecentSpans, MaxRecentSpans, "RecentSpans"); err != nil {
		return o, err
	}
	if o.KernelLabels, err = orDefault(o.KernelLabels, DefaultKernelLabels, MaxKernels, "KernelLabels"); err != nil {
		return o, err
	}
	if o.MaxRequests, err = orDefault(o.MaxRequests, DefaultMaxRequests, MaxRequests, "MaxRequests"); err != nil {
		return o, err
	}
	if o.RequestLabels, err = orDefault(o.RequestLabels, DefaultRequestLabels, MaxRequestClasses, "RequestLabels"); err != nil {
		return o, err
	}
	if !(o.PeakFlops >= 0 && o.PeakFlops <= 1e18) {
		return o, fmt.Errorf("gpuspans: Options.PeakFlops is %v, want 0..1e18 (0: the device model's)", o.PeakFlops)
	}
	if !(o.PeakBandwidth >= 0 && o.PeakBandwidth <= 1e15) {
		return o, fmt.Errorf("gpuspans: Options.PeakBandwidth is %v, want 0..1e15 (0: the device model's)", o.PeakBandwidth)
	}
	if o.StartTimes > StartTimesAlways {
		return o, fmt.Errorf("gpuspans: Options.StartTimes is %d, want StartTimesAuto, StartTimesNever or StartTimesAlways", o.StartTimes)
	}
	if o.KernelTiming > KernelTimingAttached {
		return o, fmt.Errorf("gpuspans: Options.KernelTiming is %v", o.KernelTiming)
	}
	if o.KernelWindowEvery, o.KernelWindowSteps, err = windowSettings(o.KernelWindowEvery, o.KernelWindowSteps, "Options.KernelWindowEvery", "Options.KernelWindowSteps"); err != nil {
		return o, err
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// orDefault is n, or def for 0; an error names field when n is outside 1..max.
func orDefault(n, def, max int, field string) (int, error) {
	switch {
	case n == 0:
		return def, nil
	case n < 0 || n > max:
		return 0, fmt.Errorf("gpuspans: Options.%s is %d, want 1..%d (0: %d)", field, n, max, def)
	}
	return n, nil
}

// checkKernelSpanEvery bounds a period set after New (op names the call).
func checkKernelSpanEvery(n int, op string) error {
	if n <= 0 || n > MaxKernelSpanEvery {
		return fmt.Errorf("gpuspans: %s(%d): want 1..%d", op, n, MaxKernelSpanEvery)
	}
	return nil
}

// windowSettings applies the defaults and bounds of the window settings;
// errors name the setting as the caller spells it.
func windowSettings(every time.Duration, steps int, everyName, stepsName string) (time.Duration, int, error) {
	switch {
	case every == 0:
		every = DefaultKernelWindowEvery
	case every < MinKernelWindowEvery || every > MaxKernelWindowEvery:
		return 0, 0, fmt.Errorf("gpuspans: %s is %v, want %v..%v (0: %v)", everyName, every, MinKernelWindowEvery, MaxKernelWindowEvery, DefaultKernelWindowEvery)
	}
	switch {
	case steps == 0:
		steps = DefaultKernelWindowSteps
	case steps < 0 || steps > MaxKernelWindowSteps:
		return 0, 0, fmt.Errorf("gpuspans: %s is %d, want 1..%d (0: %d)", stepsName, steps, MaxKernelWindowSteps, DefaultKernelWindowSteps)
	}
	return every, steps, nil
}

// checkName validates a lane or kernel name: it becomes a label value, so it
// must be short, valid UTF-8 and printable.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("name of %d bytes, more than %d", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("name %q is not valid UTF-8", name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("name %q has an unprintable character", name)
		}
	}
	return nil
}

// Options returns the options the hub runs with now, every default filled
// in: the level, arming period, kernel timing and window settings as last
// set, the rest as New fixed them. Logf, Now, KernelTracer and StateMirror
// are left nil (New needs a KernelTracer again for a kernel timing other
// than events).
func (h *Hub) Options() Options {
	var o Options
	h.optionsInto(&o)
	return o
}

// optionsInto is Options reusing o.Lanes' array.
func (h *Hub) optionsInto(o *Options) {
	lanes := append(o.Lanes[:0], h.lanes...)
	if lanes == nil {
		lanes = []string{} // a hub of no lanes: nil would read as the default lanes
	}
	*o = Options{
		Lanes:             lanes,
		KernelSpanEvery:   h.KernelSpanEvery(),
		Slots:             h.slots,
		RecentSpans:       h.recentCap,
		Level:             h.Level(),
		StartTimes:        h.starts,
		RawKernelSpans:    h.raw,
		KernelTiming:      h.kw.timing(),
		KernelWindowEvery: time.Duration(h.kw.every.Load()),
		KernelWindowSteps: int(h.kw.nsteps.Load()),
		KernelLabels:      h.tl.labels,
		MaxRequests:       h.rq.maxReqs,
		RequestLabels:     h.reqLabels,
		PeakFlops:         h.peakFLOPS,
		PeakBandwidth:     h.peakBW,
	}
}

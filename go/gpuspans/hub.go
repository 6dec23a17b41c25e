package gpuspans

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gpuspans/gpuspans/go/backend"
)

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

	// MaxBusyRetired is how many retired pools a hub keeps asking to close
	// while they answer ErrBusy with none of their spans left (an event
	// that never completes, or a pool that always says busy). Past it the
	// oldest is given up on: counted (AbandonedPools), logged, and left
	// unclosed, so that its events leak rather than the hub's memory and
	// harvest time grow with every re-install.
	MaxBusyRetired = 8
)

// LeakSteps is how long a span may stay open: a span begun and not ended
// that harvests still see open LeakSteps calls of BeginStep after they first
// saw it (at any level: at Off too, where the step counter stands still but
// an open pool still makes steps harvest) is reclaimed, counted as dropped
// (DropLeaked), and its slot reused; its late end, if any, counts as a bad
// end. Lane and kernel spans are meant to end within their step, so only a
// lost KernelSpan or a lane never ended stays open this long; without
// reclaiming, such spans would hold their slots for good and, once they
// held every slot, drop every later span.
const LeakSteps = 256

// Defaults for the zero Options.
const (
	DefaultKernelSpanEvery = 16
	DefaultSlots           = 4096
	DefaultRecentSpans     = 8192
)

// OtherKernel is the name every span of an unregistered kernel handle is
// aggregated under, so that the kernel label set stays bounded.
const OtherKernel = "other"

// defaultLanes are the serve lanes of the default hub and of Options with no
// Lanes.
var defaultLanes = []string{"prefill", "decode"}

// Options configures a Hub. The zero value is valid: lanes "prefill" and
// "decode", level Off, and the defaults above.
type Options struct {
	// Lanes names the serve lanes; LaneBegin and LaneEnd take an index into
	// it. Fixed after New. Nil means "prefill", "decode".
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
	// Kernel; it is required for all but events.
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

// Hub is the control plane of GPU spans: the level, the step counter, one
// recorder per device, and the aggregates that harvests land.
//
// All methods are safe for concurrent use. The span paths (BeginStep,
// LaneBegin, LaneEnd, KernelBegin, KernelEnd) never block and never
// allocate; what each does when disabled is in its doc. Harvest never blocks
// either; Snapshot, RecentSpans, Install, Uninstall and RegisterKernel take
// the harvest lock briefly.
type Hub struct {
	// Read on every span path: kept apart from the counters the paths write.
	// state and pools are plain words used only through sync/atomic
	// functions: the typed atomics' method calls cost just enough to stop
	// the entry points' disabled checks from inlining.
	state uint32 // level | armedBit | tracerBit
	pools int32  // opened pools not yet closed: harvests have work even below Kernel
	set   atomic.Pointer[recorderSet]
	_     [cacheLine]byte

	step       atomic.Uint64
	leakClock  atomic.Uint64 // BeginStep calls with work, at any level: the age of open spans
	every      atomic.Int64
	background atomic.Bool // a RunHarvester is running: BeginStep does not harvest
	armedSteps atomic.Uint64
	openLanes  atomic.Int64 // lane spans open on any recorder: LaneEnd has work

	// Counters written on span paths, rarely: only when something goes wrong.
	unknownLane     atomic.Uint64
	laneAlreadyOpen atomic.Uint64
	badEnd          atomic.Uint64
	stickyDisables  atomic.Uint64
	poolPanics      atomic.Uint64
	harvestsSkipped atomic.Uint64
	// devc counts span outcomes by device; Counters' totals are their sums.
	devc [MaxDevices]devCounts

	// Fixed at New.
	lanes   []string
	laneIdx map[string]int
	slots   int
	logf    func(format string, args ...interface{})
	now     func() time.Time
	starts  StartTimes
	raw     bool           // Options.RawKernelSpans
	mirror  *uint32        // Options.StateMirror, or nil
	kw      *kernelWindows // the kernel tracer's life; never nil
	// leakSteps is LeakSteps; tests shorten it.
	leakSteps uint64

	// mu is the harvest lock. Harvest takes it with TryLock and skips when it
	// is held; readers and control calls take it briefly. It guards all below.
	mu                sync.Mutex
	recs              []*recorder // every recorder not yet finished, by device, oldest first
	installFailures   uint64
	harvestFailures   uint64
	abandonedPools    uint64
	harvests          uint64
	harvestTime       time.Duration
	kernelIdx         map[uint64]int // handle -> index into kernelNames
	kernelMemo        *kernelMemo    // in front of kernelIdx for landings; made at the first kernel span landed
	kernelNames       []string       // [0] is OtherKernel
	devs              [MaxDevices]*deviceAggs
	recentCap         int
	recent            []Span // ring, indexed by Seq % len; made at the first landing, so an idle hub holds none
	recentSeq         uint64 // Seq of the newest span landed
	recentRead        uint64 // highest Seq RecentSpans has returned
	recentOverwritten uint64
	readAt            time.Time // the last RecentSpans or KeepStartTimes call, for StartTimesAuto
	want              uint32    // HarvestItem.WantStart for the harvest under way
	win               winRing   // the recent windows (windows.go)
	tl                tracerLanding
}

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

// wantStarts reports whether a harvest starting at now places spans.
// Caller holds h.mu.
func (h *Hub) wantStarts(now time.Time) bool {
	switch h.starts {
	case StartTimesNever:
		return false
	case StartTimesAlways:
		return true
	}
	return !h.readAt.IsZero() && now.Sub(h.readAt) < StartTimesIdle
}

// devCounts are one device's share of the hub's span outcome counters.
type devCounts struct {
	dropped       [numDropReasons]atomic.Uint64
	errored       atomic.Uint64
	landed        uint64 // harvest lock
	begunFinished uint64 // harvest lock: spans begun on its recorders since finished
}

// finish adds a sealed recorder's spans to the totals. Caller holds h.mu.
func (h *Hub) finish(r *recorder) {
	h.devc[r.device].begunFinished += r.seal()
}

// cacheLine pads apart words that different goroutines write.
const cacheLine = 64

// recorderSet is what the span paths see of the installed recorders: an
// immutable value replaced whole (copy on write) by Install and Uninstall,
// so the paths read it with one atomic load and no lock.
type recorderSet struct {
	current  []*recorder // the installed recorder of each device, by device
	byDevice [MaxDevices]*recorder
}

// deviceAggs are the aggregates of one device, indexed like Hub.lanes and
// Hub.kernelNames. Guarded by the harvest lock.
type deviceAggs struct {
	lanes   []Aggregate
	kernels []Aggregate
}

// New returns a hub configured by o. It touches no GPU: pools open at the
// first BeginStep at LevelKernel. Errors name the offending field.
func New(o Options) (*Hub, error) {
	lanes := o.Lanes
	if lanes == nil {
		lanes = defaultLanes
	}
	if len(lanes) > MaxLanes {
		return nil, fmt.Errorf("gpuspans: Options.Lanes has %d lanes, more than %d", len(lanes), MaxLanes)
	}
	h := &Hub{
		lanes:       append([]string(nil), lanes...),
		laneIdx:     make(map[string]int, len(lanes)),
		slots:       o.Slots,
		logf:        o.Logf,
		now:         o.Now,
		leakSteps:   LeakSteps,
		kernelIdx:   make(map[uint64]int),
		kernelNames: []string{OtherKernel},
	}
	h.raw = o.RawKernelSpans
	h.mirror = o.StateMirror
	if o.StartTimes > StartTimesAlways {
		return nil, fmt.Errorf("gpuspans: Options.StartTimes is %d, want StartTimesAuto, StartTimesNever or StartTimesAlways", o.StartTimes)
	}
	h.starts = o.StartTimes
	for i, name := range h.lanes {
		if err := checkName(name); err != nil {
			return nil, fmt.Errorf("gpuspans: Options.Lanes[%d]: %w", i, err)
		}
		if _, dup := h.laneIdx[name]; dup {
			return nil, fmt.Errorf("gpuspans: Options.Lanes[%d]: duplicate lane %q", i, name)
		}
		h.laneIdx[name] = i
	}
	every := o.KernelSpanEvery
	switch {
	case every == 0:
		every = DefaultKernelSpanEvery
	case every < 0 || every > MaxKernelSpanEvery:
		return nil, fmt.Errorf("gpuspans: Options.KernelSpanEvery is %d, want 1..%d", every, MaxKernelSpanEvery)
	}
	switch {
	case h.slots == 0:
		h.slots = DefaultSlots
	case h.slots < 0 || h.slots > backend.MaxSlots:
		return nil, fmt.Errorf("gpuspans: Options.Slots is %d, want 1..%d", h.slots, backend.MaxSlots)
	}
	recent := o.RecentSpans
	switch {
	case recent == 0:
		recent = DefaultRecentSpans
	case recent < 0 || recent > MaxRecentSpans:
		return nil, fmt.Errorf("gpuspans: Options.RecentSpans is %d, want 1..%d", recent, MaxRecentSpans)
	}
	if !o.Level.valid() {
		return nil, fmt.Errorf("gpuspans: Options.Level is %v", o.Level)
	}
	if h.logf == nil {
		h.logf = log.Printf
	}
	if h.now == nil {
		h.now = time.Now
	}
	switch labels := o.KernelLabels; {
	case labels == 0:
		h.tl.labels = DefaultKernelLabels
	case labels < 0 || labels > MaxKernels:
		return nil, fmt.Errorf("gpuspans: Options.KernelLabels is %d, want 1..%d", labels, MaxKernels)
	default:
		h.tl.labels = labels
	}
	kw, err := newKernelWindows(o, func(f string, a ...interface{}) { h.logf(f, a...) }, func() time.Time { return h.now() })
	if err != nil {
		return nil, err
	}
	h.kw = kw
	h.recentCap = recent
	h.win = newWinRing()
	h.every.Store(int64(every))
	atomic.StoreUint32(&h.state, uint32(o.Level))
	h.set.Store(&recorderSet{})
	h.syncMirror()
	return h, nil
}

// Bits of the Options.StateMirror word.
const (
	MirrorLevel uint32 = levelMask // the Level
	MirrorArmed uint32 = armedBit  // this step is armed for kernel spans (only ever at LevelKernel)
	// MirrorPools is set while any pool is open: BeginStep then harvests at
	// every level, and lane spans may be open (LaneEnd has work) even below
	// LevelKernel.
	MirrorPools uint32 = 0x8
	// MirrorTracer is set while the kernel tracer is open (a kernel
	// window, or attached): BeginStep then has work at every level, since
	// only it may close the tracer.
	MirrorTracer uint32 = tracerBit
)

// syncMirror copies the state into Options.StateMirror. Every writer of the
// state or of pools calls it after its change, and it stores until what it
// stored is still current, so the last store of racing writers holds the
// latest state: the word can lag a change in progress, never a finished one.
func (h *Hub) syncMirror() {
	if h.mirror == nil {
		return
	}
	for {
		v := h.mirrorValue()
		atomic.StoreUint32(h.mirror, v)
		if h.mirrorValue() == v {
			return
		}
	}
}

func (h *Hub) mirrorValue() uint32 {
	v := atomic.LoadUint32(&h.state)
	if atomic.LoadInt32(&h.pools) != 0 {
		v |= MirrorPools
	}
	return v
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

var defaultHub atomic.Pointer[Hub]

// Default returns the process default hub: lanes "prefill" and "decode",
// level Off, made on first use.
func Default() *Hub {
	if h := defaultHub.Load(); h != nil {
		return h
	}
	h, err := New(Options{})
	if err != nil {
		panic(err) // the zero Options are valid; this is a bug in New
	}
	if defaultHub.CompareAndSwap(nil, h) {
		return h
	}
	return defaultHub.Load()
}

// SetDefault makes h the process default hub. It panics on nil, which would
// only defer the failure to the first span. Callers that cached Default()
// keep the old hub.
func SetDefault(h *Hub) {
	if h == nil {
		panic("gpuspans: SetDefault(nil)")
	}
	defaultHub.Store(h)
}

// SetLevel sets the level. A level other than Off, Step or Kernel is an
// error naming it, and changes nothing. Lowering below Kernel disarms kernel
// spans in the same atomic update; the next BeginStep closes the kernel
// tracer if one is open, on its own thread. Raising to Kernel arms nothing
// until the next BeginStep. Spans already open stay valid and may still be
// ended.
func (h *Hub) SetLevel(l Level) error {
	if !l.valid() {
		return fmt.Errorf("gpuspans: SetLevel: invalid level %v", l)
	}
	for {
		old := atomic.LoadUint32(&h.state)
		next := uint32(l) | old&tracerBit
		if l == LevelKernel {
			next |= old & armedBit
		}
		if atomic.CompareAndSwapUint32(&h.state, old, next) {
			h.syncMirror()
			return nil
		}
	}
}

// Level returns the current level.
func (h *Hub) Level() Level { return Level(atomic.LoadUint32(&h.state) & levelMask) }

// SetKernelSpanEvery arms kernel spans on one step in n from the next
// BeginStep on. n <= 0 is an error.
func (h *Hub) SetKernelSpanEvery(n int) error {
	if n <= 0 || n > MaxKernelSpanEvery {
		return fmt.Errorf("gpuspans: SetKernelSpanEvery(%d): want 1..%d", n, MaxKernelSpanEvery)
	}
	h.every.Store(int64(n))
	return nil
}

// KernelSpanEvery returns the arming period in steps.
func (h *Hub) KernelSpanEvery() int { return int(h.every.Load()) }

// Step returns the step counter: the Step that spans begun now carry (it
// counts at LevelStep and above, so it stands still at Off). An engine reads
// it after BeginStep to tell an exporter which requests the step serves.
// One atomic load.
func (h *Hub) Step() uint64 { return h.step.Load() }

// Lanes returns a copy of the lane names; index i is lane i.
func (h *Hub) Lanes() []string { return append([]string(nil), h.lanes...) }

// LaneIndex returns the index of the lane called name, for LaneBegin and
// LaneEnd.
func (h *Hub) LaneIndex(name string) (int, bool) {
	i, ok := h.laneIdx[name]
	return i, ok
}

// RegisterKernel names a kernel handle (a CUfunction's pointer value) so its
// spans aggregate under name; spans of handles never registered aggregate
// under OtherKernel. Registering a handle again renames it from then on
// (spans already landed keep the old name). At most MaxKernels handles and
// MaxKernels distinct names; names are validated like lane names and may not
// be OtherKernel. Takes the harvest lock.
func (h *Hub) RegisterKernel(handle uint64, name string) error {
	if err := checkName(name); err != nil {
		return fmt.Errorf("gpuspans: RegisterKernel(%#x): %w", handle, err)
	}
	if name == OtherKernel {
		return fmt.Errorf("gpuspans: RegisterKernel(%#x): %q is reserved for unregistered kernels", handle, name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.kernelIdx[handle]; !ok && len(h.kernelIdx) >= MaxKernels {
		return fmt.Errorf("gpuspans: RegisterKernel(%#x, %q): %d handles registered already", handle, name, MaxKernels)
	}
	idx := -1
	for i, n := range h.kernelNames {
		if n == name {
			idx = i
			break
		}
	}
	if idx < 0 {
		var err error
		if idx, err = h.addKernelName(name); err != nil {
			return fmt.Errorf("gpuspans: RegisterKernel(%#x, %q): %w", handle, name, err)
		}
	}
	h.kernelIdx[handle] = idx
	if h.kernelMemo != nil {
		*h.kernelMemo = kernelMemo{} // forget the old index, in place: landings allocate nothing
	}
	return nil
}

// addKernelName adds a kernel aggregate called name on every device and
// returns its index. Caller holds h.mu and has checked name is new.
func (h *Hub) addKernelName(name string) (int, error) {
	if len(h.kernelNames)-1 >= MaxKernels {
		return 0, fmt.Errorf("%d kernel names registered already", MaxKernels)
	}
	idx := len(h.kernelNames)
	h.kernelNames = append(h.kernelNames, name)
	for dev, d := range h.devs {
		if d != nil {
			d.kernels = append(d.kernels, Aggregate{Device: dev, Name: name})
		}
	}
	return idx, nil
}

// Install attaches a recorder for device, recording lane spans on stream and
// opening its pool with open at the first BeginStep that finds LevelKernel
// (so nothing touches the GPU below Kernel). It replaces the device's
// previous recorder, which is retired: it begins no new spans, its open lane
// spans are abandoned, its other spans still land, and its pool is closed at
// a later harvest once none of its slots is open or in flight. Safe from any
// goroutine; takes the harvest lock, and makes no backend call except to
// close an idle retired pool.
func (h *Hub) Install(device int, stream backend.Stream, open backend.Opener) error {
	if device < 0 || device >= MaxDevices {
		return fmt.Errorf("gpuspans: Install: device %d outside 0..%d", device, MaxDevices-1)
	}
	if open == nil {
		return fmt.Errorf("gpuspans: Install(device %d): nil Opener", device)
	}
	r := &recorder{
		hub:     h,
		device:  device,
		stream:  stream,
		open:    open,
		laneTok: make([]atomic.Uint64, len(h.lanes)),
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.devs[device] == nil {
		d := &deviceAggs{
			lanes:   make([]Aggregate, len(h.lanes)),
			kernels: make([]Aggregate, len(h.kernelNames)),
		}
		for i, name := range h.lanes {
			d.lanes[i] = Aggregate{Device: device, Name: name}
		}
		for i, name := range h.kernelNames {
			d.kernels[i] = Aggregate{Device: device, Name: name}
		}
		h.devs[device] = d
	}
	i := len(h.recs)
	for i > 0 && h.recs[i-1].device > device {
		i--
	}
	h.recs = append(h.recs, nil)
	copy(h.recs[i+1:], h.recs[i:])
	h.recs[i] = r
	h.replace(device, r)
	return nil
}

// Uninstall retires device's recorder, as a replacing Install would; its
// spans still land. A device with no recorder is left alone. Safe from any
// goroutine; takes the harvest lock.
func (h *Hub) Uninstall(device int) {
	if device < 0 || device >= MaxDevices {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.replace(device, nil)
}

// replace publishes r (nil: none) as device's recorder, retires the one it
// replaces and closes it at once if it is already idle. Caller holds h.mu.
func (h *Hub) replace(device int, r *recorder) {
	old := h.set.Load()
	next := &recorderSet{byDevice: old.byDevice}
	next.byDevice[device] = r
	for _, c := range next.byDevice {
		if c != nil {
			next.current = append(next.current, c)
		}
	}
	h.set.Store(next)
	if prev := old.byDevice[device]; prev != nil {
		prev.retire()
		h.sweep()
	}
}

// BeginStep marks the start of an engine step; the scheduler calls it once
// per step, before the step's lane spans. At LevelStep it counts the step.
// At LevelKernel it also arms kernel spans on one step in KernelSpanEvery
// (and disarms them on the others), opens pools installed since, and
// harvests. Below Kernel it still harvests while any pool is open, so spans
// begun before the level dropped land and retired pools close. The first
// step at Kernel opens the pools, which creates their events: a one-time
// cost of milliseconds. Meant for one goroutine: when steps race, arming
// follows whichever lands last. Never blocks. Disabled (level Off and no
// pool open) it loads two words, the state and the open-pool count, and
// returns; at Off with a pool still open it harvests (unless RunHarvester
// runs) so that the pool's spans land and a retired pool closes.
func (h *Hub) BeginStep() {
	// Off is state 0 (Off is never armed): one test covers both words.
	if atomic.LoadUint32(&h.state)|uint32(atomic.LoadInt32(&h.pools)) != 0 {
		h.beginStep()
	}
}

func (h *Hub) beginStep() {
	h.leakClock.Add(1)
	s := atomic.LoadUint32(&h.state)
	bg := h.background.Load()
	if Level(s&levelMask) != LevelKernel && s&tracerBit != 0 && h.mu.TryLock() {
		h.kw.step(false, 0, 0, true) // the level left Kernel: close the tracer, here
		h.mu.Unlock()
		h.syncTracerBit()
	}
	if Level(s&levelMask) == LevelOff {
		if !bg {
			h.Harvest()
		}
		return
	}
	step := h.step.Add(1)
	if Level(s&levelMask) != LevelKernel {
		if atomic.LoadInt32(&h.pools) != 0 && !bg {
			h.Harvest()
		}
		return
	}
	// The harvest lock first: pools installed since open here, before the
	// tracer may open (their calibration kernels are not the engine's), and
	// no harvest runs while the tracer attaches or detaches.
	locked := h.mu.TryLock()
	if locked {
		// Deferred, so that a panic in the caller's Logf or Now cannot
		// leave the lock held (pool methods cannot panic through: see
		// recoverPool).
		defer h.mu.Unlock()
		h.openPending()
	}
	h.arm(step, locked)
	if bg {
		return
	}
	if !locked {
		h.harvestsSkipped.Add(1)
		return
	}
	h.harvestLocked()
}

// arm sets the armed bit for an armed step and clears it otherwise, unless
// the level left Kernel meanwhile (then SetLevel has cleared it already).
// The kernel tracer decides while it is the source of kernel spans (a
// window's steps are armed), KernelSpanEvery otherwise.
func (h *Hub) arm(step uint64, locked bool) {
	every := h.every.Load()
	armed, decided := h.kw.step(true, step, every, locked)
	if !decided {
		armed = step%uint64(every) == 0
	}
	h.syncTracerBit()
	for {
		old := atomic.LoadUint32(&h.state)
		if Level(old&levelMask) != LevelKernel {
			return
		}
		next := old &^ armedBit
		if armed {
			next |= armedBit
		}
		if next == old {
			break
		}
		if atomic.CompareAndSwapUint32(&h.state, old, next) {
			h.syncMirror()
			break
		}
	}
	if armed {
		h.armedSteps.Add(1)
	}
}

// syncTracerBit makes the state word's tracerBit say whether the kernel
// tracer is open.
func (h *Hub) syncTracerBit() {
	want := h.kw.openNow.Load()
	for {
		old := atomic.LoadUint32(&h.state)
		next := old &^ tracerBit
		if want {
			next |= tracerBit
		}
		if next == old {
			return
		}
		if atomic.CompareAndSwapUint32(&h.state, old, next) {
			h.syncMirror()
			return
		}
	}
}

// Harvest lands every span whose events have completed, in one backend
// Harvest call per device, and closes idle retired pools. It never waits for
// the GPU and never blocks: when another harvest or a reader holds the
// harvest lock it returns at once (counted in HarvestsSkipped), and the spans
// stay in flight for the next one. BeginStep calls it; call it directly only
// to land spans between steps.
func (h *Hub) Harvest() {
	if !h.mu.TryLock() {
		h.harvestsSkipped.Add(1)
		return
	}
	defer h.mu.Unlock()
	h.harvestLocked()
}

// RunHarvester harvests every interval on the calling goroutine until ctx
// is done, so that BeginStep only counts and arms the step (docs/design.md,
// harvest, says why). Run it on a goroutine of its own
// (go hub.RunHarvester(ctx, time.Millisecond)). While it runs it
// also opens the pools of devices installed at level Kernel (at its next
// tick rather than at the next step), and spans land up to one interval
// later than at step begin. Like every harvest it never waits for the GPU,
// and a tick that finds the harvest lock held is skipped and counted.
// Harvests at step begin resume when it returns. It returns an error at
// once for an interval <= 0 or while another RunHarvester runs, and nil
// when ctx is done.
func (h *Hub) RunHarvester(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("gpuspans: RunHarvester: interval must be positive, got %v", interval)
	}
	if !h.background.CompareAndSwap(false, true) {
		return errors.New("gpuspans: RunHarvester: a harvester is already running on this hub")
	}
	defer h.background.Store(false)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			h.harvestInBackground()
		}
	}
}

// harvestInBackground is one RunHarvester tick: what BeginStep would do at
// its level, pools opened included.
func (h *Hub) harvestInBackground() {
	if !h.mu.TryLock() {
		h.harvestsSkipped.Add(1)
		return
	}
	defer h.mu.Unlock()
	if Level(atomic.LoadUint32(&h.state)&levelMask) == LevelKernel {
		h.openPending()
	}
	h.harvestLocked()
}

// openPending opens the pool of every recorder installed since the last
// step at Kernel. Caller holds h.mu.
func (h *Hub) openPending() {
	for _, r := range h.recs {
		if r.status.Load() != recPending {
			continue
		}
		if err := r.openPool(h.slots); err != nil {
			r.err.Store(&errBox{err})
			r.status.Store(recFailed)
			h.installFailures++
			h.logf("gpuspans: GPU spans off on device %d: %v", r.device, err)
			continue
		}
		atomic.AddInt32(&h.pools, 1)
		h.syncMirror()
	}
}

// harvestLocked harvests every recorder and closes the idle retired ones.
// Caller holds h.mu.
func (h *Hub) harvestLocked() {
	start := h.now()
	h.roll(start)
	h.want = 0
	if h.wantStarts(start) {
		h.want = 1
	}
	for _, r := range h.recs {
		r.harvest()
	}
	h.harvestTracer()
	h.sweep()
	h.harvests++
	h.harvestTime += h.now().Sub(start)
}

// sweep closes and forgets the retired recorders with no slot open or in
// flight. A pool whose Close reports ErrBusy is kept for a later sweep, up
// to MaxBusyRetired of them: past that the oldest are given up on. Any other
// Close error is logged and the pool forgotten, since retrying cannot help.
// Caller holds h.mu.
func (h *Hub) sweep() {
	kept := h.recs[:0]
	busy := 0
	for _, r := range h.recs {
		if r.status.Load()&recRetired == 0 || r.inFlight() != 0 {
			kept = append(kept, r)
			continue
		}
		if r.pool != nil {
			err := closePool(r.pool)
			if errors.Is(err, backend.ErrBusy) {
				r.closeBusy = true
				busy++
				kept = append(kept, r)
				continue
			}
			if err != nil {
				h.logf("gpuspans: closing the retired pool of device %d: %v", r.device, err)
			}
			atomic.AddInt32(&h.pools, -1)
			h.syncMirror()
		}
		h.finish(r)
	}
	if busy > MaxBusyRetired {
		// Oldest first: kept is in h.recs' order.
		k := kept[:0]
		for _, r := range kept {
			if busy > MaxBusyRetired && r.closeBusy {
				busy--
				h.abandonedPools++
				h.logf("gpuspans: giving up on closing a retired pool of device %d: still busy, and %d more are waiting; its events are left unreleased", r.device, MaxBusyRetired)
				atomic.AddInt32(&h.pools, -1)
				h.syncMirror()
				h.finish(r)
				continue
			}
			k = append(k, r)
		}
		kept = k
	}
	for i := len(kept); i < len(h.recs); i++ {
		h.recs[i] = nil
	}
	h.recs = kept
}

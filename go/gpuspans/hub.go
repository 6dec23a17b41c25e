// Over 600 lines: the Hub's state and the methods that change its level,
// its recorders and its step, which keep the state word, its mirror and
// the C step word (syncMirror, syncCStep) current in one place.

package gpuspans

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/internal/spanring"
)

// MaxBusyRetired is how many retired pools a hub keeps asking to close
// while they answer ErrBusy with none of their spans left (an event
// that never completes, or a pool that always says busy). Past it the
// oldest is given up on: counted (AbandonedPools), logged, and left
// unclosed, so that its events leak rather than the hub's memory and
// harvest time grow with every re-install.
const MaxBusyRetired = 8

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

// OtherKernel is the name every span of an unregistered kernel handle is
// aggregated under, so that the kernel label set stays bounded.
const OtherKernel = "other"

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
	cStep      atomic.Bool // a step outside Go may count, arm and store: syncCStep
	pending    atomic.Bool // an installed recorder's pool waits to open: syncPending
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
	gt                gpuTimes
	spanPath          spanring.Publisher // a span path outside Go, or nil (spanpath.go)

	prof profiles // this build's profile, while a profile is kept (profiles.go)
	led  ledger   // whose GPU time: the harvest's side (attribution.go)

	// Whose GPU time: the engine's side (requests.go), with its own lock.
	rq                reqInbox
	reqLabels         int
	peakFLOPS, peakBW float64
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
	outside []outsideLane // by lane, with a kernel tracer: GPU time's served estimate
}

// New returns a hub configured by o. It touches no GPU: pools open at the
// first BeginStep at LevelKernel. Errors name the offending field.
func New(o Options) (*Hub, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if o.KernelTiming != KernelTimingEvents && o.KernelTracer == nil {
		return nil, fmt.Errorf("gpuspans: Options.KernelTiming is %v but Options.KernelTracer is nil", o.KernelTiming)
	}
	h := &Hub{
		lanes:       o.Lanes,
		laneIdx:     make(map[string]int, len(o.Lanes)),
		slots:       o.Slots,
		logf:        o.Logf,
		now:         o.Now,
		starts:      o.StartTimes,
		raw:         o.RawKernelSpans,
		mirror:      o.StateMirror,
		leakSteps:   LeakSteps,
		kernelIdx:   make(map[uint64]int),
		kernelNames: []string{OtherKernel},
		recentCap:   o.RecentSpans,
		reqLabels:   o.RequestLabels,
		peakFLOPS:   o.PeakFlops,
		peakBW:      o.PeakBandwidth,
	}
	h.rq.maxReqs = o.MaxRequests
	for i, name := range h.lanes {
		h.laneIdx[name] = i
	}
	h.tl.labels = o.KernelLabels
	h.kw = newKernelWindows(o, func(f string, a ...interface{}) { h.logf(f, a...) }, func() time.Time { return h.now() })
	h.win = newWinRing()
	h.every.Store(int64(o.KernelSpanEvery))
	atomic.StoreUint32(&h.state, uint32(o.Level))
	h.set.Store(&recorderSet{})
	h.syncMirror()
	h.syncCStep()
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

// syncCStep publishes whether a span path outside Go may take a step by
// itself (spanring.Hub.CStep): count it, arm it on one in KernelSpanEvery
// and store the state, which is all beginStep does while a RunHarvester
// runs, kernel timing is events, the kernel tracer is closed and, at
// Kernel, no pool waits to open. Anything else (a tracer to close or open,
// a pool to open, a harvest at step begin) is the stepping thread's in Go.
// Every writer of what it reads calls it after its change, and it stores
// as syncMirror does.
func (h *Hub) syncCStep() {
	for {
		v := h.cStepValue()
		h.cStep.Store(v)
		if h.cStepValue() == v {
			return
		}
	}
}

func (h *Hub) cStepValue() bool {
	s := atomic.LoadUint32(&h.state)
	return h.background.Load() && h.kw.timing() == KernelTimingEvents && s&tracerBit == 0 &&
		(Level(s&levelMask) != LevelKernel || !h.pending.Load())
}

// syncPending records whether an installed recorder's pool waits for a
// step at Kernel to open it. Caller holds h.mu.
func (h *Hub) syncPending() {
	pending := false
	for _, r := range h.recs {
		pending = pending || r.status.Load() == recPending
	}
	h.pending.Store(pending)
	h.syncCStep()
}

func (h *Hub) mirrorValue() uint32 {
	v := atomic.LoadUint32(&h.state)
	if atomic.LoadInt32(&h.pools) != 0 {
		v |= MirrorPools
	}
	return v
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
			h.syncCStep()
			return nil
		}
	}
}

// Level returns the current level.
func (h *Hub) Level() Level { return Level(atomic.LoadUint32(&h.state) & levelMask) }

// SetKernelSpanEvery arms kernel spans on one step in n from the next
// BeginStep on. n <= 0 is an error.
func (h *Hub) SetKernelSpanEvery(n int) error {
	if err := checkKernelSpanEvery(n, "SetKernelSpanEvery"); err != nil {
		return err
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
		if h.kw.opener != nil {
			d.outside = make([]outsideLane, len(h.lanes))
		}
		h.devs[device] = d
		h.win.addLanes(device, len(h.lanes))
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
	h.publish()
	if prev := old.byDevice[device]; prev != nil {
		prev.retire()
		h.sweep()
	}
	h.syncPending()
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
			h.syncCStep()
			return
		}
	}
}

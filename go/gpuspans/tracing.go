package gpuspans

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// KernelTiming chooses where kernel spans come from (docs/design.md, kernel
// spans).
type KernelTiming uint8

const (
	// KernelTimingEvents: an event pair around each launch the engine
	// brackets with KernelBegin and KernelEnd, on armed steps.
	KernelTimingEvents KernelTiming = iota
	// KernelTimingAuto: every kernel the process runs on an installed
	// device during armed steps, graph replays included, from the kernel
	// tracer (Options.KernelTracer, CUPTI); while the tracer cannot be
	// used, event pairs as with KernelTimingEvents, the reason logged once
	// and kept in Snapshot.KernelTiming.
	KernelTimingAuto
	// KernelTimingCUPTI is KernelTimingAuto for a caller that counts on
	// the tracer: the same fallback, logged as a failure to honour the
	// choice.
	KernelTimingCUPTI
)

// String names the choice as the command and the HTTP surface spell it.
func (k KernelTiming) String() string {
	switch k {
	case KernelTimingEvents:
		return "events"
	case KernelTimingAuto:
		return "auto"
	case KernelTimingCUPTI:
		return "cupti"
	}
	return fmt.Sprintf("KernelTiming(%d)", uint8(k))
}

// ParseKernelTiming reads "events", "auto" or "cupti", in any case, with
// surrounding white space ignored.
func ParseKernelTiming(s string) (KernelTiming, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for k := KernelTimingEvents; k <= KernelTimingCUPTI; k++ {
		if t == k.String() {
			return k, nil
		}
	}
	return 0, fmt.Errorf("gpuspans: kernel timing %q: want events, auto or cupti", s)
}

// MarshalText implements encoding.TextMarshaler (flags, JSON).
func (k KernelTiming) MarshalText() ([]byte, error) {
	if k > KernelTimingCUPTI {
		return nil, fmt.Errorf("gpuspans: invalid kernel timing %d", uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler, as ParseKernelTiming.
func (k *KernelTiming) UnmarshalText(b []byte) error {
	v, err := ParseKernelTiming(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// DefaultKernelLabels is Options.KernelLabels' default.
const DefaultKernelLabels = 32

// KernelTimingStatus is where a hub's kernel spans come from now, for
// exporters and pages.
type KernelTimingStatus struct {
	Mode    KernelTiming // as asked (Options.KernelTiming, SetKernelTiming)
	Tracing bool         // kernel spans come from the tracer now
	// Err is why they do not, with a mode other than events: the tracer
	// could not open, was refused, or is held by another client. Nil
	// while the tracer has not been tried yet (below level Kernel).
	Err       error
	Fallbacks uint64 // times the tracer was given up for event pairs
	Records   uint64 // kernel records the tracer collected (since it last opened)
	Labels    int    // traced kernel names with a label of their own
}

// windowRing is how many armed windows the hub remembers to attribute traced
// kernels to steps. Records reach the hub up to a flush period (100 ms)
// after their window, and longer when collection stays on across a run of
// armed steps: 4,096 windows cover that at any step rate an engine reaches.
// 64 KiB, made when a tracer first opens.
const windowRing = 4096

// window is one armed step's collection window, opened at its BeginStep.
type window struct {
	step    uint64
	startNs int64 // Unix ns, by Options.Now (the tracer's ClockOffset maps onto the same clock)
}

// tracerState is the tracer's lifecycle, under the harvest lock.
type tracerState uint8

const (
	tracerPending tracerState = iota // opens at the next step at Kernel
	tracerOpen
	tracerOff // events: the tracer failed, was refused, or the mode is events
)

// tracing is the hub's side of the kernel tracer. Fixed at New: open,
// labels. The span paths read active and on; mu serialises collection
// switches and the windows; the rest is the harvest lock's.
type tracing struct {
	open   backend.TracerOpener
	labels int

	active atomic.Bool // the tracer is open and in use: KernelBegin opens no event pair
	on     atomic.Bool // collection is on (applied under mu)
	failed atomic.Pointer[errBox]

	mu      sync.Mutex
	t       backend.KernelTracer // the open tracer, or nil
	windows []window             // ring of windowRing, made at the first open
	wn      uint64               // windows opened

	mode        KernelTiming
	state       tracerState
	err         error
	fallbacks   uint64
	buf         []backend.KernelRecord
	nameIdx     []int32 // tracer name id -> kernel aggregate index + 1; 0: not yet seen
	labelled    int
	dropped     [backend.MaxTracerDevices]uint64 // the tracer's drops already counted
	offset      int64                            // Unix ns minus the tracer's clock
	offsetAt    time.Time
	win         []window // the harvest's copy of the newest windows, oldest first
	copied      uint64   // windows opened that win has
	pendingName []pendingName
}

type pendingName struct {
	id   uint32
	name string
	ns   int64
}

// tracerBatch is how many records a harvest reads per call into the core.
const tracerBatch = 4096

func newTracing(o Options) (*tracing, error) {
	if o.KernelTiming > KernelTimingCUPTI {
		return nil, fmt.Errorf("gpuspans: Options.KernelTiming is %v", o.KernelTiming)
	}
	labels := o.KernelLabels
	switch {
	case labels == 0:
		labels = DefaultKernelLabels
	case labels < 0 || labels > MaxKernels:
		return nil, fmt.Errorf("gpuspans: Options.KernelLabels is %d, want 1..%d", labels, MaxKernels)
	}
	if o.KernelTiming != KernelTimingEvents && o.KernelTracer == nil {
		return nil, fmt.Errorf("gpuspans: Options.KernelTiming is %v but Options.KernelTracer is nil", o.KernelTiming)
	}
	tr := &tracing{open: o.KernelTracer, labels: labels, mode: o.KernelTiming, state: tracerOff}
	if o.KernelTiming != KernelTimingEvents {
		tr.state = tracerPending
	}
	return tr, nil
}

// SetKernelTiming switches the source of kernel spans from the next step
// on. Events closes the tracer, so that a profiler (torch.profiler, Nsight)
// may take the process's CUPTI; its records so far land first. Auto or
// CUPTI (re)opens it at the next step at level Kernel, and needs
// Options.KernelTracer. Takes the harvest lock; closing the tracer waits
// for its last flush (about a millisecond).
func (h *Hub) SetKernelTiming(k KernelTiming) error {
	tr := h.tr
	if k > KernelTimingCUPTI {
		return fmt.Errorf("gpuspans: SetKernelTiming: invalid kernel timing %v", k)
	}
	if k != KernelTimingEvents && tr.open == nil {
		return fmt.Errorf("gpuspans: SetKernelTiming(%v): the hub has no Options.KernelTracer", k)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	tr.mode = k
	if k == KernelTimingEvents {
		h.closeTracer(nil)
		tr.err = nil
		return nil
	}
	if tr.state == tracerOff {
		tr.state = tracerPending
		tr.err = nil
	}
	return nil
}

// KernelTiming returns the source of kernel spans as last asked.
func (h *Hub) KernelTiming() KernelTiming {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tr.mode
}

// KernelTimingStatus is Snapshot.KernelTiming without the rest of a
// snapshot. Takes the harvest lock briefly.
func (h *Hub) KernelTimingStatus() KernelTimingStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.kernelTimingStatus()
}

// suspendTracer closes the tracer when the level leaves Kernel (its flush
// thread stops, CUPTI is free for other clients), and has it (re)tried at
// the next step at Kernel. CUPTI stays attached to the process: detaching
// (cuptiFinalize) broke a CUDA graph's next replay on an H200
// (bench/cupti/graph_toggle.cc), which a serving engine must never risk.
func (h *Hub) suspendTracer() {
	tr := h.tr
	if tr.open == nil {
		return // no tracer ever: SetLevel stays lock-free
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if tr.mode == KernelTimingEvents || atomic.LoadUint32(&h.state)&levelMask == uint32(LevelKernel) {
		return // events, or raised again meanwhile
	}
	h.closeTracer(nil)
	tr.state = tracerPending
}

// openTracer opens the tracer if it is pending. Caller holds h.mu.
func (h *Hub) openTracer() {
	tr := h.tr
	if tr.state != tracerPending {
		return
	}
	t, err := callTracerOpener(tr.open)
	if err != nil {
		h.tracerOff(err)
		return
	}
	tr.mu.Lock()
	tr.t = t
	if tr.windows == nil {
		tr.windows = make([]window, windowRing)
	}
	tr.mu.Unlock()
	tr.state = tracerOpen
	tr.err = nil
	tr.offset, tr.offsetAt = tracerCall(t.ClockOffset), h.now()
	// Drops already counted by the tracer are not this hub's.
	tr.dropped = [backend.MaxTracerDevices]uint64{}
	if st, err := tracerStats(t); err == nil {
		tr.dropped = st.DroppedByDevice
	}
	tr.active.Store(true)
	// Arm at once if this step is armed, rather than one period later.
	tr.apply(h)
}

// tracerOff gives the tracer up for event pairs, closing it if it is open,
// and says why once. Caller holds h.mu.
func (h *Hub) tracerOff(err error) {
	tr := h.tr
	h.closeTracer(err)
	tr.state = tracerOff
	tr.err = err
	tr.fallbacks++
	how := "unavailable"
	if tr.mode == KernelTimingCUPTI {
		how = "requested (cupti) but unavailable"
	}
	h.logf("gpuspans: kernel spans from event pairs: the kernel tracer is %s: %v", how, err)
}

// closeTracer turns collection off, lands what the tracer still has and
// closes it; no-op without one. Caller holds h.mu.
func (h *Hub) closeTracer(why error) {
	tr := h.tr
	tr.active.Store(false)
	tr.apply(h)
	tr.mu.Lock()
	t := tr.t
	tr.t = nil
	tr.mu.Unlock()
	if t == nil {
		if tr.state == tracerOpen || tr.state == tracerPending {
			tr.state = tracerOff
		}
		return
	}
	err := callTracer(t.Close)
	h.readTracer(t)
	tr.failed.Store(nil) // what failed while closing is moot: the tracer is gone
	tr.state = tracerOff
	if err != nil && why == nil {
		h.logf("gpuspans: closing the kernel tracer: %v", err)
	}
}

// apply makes collection match the state word: on while this step is armed
// and the tracer active; on an armed step it also opens the step's window,
// by which landings tell the step of a kernel. BeginStep calls it on armed
// steps and when collection is on, so a run of armed steps costs one switch
// on and one off (1-2 us each with CUPTI). A failed switch on turns the
// tracer off for the next harvest to log.
func (tr *tracing) apply(h *Hub) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	want := atomic.LoadUint32(&h.state)&armedBit != 0 && tr.active.Load() && tr.t != nil
	if want && tr.on.Load() {
		tr.openWindow(h)
		return
	}
	if want == tr.on.Load() {
		return
	}
	if tr.t == nil {
		tr.on.Store(false)
		return
	}
	if err := callTracerEnable(tr.t, want); err != nil && want {
		tr.active.Store(false)
		tr.failed.CompareAndSwap(nil, &errBox{err})
		return
	}
	tr.on.Store(want)
	if want {
		tr.openWindow(h)
	}
}

// openWindow records the window of the step now beginning, once. Caller
// holds tr.mu.
func (tr *tracing) openWindow(h *Hub) {
	step := h.step.Load()
	if tr.wn > 0 && tr.windows[(tr.wn-1)%windowRing].step == step {
		return
	}
	tr.windows[tr.wn%windowRing] = window{step: step, startNs: h.now().UnixNano()}
	tr.wn++
}

// harvestTracer lands the tracer's records and counts its drops. Caller
// holds h.mu.
func (h *Hub) harvestTracer() {
	tr := h.tr
	if e := tr.failed.Swap(nil); e != nil {
		h.tracerOff(e.err)
		return
	}
	if tr.t == nil {
		return
	}
	h.readTracer(tr.t)
}

// readTracer lands every record t has and counts its new drops. Caller
// holds h.mu.
func (h *Hub) readTracer(t backend.KernelTracer) {
	tr := h.tr
	if tr.buf == nil {
		tr.buf = make([]backend.KernelRecord, tracerBatch)
	}
	if now := h.now(); now.Sub(tr.offsetAt) > time.Second {
		tr.offset, tr.offsetAt = tracerCall(t.ClockOffset), now
	}
	// Only the windows opened since the last harvest are copied under the
	// lock apply takes on armed steps; win keeps the newest windowRing.
	tr.mu.Lock()
	from := max(tr.copied, tr.wn-min(tr.wn, windowRing))
	for i := from; i < tr.wn; i++ {
		tr.win = append(tr.win, tr.windows[i%windowRing])
	}
	tr.copied = tr.wn
	tr.mu.Unlock()
	if len(tr.win) > 2*windowRing {
		tr.win = tr.win[:copy(tr.win, tr.win[len(tr.win)-windowRing:])]
	}
	for {
		n, err := tracerRead(t, tr.buf)
		if err != nil {
			tr.failed.CompareAndSwap(nil, &errBox{err})
			return
		}
		h.landTraced(t, tr.buf[:n])
		if n < len(tr.buf) {
			break
		}
	}
	st, err := tracerStats(t)
	if err != nil {
		return
	}
	for dev := range st.DroppedByDevice {
		d := st.DroppedByDevice[dev] - tr.dropped[dev]
		if d == 0 {
			continue
		}
		tr.dropped[dev] = st.DroppedByDevice[dev]
		if dev < MaxDevices && h.devs[dev] != nil {
			h.devc[dev].dropped[DropTracerLost].Add(d)
			h.devc[dev].begunFinished += d
		}
	}
}

// landTraced lands a batch of records of installed devices. A kernel's
// step is the latest armed window opened before it ended on the GPU: it was
// launched in that window, since collection is off between windows, and the
// engine's per-step sync keeps it from running past the next one.
func (h *Hub) landTraced(t backend.KernelTracer, recs []backend.KernelRecord) {
	tr := h.tr
	// Labels: names seen first in this batch compete for the labels left,
	// heaviest GPU time first.
	tr.pendingName = tr.pendingName[:0]
	for i := range recs {
		id := recs[i].Name
		if id == 0 || int(id) >= 1<<16 || tr.windowOf(&recs[i]) == nil {
			continue
		}
		if int(id) >= len(tr.nameIdx) {
			tr.nameIdx = append(tr.nameIdx, make([]int32, int(id)+1-len(tr.nameIdx))...)
		}
		if tr.nameIdx[id] != 0 {
			continue
		}
		k := -1
		for j := range tr.pendingName {
			if tr.pendingName[j].id == id {
				k = j
				break
			}
		}
		if k < 0 {
			tr.pendingName = append(tr.pendingName, pendingName{id: id, name: tracerName(t, id)})
			k = len(tr.pendingName) - 1
		}
		tr.pendingName[k].ns += max(recs[i].EndNs-recs[i].StartNs, 0)
	}
	if len(tr.pendingName) > 0 {
		sort.Slice(tr.pendingName, func(a, b int) bool { return tr.pendingName[a].ns > tr.pendingName[b].ns })
		for _, p := range tr.pendingName {
			tr.nameIdx[p.id] = int32(h.tracedLabel(p.name)) + 1
		}
	}
	for i := range recs {
		r := &recs[i]
		dev := int(r.Device)
		if dev >= MaxDevices || h.devs[dev] == nil {
			continue
		}
		idx := 0
		if id := r.Name; id != 0 && int(id) < len(tr.nameIdx) {
			idx = int(tr.nameIdx[id]) - 1
		}
		h.devc[dev].begunFinished++
		win := tr.windowOf(r)
		if win == nil {
			h.devc[dev].dropped[DropTracerLost].Add(1)
			continue
		}
		h.landSpan(dev, &h.devs[dev].kernels[idx], seriesKey(dev, true, idx), KindKernel, backend.Stream(r.Stream), win.step, r.StartNs+tr.offset, max(r.EndNs-r.StartNs, 0), r.Graph)
	}
}

// windowOf returns the armed window r ran in, or nil when its times cannot
// be right: a start before that window is stale (CUPTI gives a kernel
// replayed from a graph the start of an earlier replay when the host runs
// more than a step ahead of the GPU; see gs_tracer_enable), and such a
// record is counted as lost rather than landed wrong. Caller holds h.mu.
func (tr *tracing) windowOf(r *backend.KernelRecord) *window {
	start, end := r.StartNs+tr.offset, r.EndNs+tr.offset
	// The latest window opened before the kernel ended; windows are in
	// opening order, so in start order.
	i := sort.Search(len(tr.win), func(i int) bool { return tr.win[i].startNs > end }) - 1
	if i < 0 || start < tr.win[i].startNs-staleSlack {
		return nil
	}
	return &tr.win[i]
}

// staleSlack is how far before its window a traced kernel may seem to
// start (the tracer's clock mapped to Unix time is good to about a
// microsecond) before its start time counts as stale.
const staleSlack = 50 * int64(time.Microsecond)

// tracedLabel returns the kernel aggregate index a traced kernel name lands
// under: a registered name's, a new label while Options.KernelLabels allows,
// else OtherKernel's. Caller holds h.mu.
func (h *Hub) tracedLabel(name string) int {
	if name == "" || name == OtherKernel || checkName(name) != nil {
		return 0
	}
	for i, n := range h.kernelNames {
		if n == name {
			return i
		}
	}
	if h.tr.labelled >= h.tr.labels {
		return 0
	}
	idx, err := h.addKernelName(name)
	if err != nil {
		return 0
	}
	h.tr.labelled++
	return idx
}

// kernelTimingStatus fills the snapshot's view. Caller holds h.mu.
func (h *Hub) kernelTimingStatus() KernelTimingStatus {
	tr := h.tr
	s := KernelTimingStatus{Mode: tr.mode, Tracing: tr.state == tracerOpen && tr.active.Load(), Err: tr.err,
		Fallbacks: tr.fallbacks, Labels: tr.labelled}
	if tr.t != nil {
		if st, err := tracerStats(tr.t); err == nil {
			s.Records = st.Records
		}
	}
	return s
}

// The tracer calls, each under recover: the tracer may be the caller's
// code, and its panic must turn kernel spans back to events, not take the
// binary down.

var errTracerPanicked = errors.New("the kernel tracer panicked")

func recoverTracer(op string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("tracer %s panicked: %v: %w", op, p, errTracerPanicked)
	}
}

func callTracerOpener(open backend.TracerOpener) (t backend.KernelTracer, err error) {
	defer recoverTracer("opener", &err)
	t, err = open()
	if err == nil && t == nil {
		err = errors.New("the tracer opener returned no tracer and no error")
	}
	return t, err
}

func callTracerEnable(t backend.KernelTracer, on bool) (err error) {
	defer recoverTracer("Enable", &err)
	return t.Enable(on)
}

func callTracer(f func() error) (err error) {
	defer recoverTracer("Close", &err)
	return f()
}

func tracerRead(t backend.KernelTracer, buf []backend.KernelRecord) (n int, err error) {
	defer recoverTracer("Read", &err)
	n = t.Read(buf)
	if n < 0 || n > len(buf) {
		return 0, fmt.Errorf("tracer Read returned %d for %d records", n, len(buf))
	}
	return n, nil
}

func tracerStats(t backend.KernelTracer) (s backend.TracerStats, err error) {
	defer recoverTracer("Stats", &err)
	return t.Stats(), nil
}

func tracerName(t backend.KernelTracer, id uint32) (name string) {
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	return t.Name(id)
}

func tracerCall(f func() int64) (v int64) {
	defer func() {
		if recover() != nil {
			v = 0
		}
	}()
	return f()
}

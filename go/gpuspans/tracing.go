package gpuspans

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
	"github.com/gpuspans/gpuspans/go/internal/textsafe"
)

// KernelTiming chooses where kernel spans come from (docs/design.md, kernel
// spans).
type KernelTiming uint8

const (
	// KernelTimingEvents: an event pair around each launch the engine
	// brackets with KernelBegin and KernelEnd, on armed steps.
	KernelTimingEvents KernelTiming = iota
	// KernelTimingAuto: every kernel the process runs on an installed
	// device during kernel windows (KernelWindowSteps steps every
	// KernelWindowEvery), graph replays included, from the kernel tracer
	// (Options.KernelTracer, CUPTI), which is attached only while a window
	// collects. While the tracer cannot be used, event pairs as with
	// KernelTimingEvents, the reason logged once and kept in
	// Snapshot.KernelTiming. Windows need one stepping thread that is also
	// the launching thread (docs/design.md, kernel windows).
	KernelTimingAuto
	// KernelTimingCUPTI is KernelTimingAuto for a caller that counts on
	// the tracer: the same fallback, logged as a failure to honour the
	// choice.
	KernelTimingCUPTI
	// KernelTimingAttached: every kernel of the steps KernelSpanEvery
	// arms, from a tracer that stays attached, for engines that launch
	// from more than one thread. It costs every launch of the process
	// while attached, armed or not (on an H200 about 1 us an eager launch,
	// 0.3-0.6 us per node of a replayed graph), and CUPTI stays attached
	// for the rest of the process, also after switching back: no window
	// opens after it.
	KernelTimingAttached
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
	case KernelTimingAttached:
		return "attached"
	}
	return fmt.Sprintf("KernelTiming(%d)", uint8(k))
}

// ParseKernelTiming reads "events", "auto", "cupti" or "attached", in any
// case, with surrounding white space ignored.
func ParseKernelTiming(s string) (KernelTiming, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for k := KernelTimingEvents; k <= KernelTimingAttached; k++ {
		if t == k.String() {
			return k, nil
		}
	}
	return 0, fmt.Errorf("gpuspans: kernel timing %q: want events, auto, cupti or attached", s)
}

// MarshalText implements encoding.TextMarshaler (flags, JSON).
func (k KernelTiming) MarshalText() ([]byte, error) {
	if k > KernelTimingAttached {
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
	Records   uint64 // kernel records the hub read from the tracer
	Labels    int    // traced kernel names with a label of their own
	// ReadsCut counts harvests that stopped reading the tracer at their
	// bound (maxTracerReads batches) with records left for the next.
	ReadsCut uint64
	Windows  KernelWindowStats
}

// SetKernelTiming switches the source of kernel spans. The next BeginStep
// makes the switch on its own thread: events (or a level below Kernel)
// closes the tracer there, detaching CUPTI, so that a profiler
// (torch.profiler, Nsight) may take it; auto or cupti open windows from
// then on, and say that a profiler is done: the next window opens even
// though its CUPTI subscriber is still registered (torch.profiler keeps
// one after it stops, and windows skip while one is), and its detach
// clears it; attached attaches for good. Needs Options.KernelTracer for
// all but events. Any goroutine; no CUPTI call.
func (h *Hub) SetKernelTiming(k KernelTiming) error {
	if k > KernelTimingAttached {
		return fmt.Errorf("gpuspans: SetKernelTiming: invalid kernel timing %v", k)
	}
	if k != KernelTimingEvents && h.kw.opener == nil {
		return fmt.Errorf("gpuspans: SetKernelTiming(%v): the hub has no Options.KernelTracer", k)
	}
	h.kw.setMode(k)
	h.syncCStep()
	return nil
}

// KernelTiming returns the source of kernel spans as last asked.
func (h *Hub) KernelTiming() KernelTiming { return h.kw.timing() }

// SetKernelWindows sets the period of kernel windows and the steps each
// collects (0: the defaults), from the next window on; errors name what is
// out of bounds and change nothing. Any goroutine.
func (h *Hub) SetKernelWindows(every time.Duration, steps int) error {
	every, steps, err := windowSettings(every, steps, "SetKernelWindows: every", "SetKernelWindows: steps")
	if err != nil {
		return err
	}
	h.kw.every.Store(int64(every))
	h.kw.nsteps.Store(int64(steps))
	return nil
}

// RequestKernelWindow asks for a kernel window at the next BeginStep at
// level Kernel, whatever the period, for an engineer who wants the kernels
// of this moment; a window open then answers it. An error says why none
// can open: kernel timing is not auto or cupti, or the tracer fell back
// for good. Any goroutine; no CUPTI call.
func (h *Hub) RequestKernelWindow() error {
	switch m := h.kw.timing(); {
	case h.kw.opener == nil:
		return errors.New("gpuspans: RequestKernelWindow: the hub has no Options.KernelTracer")
	case m != KernelTimingAuto && m != KernelTimingCUPTI:
		return fmt.Errorf("gpuspans: RequestKernelWindow: kernel timing is %v; windows need auto or cupti", m)
	}
	h.kw.mu.Lock()
	err := h.kw.err
	h.kw.mu.Unlock()
	if err != nil && !errors.Is(err, backend.ErrTracerBusy) {
		return fmt.Errorf("gpuspans: RequestKernelWindow: the kernel tracer fell back to event pairs: %w", err)
	}
	if !h.kw.openNow.Load() { // else the window open now answers it
		h.kw.requested.Store(true)
	}
	return nil
}

// CloseKernelTracer closes the kernel tracer now, on the calling thread,
// for a hub shutting down: call it on the stepping thread after its last
// step, where a window detaches CUPTI. From another thread, while the
// stepping thread lives, an open window is abandoned instead: collection
// off, CUPTI attached for the rest of the process (a detach there could
// race that thread's launches). Kernel timing is events afterwards. Waits
// up to a second for a BeginStep in progress.
func (h *Hub) CloseKernelTracer() error {
	if h.kw.opener == nil {
		return nil
	}
	err := h.kw.release(time.Second, &h.mu)
	h.syncTracerBit()
	h.syncCStep()
	return err
}

// KernelFullName returns the whole demangled name behind the label of a
// kernel traced by CUPTI (labels are cut at 127 bytes and lose their return
// type and parameters), for exporters with room for it; "" for other names.
// Takes the harvest lock briefly.
func (h *Hub) KernelFullName(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tl.full[name]
}

// KernelTimingStatus is Snapshot.KernelTiming without the rest of a
// snapshot. Takes the harvest lock briefly.
func (h *Hub) KernelTimingStatus() KernelTimingStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.kernelTimingStatus()
}

// kernelTimingStatus fills the snapshot's view. Caller holds h.mu.
func (h *Hub) kernelTimingStatus() KernelTimingStatus {
	var s KernelTimingStatus
	h.kw.mu.Lock()
	h.kw.statusLocked(&s)
	h.kw.mu.Unlock()
	s.Labels = h.tl.labelled
	s.Records = h.tl.records
	s.ReadsCut = h.tl.readsCut
	return s
}

// tracerLanding is the harvest's side of the kernel tracer: reading its
// records and landing them on their steps. Guarded by the harvest lock.
type tracerLanding struct {
	labels     int // Options.KernelLabels
	buf        []backend.KernelRecord
	nameIdx    []int32 // tracer name id -> kernel aggregate index + 1; 0: not yet seen
	labelled   int
	opens      uint64                           // kernelWindows.opens seen
	broken     uint64                           // the open whose tracer failed a call: not read again
	dropped    [backend.MaxTracerDevices]uint64 // the tracer's drops already counted
	offset     int64                            // Unix ns minus the tracer's clock
	offsetAt   time.Time
	win        []tracedStep // the harvest's copy of the newest armed steps, oldest first
	copied     uint64       // armed steps recorded that win has
	reported   uint64       // Seq of the newest window whose kernels were counted
	winKernels [recentWindows]struct{ seq, n uint64 }
	// windowKernels counts the kernel records landed from windows, counted
	// reports how many of them KernelWindowStats.Kernels has: a harvest
	// that finds more than recentWindows windows closed since the last one
	// names only the newest, but counts every kernel.
	windowKernels, counted uint64
	readsCut               uint64
	records                uint64
	pendingName            []pendingName
	full                   map[string]string // label -> the whole name, where the tracer keeps one (fullNamer)
}

// fullNamer is implemented by tracers that keep the whole name behind a
// label (cuda.Tracer: CUPTI's demangled name, up to 4 KiB).
type fullNamer interface {
	FullName(id uint32) string
}

type pendingName struct {
	id   uint32
	name string
	ns   int64
}

// tracerBatch is how many records a harvest reads per call into the core,
// and maxTracerReads how many calls one harvest makes at most (the core's
// ring holds 16 batches): a tracer that never runs dry cannot hold the
// harvest lock for good.
const (
	tracerBatch    = 4096
	maxTracerReads = 16
)

// harvestTracer lands the tracer's records, counts its drops and finishes
// the windows whose records have all landed. A tracer call that fails or
// panics makes the next BeginStep give the tracer up. Caller holds h.mu.
func (h *Hub) harvestTracer() {
	w, l := h.kw, &h.tl
	w.mu.Lock()
	t, opens, base, closed := w.pub, w.opens, w.dropBase, w.closedSeq
	// Closed already: its close delivered every record before it said so.
	wasClosed := !w.openNow.Load()
	w.mu.Unlock()
	if t == nil || opens == l.broken {
		return
	}
	if opens != l.opens {
		l.opens, l.dropped, l.offsetAt = opens, base, time.Time{}
	}
	if l.buf == nil {
		l.buf = make([]backend.KernelRecord, tracerBatch)
	}
	if now := h.now(); l.offsetAt.IsZero() || now.Sub(l.offsetAt) > time.Second {
		l.offset, l.offsetAt = tracerCall(t.ClockOffset), now
	}
	drained := false
	for i := 0; i < maxTracerReads; i++ {
		n, err := tracerRead(t, l.buf)
		if err != nil {
			h.tracerFailed(opens, err)
			return
		}
		h.landTraced(t, l.buf[:n])
		l.records += uint64(n)
		if n < len(l.buf) {
			drained = true
			break
		}
	}
	if !drained {
		l.readsCut++
	}
	st, err := tracerStats(t)
	if err != nil {
		h.tracerFailed(opens, err)
		return
	}
	h.guardSeen(st.Guard)
	for dev := range st.DroppedByDevice {
		d := st.DroppedByDevice[dev] - l.dropped[dev]
		if d == 0 || st.DroppedByDevice[dev] < l.dropped[dev] {
			continue
		}
		l.dropped[dev] = st.DroppedByDevice[dev]
		if dev < MaxDevices && h.devs[dev] != nil {
			h.devc[dev].dropped[DropTracerLost].Add(d)
			h.devc[dev].begunFinished += d
		}
	}
	if drained && closed > l.reported {
		h.finishWindows(closed)
	}
	if drained {
		// Closed and read to the end: the records now in the process's
		// ring are another hub's (CUPTI is one per process), until this
		// hub opens the tracer again.
		w.mu.Lock()
		if wasClosed && w.opens == opens {
			w.pub = nil
		}
		w.mu.Unlock()
	}
}

// copySteps copies the armed steps recorded since the last harvest; win
// keeps the newest tracedSteps. Caller holds h.mu.
func (l *tracerLanding) copySteps(w *kernelWindows) {
	w.mu.Lock()
	from := max(l.copied, w.sn-min(w.sn, tracedSteps))
	for i := from; i < w.sn; i++ {
		l.win = append(l.win, w.steps[i%tracedSteps])
	}
	l.copied = w.sn
	w.mu.Unlock()
	if len(l.win) > 2*tracedSteps {
		l.win = l.win[:copy(l.win, l.win[len(l.win)-tracedSteps:])]
	}
}

// tracerFailed stops reading the tracer of open and has the next BeginStep
// give it up. Caller holds h.mu.
func (h *Hub) tracerFailed(open uint64, err error) {
	h.tl.broken = open
	h.kw.failed.CompareAndSwap(nil, &errBox{err})
}

// finishWindows counts the kernels of the windows closed up to closed,
// whose records have all landed by now. Caller holds h.mu.
func (h *Hub) finishWindows(closed uint64) {
	w, l := h.kw, &h.tl
	from := max(l.reported+1, closed-min(closed, recentWindows-1))
	w.mu.Lock()
	defer w.mu.Unlock()
	for seq := from; seq <= closed; seq++ {
		rec := w.recent[seq%recentWindows]
		if rec.Seq != seq {
			continue
		}
		if k := &l.winKernels[seq%recentWindows]; k.seq == seq {
			rec.Kernels = k.n
		}
		w.stats.KernelsPerWindow[min(bits.Len64(max(rec.Kernels, 1)-1), KernelsPerWindowBuckets-1)]++
		w.stats.Last = rec
	}
	w.stats.Kernels += l.windowKernels - l.counted
	l.counted = l.windowKernels
	l.reported = closed
	h.gt.windowsFinished(closed)
}

// landTraced lands a batch of records of installed devices. A kernel's
// step is the latest armed step begun before it ended on the GPU: it was
// launched in that step, since collection is off (or CUPTI detached)
// between armed steps, and the engine's per-step sync keeps it from running
// past the next one. Caller holds h.mu.
func (h *Hub) landTraced(t backend.KernelTracer, recs []backend.KernelRecord) {
	l := &h.tl
	// Labels: names seen first in this batch compete for the labels left,
	// heaviest GPU time first.
	l.pendingName = l.pendingName[:0]
	for i := range recs {
		id := recs[i].Name
		if id == 0 || int(id) > backend.MaxTracerNames || !isKernel(recs[i].Kind) || l.stepOf(&recs[i]) == nil {
			continue
		}
		if int(id) >= len(l.nameIdx) {
			l.nameIdx = append(l.nameIdx, make([]int32, int(id)+1-len(l.nameIdx))...)
		}
		if l.nameIdx[id] != 0 {
			continue
		}
		k := -1
		for j := range l.pendingName {
			if l.pendingName[j].id == id {
				k = j
				break
			}
		}
		if k < 0 {
			l.pendingName = append(l.pendingName, pendingName{id: id, name: tracerName(t, id)})
			k = len(l.pendingName) - 1
		}
		l.pendingName[k].ns += max(recs[i].EndNs-recs[i].StartNs, 0)
	}
	if len(l.pendingName) > 0 {
		sort.Slice(l.pendingName, func(a, b int) bool { return l.pendingName[a].ns > l.pendingName[b].ns })
		fn, _ := t.(fullNamer)
		for _, p := range l.pendingName {
			idx := h.tracedLabel(p.name)
			l.nameIdx[p.id] = int32(idx) + 1
			if fn == nil || idx == 0 {
				continue
			}
			if full := tracerFullName(fn, p.id); full != "" && full != p.name {
				if l.full == nil {
					l.full = make(map[string]string)
				}
				l.full[h.kernelNames[idx]] = full
			}
		}
	}
	for i := range recs {
		r := &recs[i]
		dev := int(r.Device)
		if !isKernel(r.Kind) {
			h.holdRecord(r)
			continue
		}
		if dev >= MaxDevices || h.devs[dev] == nil {
			continue
		}
		idx := 0
		if id := r.Name; id != 0 && int(id) < len(l.nameIdx) {
			idx = int(l.nameIdx[id]) - 1
		}
		h.devc[dev].begunFinished++
		st := l.stepOf(r)
		if st == nil {
			h.devc[dev].dropped[DropTracerLost].Add(1)
			continue
		}
		if st.win != 0 {
			k := &l.winKernels[st.win%recentWindows]
			if k.seq != st.win {
				k.seq, k.n = st.win, 0
			}
			k.n++
			l.windowKernels++
			if h.holdKernel(st.win, dev, idx, st.step, r) {
				h.observeSpan(dev, &h.devs[dev].kernels[idx], seriesKey(dev, true, idx), max(r.EndNs-r.StartNs, 0))
				continue
			}
		}
		h.landSpan(dev, &h.devs[dev].kernels[idx], seriesKey(dev, true, idx), KindKernel, backend.Stream(r.Stream), st.step, r.StartNs+l.offset, max(r.EndNs-r.StartNs, 0), r.Graph)
	}
}

// holdRecord keeps a copy, memset or launch call of a window step for
// the window's idle by cause; such records are no spans, and outside
// windows nothing keeps them. A launch call is kept whatever its Device
// (the tracer's is 0): its kernels' correlation places it. Caller holds
// h.mu.
func (h *Hub) holdRecord(r *backend.KernelRecord) {
	if r.Kind != backend.RecordLaunch && (int(r.Device) >= MaxDevices || h.devs[r.Device] == nil) {
		return
	}
	if st := h.tl.stepOf(r); st != nil && st.win != 0 {
		h.holdKernel(st.win, int(r.Device), 0, st.step, r)
	}
}

// stepOf returns the armed step r ran in, or nil when its times cannot be
// right: a start before that step is stale (CUPTI gives a kernel replayed
// from a graph the start of an earlier replay when the host runs more than
// a step ahead of the GPU; see gs_tracer_enable), and such a record is
// counted as lost rather than landed wrong.
func (l *tracerLanding) stepOf(r *backend.KernelRecord) *tracedStep {
	start, end := r.StartNs+l.offset, r.EndNs+l.offset
	// The latest step begun before the kernel ended; steps are in order.
	i := sort.Search(len(l.win), func(i int) bool { return l.win[i].startNs > end }) - 1
	if i < 0 || start < l.win[i].startNs-staleSlack {
		return nil
	}
	return &l.win[i]
}

// staleSlack is how far before its step a traced kernel may seem to start
// (the tracer's clock mapped to Unix time is good to about a microsecond)
// before its start time counts as stale.
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
	if h.tl.labelled >= h.tl.labels {
		return 0
	}
	idx, err := h.addKernelName(name)
	if err != nil {
		return 0
	}
	h.tl.labelled++
	return idx
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

func callTracerOpener(open backend.TracerOpener, mode backend.TracerMode) (t backend.KernelTracer, err error) {
	defer recoverTracer("opener", &err)
	t, err = open(mode)
	if err == nil && t == nil {
		err = errors.New("the tracer opener returned no tracer and no error")
	}
	return t, err
}

func callTracerEnable(t backend.KernelTracer, on bool) (err error) {
	defer recoverTracer("Enable", &err)
	return t.Enable(on)
}

func callTracerClose(t backend.KernelTracer) (err error) {
	defer recoverTracer("Close", &err)
	return t.Close()
}

func callTracerAbandon(t backend.KernelTracer) (err error) {
	defer recoverTracer("Abandon", &err)
	return t.Abandon()
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

// tracerName and tracerFullName are a traced kernel's names, safe for a
// terminal (textsafe): they reach logs, the page and the metrics.
func tracerName(t backend.KernelTracer, id uint32) (name string) {
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	return textsafe.Clean(t.Name(id))
}

func tracerFullName(t fullNamer, id uint32) (name string) {
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	return textsafe.Clean(t.FullName(id))
}

func tracerCall(f func() int64) (v int64) {
	defer func() {
		if recover() != nil {
			v = 0
		}
	}()
	return f()
}

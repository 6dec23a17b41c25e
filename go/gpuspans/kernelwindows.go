package gpuspans

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpuspans/gpuspans/go/backend"
)

// Kernel windows: CUPTI attached only while it collects (docs/design.md,
// kernel windows). Attached, every launch of the process pays for CUPTI,
// collection on or off (an H200 graph replay about 0.3-0.6 us per node), so
// the tracer is opened for a window of KernelWindowSteps steps every
// KernelWindowEvery and closed, detaching CUPTI, after them. The rules that
// keep a CUDA graph alive through a detach, measured on the H200, are kept
// here and nowhere else:
//
//  1. Every open, close, enable and disable happens in BeginStep, on the
//     stepping thread, at a step boundary. Everything else (SetKernelTiming,
//     SetLevel, RequestKernelWindow, a failing harvest) asks, and the next
//     BeginStep acts. The harvest only reads records, which makes no CUPTI
//     call (backend.KernelTracer).
//  2. A window closes only on the thread that opened it: the tracer refuses
//     otherwise (backend.ErrWrongThread), or while another thread's
//     guarded launch does not end (backend.ErrTracerBusy), and after
//     maxCloseRefusals refusals in a row (or refusals for maxGuardHeld
//     while the launch guard stays held) the window is abandoned:
//     collection off, CUPTI attached for the rest of the process, windows
//     off.
//  3. Collection stays on from a window's open to its close: the window
//     never toggles it.
//  4. A window in which another thread replayed a CUDA graph is not
//     detached (the tracer watches launches and refuses:
//     backend.ErrLeftAttached): CUPTI stays attached, windows are off.

// maxCloseRefusals is how many BeginSteps in a row may find the window's
// thread gone elsewhere before the window is abandoned.
const maxCloseRefusals = 64

// maxGuardHeld is how long a window's closes may be refused for another
// thread's held launch guard before the window is abandoned: the tracer
// refuses at once while it backs off, so a count of steps would abandon
// within milliseconds a window that a replay in flight held up.
const maxGuardHeld = 2 * time.Second

// KernelWindow is one kernel window, as Snapshot reports the last one: the
// steps during which the kernel tracer collected, unrelated to a Window,
// a span of host time of the recent quantiles.
type KernelWindow struct {
	Seq       uint64        // 1 for the hub's first window
	FirstStep uint64        // the step it opened at
	Steps     uint64        // steps it collected
	Kernels   uint64        // kernel records landed from it
	OpenTime  time.Duration // on the stepping thread: CUPTI's attach
	CloseTime time.Duration // on the stepping thread: the flush and detach
	Opened    time.Time     // by Options.Now
}

// KernelWindowStats describe a hub's kernel windows.
type KernelWindowStats struct {
	Every time.Duration // the period of windows
	Steps int           // steps a window collects
	Open  bool          // a window is open now
	// Opened counts windows opened; Skipped windows due but not opened
	// because another CUPTI client held it (a profiler: kernel spans came
	// from event pairs meanwhile); Abandoned windows left attached because
	// their thread never stepped again; LeftAttached windows left attached
	// because another thread replayed CUDA graphs during them (a detach
	// then could lose the process's CUDA context). Windows are off after
	// one of either.
	Opened, Skipped, Abandoned, LeftAttached uint64
	// SkippedGuard counts the Skipped windows refused because another
	// thread held the launch guard past the window's wait (Guard names it;
	// windows then back off: hub.h, gs_launch_guard_enter).
	SkippedGuard uint64
	// Guard is the process's launch guard as the latest harvest read it
	// from the tracer.
	Guard backend.LaunchGuard
	// OpenTime and CloseTime are histograms of what opening and closing a
	// window cost the stepping thread (Name "open", "close").
	OpenTime, CloseTime Aggregate
	// Kernels counts kernel records landed from windows, the open one's
	// too, as of the latest harvest; KernelsPerWindow is a histogram of
	// the finished windows by their kernels: bucket i counts windows of at
	// most 2^i kernels (the last, any more).
	Kernels          uint64
	KernelsPerWindow [KernelsPerWindowBuckets]uint64
	// Last is the newest window whose records have all landed.
	Last KernelWindow
}

// KernelsPerWindowBuckets is the length of KernelWindowStats.KernelsPerWindow:
// up to 2^16 kernels, then the rest.
const KernelsPerWindowBuckets = 18

// tracedStep is one armed step's collection window, opened at its BeginStep:
// a traced kernel belongs to the latest one opened before it ended.
type tracedStep struct {
	step    uint64
	startNs int64  // Unix ns, by Options.Now (the tracer's ClockOffset maps onto the same clock)
	win     uint64 // the kernel window's Seq; 0 for an attached tracer's
}

// tracedSteps is how many armed steps the hub remembers to attribute
// traced kernels to steps. Records reach the hub up to the tracer's flush
// period (cuda.TracerFlushPeriodMs) after their step, and, in a window of
// many steps, at its close:
// 4,096 steps cover that at any step rate an engine reaches. 96 KiB, made
// when a tracer first opens.
const tracedSteps = 4096

// recentWindows is how many windows are kept for their kernel counts
// until their records have landed.
const recentWindows = 16

// kernelWindows owns the kernel tracer's life: the windows (or the attached
// tracer), the requests for them, what was measured of them, and the armed
// steps their records land in. Fields under "stepping" belong to the one
// BeginStep running (busy); mu guards what others read.
type kernelWindows struct {
	opener backend.TracerOpener
	logf   func(format string, args ...interface{})
	now    func() time.Time

	mode   atomic.Uint32 // KernelTiming, as last asked
	every  atomic.Int64  // window period, ns
	nsteps atomic.Int64  // steps per window
	// active: the tracer is the source of kernel spans now, so KernelBegin
	// opens no event pair. Read on span paths.
	active    atomic.Bool
	requested atomic.Bool            // RequestKernelWindow: open one at the next step
	takeOver  atomic.Bool            // SetKernelTiming(auto or cupti): another CUPTI subscriber is done
	retry     atomic.Bool            // SetKernelTiming: a fallback ends, the tracer is tried again
	failed    atomic.Pointer[errBox] // a harvest-side failure: give the tracer up at the next step

	openNow atomic.Bool // t != nil: BeginStep has work at any level (tracerBit)
	// stepping: the BeginStep running holds busy.
	busy      atomic.Bool
	t         backend.KernelTracer // open now, or nil
	tmode     backend.TracerMode
	on        bool      // attached: collection on
	inWin     uint64    // steps the open window collected
	lastOpen  time.Time // when the newest window opened (or was due and skipped)
	refusals  int       // closes refused in a row
	heldSince time.Time // the first of them refused for the launch guard; zero: none
	offFor    int32     // mode+1 that the fallback (off) applies to; 0: none
	cur       KernelWindow
	busyShown bool // the busy fallback has been logged since it last worked

	mu        sync.Mutex
	pub       backend.KernelTracer // what harvests read: the open tracer, else the last one
	opens     uint64               // opens so far: a harvest takes new drop baselines when it changes
	dropBase  [backend.MaxTracerDevices]uint64
	steps     []tracedStep // ring of tracedSteps, made at the first open
	sn        uint64       // armed steps recorded
	closedSeq uint64       // Seq of the newest window closed
	recent    [recentWindows]KernelWindow
	stats     KernelWindowStats
	err       error // why kernel spans are not from the tracer (status)
	fallbacks uint64
}

// newKernelWindows makes the windows' state for resolved options.
func newKernelWindows(o Options, logf func(string, ...interface{}), now func() time.Time) *kernelWindows {
	w := &kernelWindows{opener: o.KernelTracer, logf: logf, now: now}
	// As SetKernelTiming: asking for auto or cupti says a profiler that ran
	// earlier in the process is done, so the first window takes CUPTI over
	// from the subscriber it left.
	w.setMode(o.KernelTiming)
	w.every.Store(int64(o.KernelWindowEvery))
	w.nsteps.Store(int64(o.KernelWindowSteps))
	w.stats.OpenTime.Name, w.stats.CloseTime.Name = "open", "close"
	return w
}

func (w *kernelWindows) timing() KernelTiming { return KernelTiming(w.mode.Load()) }

// setTracer records the tracer open now (nil: none). Stepping thread.
func (w *kernelWindows) setTracer(t backend.KernelTracer) {
	w.t = t
	w.openNow.Store(t != nil)
}

// step is BeginStep's part: it opens, closes or switches the tracer as the
// settings and requests say, and reports whether this step is armed by the
// tracer (decided) or left to KernelSpanEvery (!decided). kernel: the level
// is Kernel. step: this step's number. locked: the caller holds the
// harvest lock, so that no harvest of ours (a pool opening launches
// calibration kernels) runs on another thread while CUPTI attaches or
// detaches; without it an open or close waits for a later step (a window
// then collects one step more). A BeginStep that races another leaves the
// tracer alone.
func (w *kernelWindows) step(kernel bool, step uint64, spanEvery int64, locked bool) (armed, decided bool) {
	if w.opener == nil || !w.busy.CompareAndSwap(false, true) {
		return false, false
	}
	defer w.busy.Store(false)
	mode := w.timing()
	if locked {
		if w.retry.Swap(false) {
			w.offFor = 0 // the mode was set again: try the tracer again
		}
		if e := w.failed.Swap(nil); e != nil {
			w.closeNow(true)
			w.fallBack(mode, e.err)
		}
	}
	release := !kernel || mode == KernelTimingEvents
	if w.t != nil {
		if w.tmode == backend.TracerWindow {
			done := release || mode == KernelTimingAttached || w.inWin >= uint64(w.nsteps.Load())
			if !done || !locked || !w.closeWindow() {
				if kernel { // not done, not now, or refused: the window goes on, collecting
					w.collect(step)
				}
				return kernel, true
			}
			if release {
				// Below Kernel nothing is armed anyway; events hands
				// kernel spans back to event pairs.
				w.active.Store(mode != KernelTimingEvents && w.active.Load())
				return false, false
			}
			return false, w.active.Load()
		}
		if !release && mode == KernelTimingAttached {
			return w.armAttached(step, spanEvery), true
		}
		if !locked {
			return false, true
		}
		w.closeNow(false)
	}
	if release || w.offFor == int32(mode)+1 {
		return false, false
	}
	if !locked {
		return false, w.active.Load()
	}
	if mode == KernelTimingAttached {
		if !w.openTracer(mode, backend.TracerAttached, step) {
			return false, false
		}
		return w.armAttached(step, spanEvery), true
	}
	now := w.now()
	due := w.requested.Load() || w.lastOpen.IsZero() || now.Sub(w.lastOpen) >= time.Duration(w.every.Load())
	if !due {
		return false, w.active.Load()
	}
	w.requested.Store(false)
	w.lastOpen = now
	if !w.openTracer(mode, backend.TracerWindow, step) {
		return false, false
	}
	w.collect(step)
	return true, true
}

// openTracer opens the tracer in tmode for mode and publishes it; a refusal
// falls back to event pairs, for good but for a busy CUPTI, which windows
// try again a period later. Stepping thread.
func (w *kernelWindows) openTracer(mode KernelTiming, tmode backend.TracerMode, step uint64) bool {
	open := tmode
	if tmode == backend.TracerWindow && w.takeOver.Swap(false) {
		open = backend.TracerWindowTakeOver
	}
	start := time.Now()
	t, err := callTracerOpener(w.opener, open)
	cost := time.Since(start)
	if err != nil {
		w.active.Store(false)
		if tmode == backend.TracerWindow && errors.Is(err, backend.ErrTracerBusy) {
			guard := errors.Is(err, backend.ErrGuardHeld)
			w.mu.Lock()
			w.stats.Skipped++
			if guard {
				w.stats.SkippedGuard++
			}
			w.err = err
			w.mu.Unlock()
			if !w.busyShown {
				w.busyShown = true
				hint := "torch.profiler keeps its subscriber after it stops: set kernel timing to auto again once it is done"
				if guard {
					hint = "every gs_launch_guard_enter needs its gs_launch_guard_exit on the same thread; windows back off while the guard stays held"
				}
				w.logf("gpuspans: kernel window skipped, kernel spans from event pairs until a later one opens: %v (%s)", err, hint)
			}
			return false
		}
		w.fallBack(mode, err)
		return false
	}
	w.busyShown = false
	w.setTracer(t)
	w.tmode, w.on, w.inWin, w.refusals, w.heldSince = tmode, false, 0, 0, time.Time{}
	var base [backend.MaxTracerDevices]uint64
	if st, err := tracerStats(t); err == nil {
		base = st.DroppedByDevice // drops already counted by the tracer are not this hub's
	}
	w.mu.Lock()
	w.pub = t
	w.opens++
	w.dropBase = base
	w.err = nil
	if w.steps == nil {
		w.steps = make([]tracedStep, tracedSteps)
	}
	if tmode == backend.TracerWindow {
		w.stats.Opened++
		w.stats.Open = true
		w.stats.OpenTime.observe(int64(cost))
		w.cur = KernelWindow{Seq: w.stats.Opened, FirstStep: step, OpenTime: cost, Opened: w.now()}
	}
	w.mu.Unlock()
	w.active.Store(true)
	return true
}

// collect makes this step one of the open window's, which also answers a
// request for a window. Stepping thread.
func (w *kernelWindows) collect(step uint64) {
	w.requested.Store(false)
	w.inWin++
	w.record(step, w.cur.Seq)
}

// record remembers an armed step, by which landings tell a traced kernel's
// step. Stepping thread.
func (w *kernelWindows) record(step, win uint64) {
	w.mu.Lock()
	if w.sn == 0 || w.steps[(w.sn-1)%tracedSteps].step != step {
		w.steps[w.sn%tracedSteps] = tracedStep{step: step, startNs: w.now().UnixNano(), win: win}
		w.sn++
	}
	w.mu.Unlock()
}

// armAttached arms one step in KernelSpanEvery, as event pairs would be,
// with collection following the arming. A failed switch on gives the
// tracer up. Stepping thread.
func (w *kernelWindows) armAttached(step uint64, spanEvery int64) bool {
	armed := step%uint64(spanEvery) == 0
	if armed != w.on {
		if err := callTracerEnable(w.t, armed); err != nil && armed {
			w.closeNow(true)
			w.fallBack(KernelTimingAttached, err)
			return false
		}
		w.on = armed
	}
	if armed {
		w.record(step, 0)
	}
	return armed
}

// closeWindow ends the open window on this thread; false when the tracer
// refused (another thread: it stays open), until maxCloseRefusals in a
// row abandon it. Stepping thread.
func (w *kernelWindows) closeWindow() bool {
	start := time.Now()
	err := callTracerClose(w.t)
	cost := time.Since(start)
	if errors.Is(err, backend.ErrGuardHeld) {
		now := w.now()
		if w.heldSince.IsZero() {
			w.heldSince = now
		}
		if held := now.Sub(w.heldSince); held >= maxGuardHeld {
			w.abandon(fmt.Errorf("the window's close was refused for %v: another thread held the launch guard (%v)", held, err))
			return true
		}
		return false
	}
	if errors.Is(err, backend.ErrWrongThread) || errors.Is(err, backend.ErrTracerBusy) {
		w.refusals++
		if w.refusals < maxCloseRefusals {
			return false
		}
		w.abandon(fmt.Errorf("the window's close was refused %d steps in a row (%v): kernel windows need one stepping thread (in Go, runtime.LockOSThread on the stepping goroutine), and launches of other threads through the launch guard that end", w.refusals, err))
		return true
	}
	w.finishWindow(cost, err)
	if err != nil {
		w.fallBack(w.timing(), err)
	}
	return true
}

// finishWindow publishes the close of the open window, which err ended.
// Stepping thread.
func (w *kernelWindows) finishWindow(cost time.Duration, err error) {
	w.setTracer(nil)
	w.cur.Steps = w.inWin
	w.cur.CloseTime = cost
	w.mu.Lock()
	if errors.Is(err, backend.ErrLeftAttached) {
		w.stats.LeftAttached++
	}
	w.stats.Open = false
	w.stats.CloseTime.observe(int64(cost))
	w.recent[w.cur.Seq%recentWindows] = w.cur
	w.closedSeq = w.cur.Seq
	w.mu.Unlock()
}

// abandon leaves the open window attached (its thread will not close it)
// and turns windows off. Stepping thread, or CloseKernelTracer.
func (w *kernelWindows) abandon(why error) {
	_ = callTracerAbandon(w.t)
	w.finishWindow(0, nil)
	w.mu.Lock()
	w.stats.Abandoned++
	w.mu.Unlock()
	w.fallBack(w.timing(), why)
}

// closeNow closes whatever tracer is open, now, on this thread: a window
// that refuses is abandoned. broken: the tracer failed, and its close
// errors are moot. Stepping thread, or CloseKernelTracer.
func (w *kernelWindows) closeNow(broken bool) {
	if w.t == nil {
		return
	}
	w.active.Store(false)
	if w.tmode == backend.TracerWindow {
		start := time.Now()
		err := callTracerClose(w.t)
		if errors.Is(err, backend.ErrWrongThread) || errors.Is(err, backend.ErrTracerBusy) {
			w.abandon(fmt.Errorf("closed from another thread than the window's, or beside a guarded launch that did not end: %w", err))
			return
		}
		w.finishWindow(time.Since(start), err)
		if err != nil && !broken {
			w.logf("gpuspans: closing the kernel window: %v", err)
		}
		return
	}
	err := callTracerClose(w.t)
	w.setTracer(nil)
	if err != nil && !broken {
		w.logf("gpuspans: closing the kernel tracer: %v", err)
	}
}

// fallBack gives the tracer up for event pairs until the mode is set
// again, and says why once. Stepping thread.
func (w *kernelWindows) fallBack(mode KernelTiming, err error) {
	w.active.Store(false)
	w.offFor = int32(mode) + 1
	w.mu.Lock()
	w.err = err
	w.fallbacks++
	w.mu.Unlock()
	how := "unavailable"
	if mode == KernelTimingCUPTI {
		how = "requested (cupti) but unavailable"
	}
	w.logf("gpuspans: kernel spans from event pairs: the kernel tracer is %s: %v", how, err)
}

// setMode asks for a mode from the next step on; auto or cupti also says
// that another CUPTI client whose subscriber made windows skip is done.
// Any goroutine.
func (w *kernelWindows) setMode(k KernelTiming) {
	w.takeOver.Store(k == KernelTimingAuto || k == KernelTimingCUPTI)
	w.retry.Store(true)
	if w.mode.Swap(uint32(k)) != uint32(k) {
		w.mu.Lock()
		w.err = nil
		w.mu.Unlock()
	}
}

// release closes the tracer from the calling thread, for a hub closing
// down: it waits up to wait for a BeginStep in progress. A window opened
// on another thread that still lives is abandoned.
func (w *kernelWindows) release(wait time.Duration, lock sync.Locker) error {
	deadline := time.Now().Add(wait)
	for !w.busy.CompareAndSwap(false, true) {
		if time.Now().After(deadline) {
			return errors.New("gpuspans: a BeginStep kept the kernel tracer busy")
		}
		time.Sleep(100 * time.Microsecond)
	}
	defer w.busy.Store(false)
	lock.Lock()
	defer lock.Unlock()
	w.mode.Store(uint32(KernelTimingEvents))
	w.closeNow(false)
	return nil
}

// status fills a snapshot's view. Caller holds w.mu.
func (w *kernelWindows) statusLocked(s *KernelTimingStatus) {
	s.Mode = w.timing()
	s.Tracing = w.active.Load()
	s.Err = w.err
	s.Fallbacks = w.fallbacks
	s.Windows = w.stats
	s.Windows.Every = time.Duration(w.every.Load())
	s.Windows.Steps = int(w.nsteps.Load())
}

// guardSeen publishes the launch guard's state and logs exits it refused
// since the last harvest: each is a caller's bug that, taken, would have
// let a detach run beside another thread's replay. Harvest.
func (h *Hub) guardSeen(g backend.LaunchGuard) {
	w := h.kw
	w.mu.Lock()
	prev := w.stats.Guard.UnmatchedExits
	w.stats.Guard = g
	w.mu.Unlock()
	if g.UnmatchedExits > prev {
		w.logf("gpuspans: the launch guard refused %d gs_launch_guard_exit calls without a gs_launch_guard_enter on their thread "+
			"(%d in all, the latest on thread %d): pair every exit with an enter on the same thread", g.UnmatchedExits-prev, g.UnmatchedExits, g.UnmatchedThread)
	}
}

/*
 * gpuspans kernel tracer: every kernel the process runs, from CUPTI's
 * activity records (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), kernels replayed
 * from CUDA graphs included, with the GPU's own start and end times and no
 * call per kernel from the engine.
 *
 * CUPTI is loaded at run time (never linked) and is process-wide, so the
 * tracer is one per process: these functions take no handle. gs_status and
 * gs_error are gpuspans.h's.
 *
 * Two ways to open it:
 * - A kernel window (gs_tracer_window_open .. gs_tracer_close): CUPTI is
 *   attached and collecting from the open to the close, and detached
 *   (cuptiFinalize) by the close, so launches outside windows cost what
 *   they cost before CUPTI. Rules, measured on an H200 (docs/design.md,
 *   kernel windows): open and close on the thread that launches, between
 *   its launches, while no other thread launches; collection stays on
 *   from open to close. The tracer enforces what it can see: a close from
 *   another thread is refused while the opener lives, collection cannot be
 *   turned off inside a window, no CUPTI call of ours runs on another
 *   thread while a window is open, and a window watches which threads
 *   launch (a subscriber's callbacks on the launch calls alone, held only
 *   while a window collects, so a profiler started then finds CUPTI
 *   taken; CUPTI's DRIVER and RUNTIME records of them where CUPTI refuses
 *   the subscriber, or with $GPUSPANS_LAUNCH_WATCH=records): one in which
 *   another thread replayed a CUDA graph is not detached (gs_tracer_close). A window also
 *   delivers copies and memsets and the host side of every launch call
 *   (gs_kernel_record.kind).
 * - Attached (gs_tracer_open .. gs_tracer_close): collection switched by
 *   gs_tracer_enable from any thread; CUPTI stays attached to the process
 *   for good (every launch pays about 1 us, a graph launch about 0.3-0.6 us
 *   per node), and no window opens in the process after it.
 *
 * Threads: CUPTI delivers filled buffers on its own worker thread; an
 * attached tracer runs one more thread that asks CUPTI for completed
 * buffers every flush period. Both only parse records into a bounded ring
 * that gs_tracer_read empties. Nothing here synchronises the GPU, and only
 * the closes wait (for the flush thread and a final forced flush).
 */
#ifndef GPUSPANS_TRACER_H_
#define GPUSPANS_TRACER_H_

#include <stddef.h>
#include <stdint.h>

#include "gpuspans/gpuspans.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One record of what a device or a launching thread did: a kernel run (the
 * default), a copy or memset on the device, or a launch call on the host
 * (kind). Plain data (48 bytes, no padding), so Go passes its own identical
 * struct without copying. */
typedef struct gs_kernel_record {
  int64_t start_ns;     /* on CUPTI's clock: add gs_tracer_clock_offset_ns for Unix ns */
  int64_t end_ns;       /* likewise; end - start includes the kernel's launch and
                           teardown on the GPU (docs/design.md, kernel spans) */
  uint32_t device;      /* CUDA device ordinal */
  uint32_t stream;      /* CUPTI's stream id (not the CUstream pointer) */
  uint32_t name;        /* gs_tracer_name id; 0 when the name table was full */
  uint32_t graph;       /* CUPTI's id of the graph it was replayed from; 0: none */
  uint32_t correlation; /* CUPTI's correlation id of the launch */
  uint32_t context;     /* CUPTI's context id */
  uint32_t kind;        /* GS_RECORD_KERNEL, _MEMCPY, _MEMSET or _LAUNCH */
  uint32_t thread;      /* _LAUNCH: the calling thread's id (gettid); else 0 */
} gs_kernel_record;

/* gs_kernel_record.kind. A copy or memset has device, stream, start and end
 * as a kernel has (name 0). A launch is the host's side of a kernel launch
 * or a CUDA graph launch (graph GS_RECORD_LAUNCHED_GRAPH: CUPTI's record
 * of the call does not say which graph, its kernels do): start and end
 * bracket the call on the calling thread, on the same clock as the
 * device's records, and correlation is the one its kernels carry; device
 * and stream are 0. Copies, memsets and launches come from kernel windows
 * alone, launches of every thread (one record per runtime or driver call
 * CUPTI reports: a runtime launch whose driver call CUPTI reports too
 * gives two, and the kernels carry one of their correlations). Launch
 * records reach the ring as the calls return, before their kernels'. */
#define GS_RECORD_KERNEL 0u
#define GS_RECORD_MEMCPY 1u
#define GS_RECORD_MEMSET 2u
#define GS_RECORD_LAUNCH 3u
#define GS_RECORD_LAUNCHED_GRAPH 0xffffffffu

/* Records lost, per device ordinal (0..GS_TRACER_MAX_DEVICES-1; a record of a
 * higher ordinal is counted and dropped). */
#define GS_TRACER_MAX_DEVICES 64

/* Distinct kernel names a tracer keeps: ids run 1..GS_TRACER_MAX_NAMES; a
 * record of a name past them carries id 0. */
#define GS_TRACER_MAX_NAMES 4096

/* Counters since the tracer last opened (but detaches and windows); each
 * only grows until the next open. */
typedef struct gs_tracer_stats {
  uint64_t records;         /* records put into the ring, of every kind */
  uint64_t cupti_dropped;   /* records CUPTI reported lost (no buffer in time) */
  uint64_t ring_dropped;    /* records lost because the ring was full */
  uint64_t names_overflow;  /* records whose name did not fit the name table (name 0) */
  uint64_t buffers;         /* buffers CUPTI completed */
  uint64_t buffers_refused; /* buffer requests refused: every buffer in use */
  uint64_t flushes;         /* flushes the flush thread made */
  uint64_t detaches;        /* times CUPTI was detached (cuptiFinalize), in the process's life */
  uint64_t windows;         /* kernel windows opened, in the process's life */
  uint32_t names;           /* distinct names interned */
  uint32_t enabled;         /* collection is on now */
  /* The launch watch of a window (gs_tracer_window_open): launches other
   * threads made while it collected, kernels and CUDA graph replays. */
  uint64_t foreign_launches;
  uint64_t foreign_graph_launches; /* unguarded ones: gs_launch_guard_enter */
  /* Launches passed through the launch guard in the process's life, and
   * those of them that waited for a window's detach. */
  uint64_t guarded_launches;
  uint64_t guard_waits;
  /* The launch guard now: launches inside it, the thread inside it longest
   * and for how long (CLOCK_MONOTONIC; 0 and 0 when none), exits refused
   * because their thread had not entered (and the latest such thread), and
   * window opens and closes refused at once because a thread had been
   * inside the guard longer than a window waits (gs_launch_guard_enter). */
  int64_t guard_inflight;
  uint32_t guard_holder;
  uint32_t guard_unmatched_thread;
  int64_t guard_held_ns;
  uint64_t guard_unmatched_exits;
  uint64_t guard_backoffs;
  /* Records lost (CUPTI's and the ring's) by device. */
  uint64_t dropped_by_device[GS_TRACER_MAX_DEVICES];
} gs_tracer_stats;

/* gs_tracer_open loads CUPTI and prepares collection, which stays off until
 * gs_tracer_enable. The library comes from, in order: `path` when not NULL
 * or empty (and nothing else), a libcupti already loaded in the process
 * (torch's), $GPUSPANS_CUPTI when set (and then nothing else: a path that
 * does not load keeps CUPTI off), then libcupti.so.13, libcupti.so.12 and
 * libcupti.so by the loader's search and under /usr/local/cuda's lib64,
 * extras/CUPTI/lib64 and targets/x86_64-linux/lib. It refuses, naming the
 * reason:
 * - GS_ERR_NO_DRIVER: no library could be loaded (dlerror's text), or one
 *   lacks a symbol;
 * - GS_ERR_INVALID_ARGUMENT: a CUPTI whose version (cuptiGetVersion) this
 *   build cannot use (known: 12.9 and later 12.x, 13.x; before 12.9 a
 *   refused activity buffer can crash CUPTI), or flush_period_ms outside
 *   1..60000;
 * - GS_ERR_BUSY: another CUPTI client holds the process (a subscriber, such
 *   as a running torch.profiler or Nsight), or the tracer is open already;
 * - GS_ERR_DRIVER: a CUPTI call failed (its result string in the message).
 * Registering CUPTI's buffer callbacks costs some milliseconds. CUPTI stays
 * attached to the process from here on, also after gs_tracer_close, and
 * gs_tracer_window_open refuses from then on. Thread-safe. Not
 * capture-safe: it may initialise CUPTI. */
gs_status gs_tracer_open(const char* path, uint32_t flush_period_ms, gs_error* err);

/* gs_tracer_window_open attaches CUPTI and turns collection on, on the
 * calling thread, which becomes the window's: call it on the launching
 * thread between its launches (a step boundary), while no other thread
 * launches. The library is found as gs_tracer_open finds it, with the same
 * refusals, and also:
 * - GS_ERR_INVALID_ARGUMENT: CUPTI was opened attached in this process, or
 *   a window could not detach: CUPTI stays attached, and a detach could
 *   break a CUDA graph replayed meanwhile with collection off;
 * - GS_ERR_NO_DRIVER: the library lacks cuptiFinalize.
 * flags: GS_TRACER_TAKE_OVER opens the window even though another client
 * has a CUPTI subscriber registered (GS_ERR_BUSY otherwise), for a caller
 * who knows that client is done: torch.profiler keeps its subscriber after
 * it stops, and the window's detach clears it. On any refusal CUPTI is
 * left as it was found. Costs CUPTI's
 * initialisation: 7-12 ms on an H200 in a torch process, more the more
 * modules the process has loaded. The clock offset is sampled here and at
 * the close, so no CUPTI call of ours runs elsewhere while it is open.
 * Thread-safe. Not capture-safe. */
gs_status gs_tracer_window_open(const char* path, uint32_t flags, gs_error* err);

/* gs_tracer_window_open's flags. */
#define GS_TRACER_TAKE_OVER 0x1u

/* gs_tracer_enable turns an attached tracer's collection on (on != 0) or
 * off; inside a window it accepts only on (GS_ERR_INVALID_ARGUMENT for off:
 * a window collects until its close). Kernels launched
 * while it is on are recorded when they run, even if it is off by then.
 * Turning it off also asks CUPTI for every completed record (a flush, on
 * the calling thread): records of kernels replayed from CUDA graphs are
 * only right when delivered before their graph replays again (see
 * tracer.cc). GS_ERR_INVALID_ARGUMENT when the tracer is not open,
 * GS_ERR_DRIVER when CUPTI refuses (then collection is off). On: about
 * 1-2 us; off: that plus the flush. Thread-safe; capture-safe. */
gs_status gs_tracer_enable(int32_t on, gs_error* err);

/* gs_tracer_read moves up to cap records from the ring into out, oldest
 * first, and returns how many. Never blocks on CUPTI: it takes the ring's
 * lock, which the delivery threads hold only to append. 0 when the tracer is
 * not open. Thread-safe; capture-safe. */
size_t gs_tracer_read(gs_kernel_record* out, size_t cap);

/* gs_tracer_name writes the label of id (the demangled name without return
 * type and parameters, at most 127 bytes; a cut label ends in "...#" and 8
 * hex digits of a hash of the full name, so cut names stay distinct) into
 * buf, always NUL-terminated when cap > 0, and returns its length; 0 for an
 * unknown id. Names stay valid until the process exits. Thread-safe. */
size_t gs_tracer_name(uint32_t id, char* buf, size_t cap);

/* gs_tracer_full_name is gs_tracer_name for the whole demangled name (at
 * most 4095 bytes), the first seen of those that share id's label. */
size_t gs_tracer_full_name(uint32_t id, char* buf, size_t cap);

/* gs_tracer_stats fills *out; zeros when the tracer never opened.
 * Thread-safe. */
void gs_tracer_get_stats(gs_tracer_stats* out);

/* gs_tracer_clock_offset_ns is Unix time (CLOCK_REALTIME, ns) minus CUPTI's
 * timestamp: attached, sampled now (the best of a few reads); for a window,
 * open or closed last, as sampled at its open or close. 0 when neither.
 * Thread-safe. */
int64_t gs_tracer_clock_offset_ns(void);

/* gs_tracer_close ends what the open began. Attached: collection off, the
 * flush thread stopped, a last forced flush, CUPTI given back to other
 * clients (a profiler may subscribe) but still attached. A window: on its
 * own thread (GS_ERR_WRONG_THREAD, and nothing done, on another while that
 * one lives), collection off, a forced flush, and cuptiFinalize, all
 * without a launch between them: 3-4 ms on an H200. A window in which
 * another thread replayed a CUDA graph (foreign_graph_launches) is not
 * detached: a detach beside another thread's graph replays lost the
 * process's CUDA context on an H200 (error 719 on every thread). Its
 * records are delivered, CUPTI stays attached for the rest of the process
 * as after gs_tracer_open, windows stay off, and the close returns
 * GS_ERR_INVALID_ARGUMENT naming the thread. A thread that replays graphs
 * only outside windows is not seen: it must not replay during a detach. Records still in the
 * ring stay readable until the next open. GS_OK when not open. NULL err is
 * fine. Thread-safe; not capture-safe. */
gs_status gs_tracer_close(gs_error* err);

/* gs_tracer_abandon ends a window that its thread will not close (it stops
 * stepping while alive): collection off and a forced flush from the calling
 * thread, but no detach, since the window's thread may be launching. CUPTI
 * stays attached for the rest of the process, and windows stay off. GS_OK
 * when no window is open. Thread-safe. */
gs_status gs_tracer_abandon(gs_error* err);

/* gs_launch_guard_enter and gs_launch_guard_exit bracket a CUDA graph
 * launch (or any launch) made by a thread other than the one that steps
 * the hub, so that no kernel window's detach overlaps it: the detach holds
 * new guarded launches off (enter waits, a detach takes 3-4 ms on an H200)
 * and waits for those in flight (up to 20 ms, then the window closes at a
 * later step; while a thread has been inside the guard longer than that,
 * opens and closes are refused at once, without a wait). Guarded replays in a window do not keep CUPTI attached
 * (gs_tracer_close): a window counts, by thread, the graph launches its
 * records show and those that passed the guard, and any surplus of the
 * former is unguarded. Enter costs a few atomic operations and a clock
 * read, and while a window collects a short lock; exit likewise. Pair every enter with
 * an exit on the same thread; never hold the guard across a call that
 * steps a hub. An exit on a thread that is not inside the guard is refused
 * and counted (guard_unmatched_exits), never taken from another thread's
 * count. Thread-safe; capture-safe; async-signal-unsafe. */
void gs_launch_guard_enter(void);
void gs_launch_guard_exit(void);

/* gs_launch_guard_depth is how many enters of the calling thread await
 * their exit: a wrapper that records it before its enter can exit back to
 * it whatever interrupted it in between. */
int32_t gs_launch_guard_depth(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUSPANS_TRACER_H_ */

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
 * Threads: CUPTI delivers filled buffers on its own worker thread, and the
 * tracer runs one more thread that asks CUPTI for completed buffers every
 * flush period. Both only parse records into a bounded ring that
 * gs_tracer_read empties. Nothing here synchronises the GPU, and only
 * gs_tracer_close waits (for those threads and a final forced flush).
 */
#ifndef GPUSPANS_TRACER_H_
#define GPUSPANS_TRACER_H_

#include <stddef.h>
#include <stdint.h>

#include "gpuspans/gpuspans.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One kernel execution. Plain data (40 bytes, no padding), so Go passes its
 * own identical struct without copying. */
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
} gs_kernel_record;

/* Records lost, per device ordinal (0..GS_TRACER_MAX_DEVICES-1; a record of a
 * higher ordinal is counted and dropped). */
#define GS_TRACER_MAX_DEVICES 64

/* Counters since the tracer last opened; each only grows until the next
 * gs_tracer_open. */
typedef struct gs_tracer_stats {
  uint64_t records;         /* kernel records put into the ring */
  uint64_t cupti_dropped;   /* records CUPTI reported lost (no buffer in time) */
  uint64_t ring_dropped;    /* records lost because the ring was full */
  uint64_t names_overflow;  /* records whose name did not fit the name table (name 0) */
  uint64_t buffers;         /* buffers CUPTI completed */
  uint64_t buffers_refused; /* buffer requests refused: every buffer in use */
  uint64_t flushes;         /* flushes the flush thread made */
  uint64_t detaches;        /* times CUPTI was detached (cuptiFinalize) after a close */
  uint32_t names;           /* distinct names interned */
  uint32_t enabled;         /* collection is on now */
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
 * - GS_ERR_INVALID_ARGUMENT: a CUPTI whose version (cuptiGetVersion) has a
 *   kernel record layout this build does not know (12.x and 13.x are known),
 *   or flush_period_ms outside 1..60000;
 * - GS_ERR_BUSY: another CUPTI client holds the process (a subscriber, such
 *   as a running torch.profiler or Nsight), or the tracer is open already;
 * - GS_ERR_DRIVER: a CUPTI call failed (its result string in the message).
 * Registering CUPTI's buffer callbacks costs some milliseconds once.
 * Thread-safe. Not capture-safe: it may initialise CUPTI. */
gs_status gs_tracer_open(const char* path, uint32_t flush_period_ms, gs_error* err);

/* gs_tracer_enable turns collection on (on != 0) or off. Kernels launched
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

/* gs_tracer_name writes the readable name of id (demangled, without return
 * type and parameters, at most 127 bytes, cut names end in "...") into buf,
 * always NUL-terminated when cap > 0, and returns its length; 0 for an
 * unknown id. Names stay valid until the process exits. Thread-safe. */
size_t gs_tracer_name(uint32_t id, char* buf, size_t cap);

/* gs_tracer_stats fills *out; zeros when the tracer never opened.
 * Thread-safe. */
void gs_tracer_get_stats(gs_tracer_stats* out);

/* gs_tracer_clock_offset_ns is Unix time (CLOCK_REALTIME, ns) minus CUPTI's
 * timestamp, sampled now (the best of a few reads). 0 when not open.
 * Thread-safe. */
int64_t gs_tracer_clock_offset_ns(void);

/* gs_tracer_close turns collection off, stops the flush thread, forces a
 * last flush (records then still in the ring stay readable until the next
 * open), and gives CUPTI back: another client (a profiler) may take it, and
 * gs_tracer_open may open it again (some milliseconds). CUPTI stays
 * attached to the process (see gs_tracer_detach). NULL err is fine.
 * Thread-safe; waits for the flush thread (at most one flush). */
gs_status gs_tracer_close(gs_error* err);

/* gs_tracer_detach detaches CUPTI from the process (cuptiFinalize) at the
 * exit of the next driver API call any thread makes, as CUPTI requires:
 * once collection has been on, every launch costs about 1 us more until
 * then, even with collection off (bench/cupti/attach_cost.cc). That call
 * pays the detach (about 1-3 ms), once. Until then a subscriber of ours is
 * registered, so another client cannot subscribe: do not detach to make
 * room for a profiler (close is enough). Nothing happens when another
 * client subscribed meanwhile, or when the tracer never loaded CUPTI;
 * gs_tracer_open withdraws a pending detach. GS_ERR_BUSY while the tracer
 * is open. Thread-safe. */
gs_status gs_tracer_detach(gs_error* err);

#ifdef __cplusplus
}
#endif

#endif /* GPUSPANS_TRACER_H_ */

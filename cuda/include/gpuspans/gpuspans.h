/*
 * gpuspans CUDA core: a fixed pool of CUDA event pairs, recorded on streams
 * and harvested without ever synchronising.
 *
 * The CUDA driver is loaded at run time (dlopen("libcuda.so.1")); nothing
 * links -lcuda, so a binary using this library starts on machines without a
 * GPU and reports GS_ERR_NO_DRIVER there.
 *
 * Conventions for every function below:
 * - Returns a gs_status. Nothing aborts and no C++ exception crosses this ABI.
 * - Where a driver call failed, *cu_result (when the pointer is not NULL)
 *   receives its CUresult; otherwise it is set to 0. With GS_ERR_POOL_DEAD
 *   it receives the sticky CUresult that killed the pool.
 * - Handles (streams, contexts) are passed as integers holding the driver's
 *   pointer value (CUstream, CUcontext). Stream 0 is the legacy default
 *   stream.
 * - "Capture-safe" means the call may be made while any stream of the process
 *   is being captured into a CUDA graph without invalidating that capture.
 */
#ifndef GPUSPANS_GPUSPANS_H_
#define GPUSPANS_GPUSPANS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status of a gpuspans call. Values are stable: they are part of the ABI. */
typedef enum gs_status {
  GS_OK = 0,
  GS_ERR_INVALID_ARGUMENT = 1, /* NULL pool, slot out of range, n too big */
  GS_ERR_NO_DRIVER = 2,        /* libcuda.so.1 could not be loaded */
  GS_ERR_MISSING_SYMBOL = 3,   /* a required driver symbol is absent */
  GS_ERR_INIT = 4,             /* cuInit failed */
  GS_ERR_DRIVER = 5,           /* a driver call failed; see cu_result */
  GS_ERR_CAPTURING = 6,        /* the stream is being captured; nothing recorded */
  GS_ERR_POOL_DEAD = 7,        /* a sticky error was seen; the pool no longer calls the driver */
  GS_ERR_BUSY = 8,             /* an event may still be in flight; destroy refused */
  GS_ERR_NO_MEMORY = 9,        /* host allocation failed */
  GS_ERR_WRONG_THREAD = 10     /* a kernel window may only close on the thread that opened it */
} gs_status;

/* A status with its detail, for the calls that are not on a hot path. */
typedef struct gs_error {
  int32_t status;    /* a gs_status */
  int32_t cu_result; /* CUresult when the driver failed, else 0 */
  char message[256]; /* NUL-terminated, human-readable, names the operation */
} gs_error;

/* State of one slot in a harvest. */
typedef enum gs_span_state {
  GS_SPAN_DONE = 0,      /* both events complete; duration_ns is valid */
  GS_SPAN_IN_FLIGHT = 1, /* not complete yet; ask again in a later harvest */
  GS_SPAN_ERROR = 2      /* the driver failed for this slot; cu_result says why */
} gs_span_state;

/* One entry of a batched harvest: slot and want_start are inputs, the rest
 * outputs. Plain data with no pointers, so Go memory may be passed directly. */
typedef struct gs_harvest_item {
  uint32_t slot;       /* in: the slot to check */
  uint32_t want_start; /* in: nonzero to also compute start_ns */
  int32_t state;       /* out: a gs_span_state */
  int32_t cu_result;   /* out: CUresult for GS_SPAN_ERROR, else 0 */
  int64_t duration_ns; /* out: end - begin, for GS_SPAN_DONE */
  int64_t start_ns;    /* out: begin on the host clock (CLOCK_REALTIME, ns since
                          the Unix epoch), for GS_SPAN_DONE with want_start;
                          0 when no anchor could place it */
} gs_harvest_item;
/* The Go binding relies on this layout (32 bytes, no padding): it passes
 * its own identical struct without copying, and checks sizes and offsets at
 * compile time. */

/* Opaque pool of event pairs bound to one CUDA context. */
typedef struct gs_pool gs_pool;

/* gs_status_name returns a static string naming st ("GS_ERR_CAPTURING").
 * Thread-safe, capture-safe, never NULL. */
const char* gs_status_name(int32_t st);

/* gs_driver_load loads libcuda.so.1, resolves the symbol table and calls
 * cuInit(0), once per process; later calls return the first outcome
 * (gs_testing_use_fake_driver / _real_driver start over, in tests only).
 * GS_ERR_NO_DRIVER carries dlerror()'s text, GS_ERR_MISSING_SYMBOL names the
 * symbol, GS_ERR_INIT carries cuInit's CUresult and its name.
 * Thread-safe (concurrent first calls wait for one load). err may be NULL.
 * Capture-safe. */
gs_status gs_driver_load(gs_error* err);

/* gs_driver_error_string writes the driver's name and description of a
 * CUresult ("CUDA_ERROR_NOT_READY: device not ready") into buf (always
 * NUL-terminated when cap > 0). Falls back to the number when the driver is
 * not loaded or lacks cuGetErrorName. Thread-safe, capture-safe. */
void gs_driver_error_string(int32_t cu_result, char* buf, size_t cap);

/* gs_driver_device_count reports the number of CUDA devices. Thread-safe.
 * Capture-safe. */
gs_status gs_driver_device_count(int32_t* count, gs_error* err);

/* The identity of a device as fleet tools name it, so gpuspans series join
 * with theirs (DCGM exporter's UUID and pci_bus_id labels, nvidia-smi).
 * Each field is NUL-terminated, and empty when the driver lacks the call. */
typedef struct gs_device_identity {
  char uuid[48];       /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lower-case hex */
  char pci_bus_id[24]; /* "00000000:19:00.0": 8-digit domain, upper-case hex, as NVML */
  char name[96];       /* the product name, "NVIDIA H200" */
  char driver[16];     /* the driver's CUDA version, "13.0" (cuDriverGetVersion:
                        * 13000 -> "13.0"); empty when the driver lacks the call */
} gs_device_identity;

/* gs_driver_device_identity fills *out for device ordinal `device`
 * (cuDeviceGetUuid_v2, falling back to cuDeviceGetUuid; cuDeviceGetPCIBusId;
 * cuDeviceGetName; cuDriverGetVersion, the same for every device). A call
 * the driver lacks leaves its field empty; a call that fails returns
 * GS_ERR_DRIVER naming it. GS_ERR_INVALID_ARGUMENT for a NULL out.
 * Thread-safe. Capture-safe (no stream or context work). */
gs_status gs_driver_device_identity(int32_t device, gs_device_identity* out, gs_error* err);

/* gs_pool_create makes a pool of `slots` event pairs (begin, end) with timing
 * enabled, on device `device` using its primary context (retained for the
 * pool's lifetime, so it shares memory and streams with the CUDA runtime and
 * frameworks built on it). Creation failing part-way destroys what was made.
 * slots must be 1..1048576 (GS_ERR_INVALID_ARGUMENT otherwise). Besides the
 * pairs, the pool owns 4 anchor events and a private non-blocking stream for
 * host-clock anchors, and records the first anchor before returning; and,
 * for the offset calibration (gs_pool_event_offset_ns), a module with a
 * spin kernel and 62 events, whose work it enqueues on that stream.
 * The pool is independent of every other pool: one per device is the rule,
 * any number per process is allowed. On success *out owns the pool; release
 * it with gs_pool_destroy. Thread-safe. Not capture-safe (creates events). */
gs_status gs_pool_create(int32_t device, uint32_t slots, gs_pool** out, gs_error* err);

/* gs_pool_destroy destroys the pool's events and releases its context, but
 * only when no recorded event can still be in flight: it queries every event
 * recorded since its last observed completion, and returns GS_ERR_BUSY (the
 * pool stays valid, try again later) when one is not complete. The queries
 * run in RELAXED capture mode, as a harvest's do. A pool that saw a sticky
 * error is released without queries (its events are destroyed and its
 * context released, ignoring errors). GS_ERR_DRIVER (pool still valid) if
 * the capture-mode exchange or the context push fails. The caller must
 * ensure no other call on the pool is running or follows. NULL is GS_OK. */
gs_status gs_pool_destroy(gs_pool* pool, gs_error* err);

/* gs_pool_slots and gs_pool_device report the pool's size and device.
 * Thread-safe, capture-safe, no driver call. */
uint32_t gs_pool_slots(const gs_pool* pool);
int32_t gs_pool_device(const gs_pool* pool);

/* gs_pool_is_capturing sets *capturing to 1 when `stream` is being captured
 * (cuStreamIsCapturing, the one query that is safe during capture), else 0.
 * A capture that was invalidated but not yet ended counts as capturing, and
 * so does stream 0 when the driver answers CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
 * (the legacy stream while a blocking stream is captured). The pool's
 * context is made current for the call, since stream 0 means the current
 * context's legacy stream. Thread-safe, capture-safe. */
gs_status gs_pool_is_capturing(gs_pool* pool, uint64_t stream, int32_t* capturing,
                               int32_t* cu_result);

/* gs_pool_record_begin / gs_pool_record_end record the begin or end event of
 * `slot` on `stream`. Each first checks the stream: on a capturing stream
 * nothing is recorded and GS_ERR_CAPTURING is returned (an event recorded
 * into a capture becomes a graph node and breaks the graph), with the same
 * rules as gs_pool_is_capturing. The pool's context is made current for the
 * check and the record: a thread with no current context adopts it for good
 * (as the CUDA runtime does with the primary context), a thread on another
 * context gets it pushed and popped. GS_ERR_INVALID_ARGUMENT for a NULL pool or a slot out of
 * range. Like any enqueue, cuEventRecord blocks the host while the stream's
 * command queue is full (seen with some thousands of commands queued behind
 * a long kernel): a few spans per kernel are fine, thousands are not.
 * Thread-safe for distinct slots; the caller owns a slot between its begin
 * and the harvest that reports it done (the control plane's ring ensures
 * this). Capture-safe: refuses rather than records. A sticky error returns
 * GS_ERR_POOL_DEAD and the pool calls the driver no more. */
gs_status gs_pool_record_begin(gs_pool* pool, uint32_t slot, uint64_t stream,
                               int32_t* cu_result);
gs_status gs_pool_record_end(gs_pool* pool, uint32_t slot, uint64_t stream,
                             int32_t* cu_result);

/* gs_pool_record_next ends `slot`'s span and begins `next`'s with one event:
 * it records slot's end event on `stream` (checked as above), and `next`'s
 * span then begins at that event, as if its begin had been recorded there,
 * so spans that follow each other on a stream cost one record, not two.
 * The caller keeps slot's end event unrecorded (slot not recorded again)
 * until a harvest has reported `next` done or the caller gave `next` up.
 * GS_ERR_INVALID_ARGUMENT for a slot or next out of range, or next ==
 * slot. On any failure neither span changed. Same thread and capture
 * rules as gs_pool_record_end. */
gs_status gs_pool_record_next(gs_pool* pool, uint32_t slot, uint32_t next, uint64_t stream,
                              int32_t* cu_result);

/* gs_pool_harvest checks n slots in one call and never waits for the GPU.
 * For each item it reports done with the elapsed nanoseconds, still in
 * flight, or an error. Work on one stream completes in order, so the pool
 * walks each stream's spans in end order and stops at the first still in
 * flight: one cuEventElapsedTime per span that lands, plus one call per
 * stream, however many spans are still in flight behind.
 * The thread's stream capture mode is exchanged to relaxed for the call and
 * restored after, so a harvest never invalidates a GLOBAL-mode capture that
 * another thread is running. Also re-anchors the host clock (see
 * gs_pool_set_anchor_interval) when due.
 * Not thread-safe against itself: one harvester per pool at a time;
 * concurrent with record calls. Capture-safe. Returns GS_ERR_POOL_DEAD (and
 * marks every item GS_SPAN_ERROR) once a sticky error was seen.
 * Per item: a slot whose begin was recorded but not yet its end is
 * GS_SPAN_IN_FLIGHT; a slot reported done and not recorded since is done
 * again with the same values; a slot never recorded is GS_SPAN_ERROR with
 * CUDA_ERROR_INVALID_HANDLE. n == 0 does nothing. GS_ERR_INVALID_ARGUMENT,
 * with no item touched, for a NULL pool, items NULL with n > 0, n > slots,
 * or any slot out of range. GS_ERR_DRIVER, every item GS_SPAN_IN_FLIGHT and
 * nothing queried, when the capture-mode exchange or the context push fails.
 * Start times: record_begin tags a slot with the anchor current at that
 * moment; an anchor becomes current once a harvest sees it complete, so
 * spans begun before the first harvest after gs_pool_create get no start
 * time, and a span whose anchor was replaced 4 times since gets none. */
gs_status gs_pool_harvest(gs_pool* pool, gs_harvest_item* items, size_t n,
                          int32_t* cu_result);

/* gs_pool_event_offset_ns reports how much longer an event pair reads than
 * the kernel between them on this device (the gap between an event and the
 * kernel it brackets, 2.5-5 us on an H200), for the control plane to
 * subtract from kernel spans. gs_pool_create measures it without waiting:
 * it loads a tiny PTX kernel that spins on %globaltimer and queues on the
 * pool's private stream a 200 us spin (so the GPU never catches up with the
 * host's launches), then 31 times a 2 us spin and (event, 10 us spin,
 * event); the first harvest that finds them done publishes the median of
 * what the pairs read beyond 10 us. -1 until then (under 1 ms of GPU time,
 * one thread), and for good when the driver cannot load the kernel or most
 * pairs failed. Until then gs_pool_destroy may answer GS_ERR_BUSY. Thread-safe,
 * capture-safe, no driver call. */
int64_t gs_pool_event_offset_ns(const gs_pool* pool);

/* gs_pool_set_anchor_interval sets how often harvest re-anchors the host
 * clock, in nanoseconds (default 500 ms; values <= 0 restore the default).
 * Start times are elapsed(anchor, begin) in float milliseconds, so a shorter
 * interval keeps them finer (1 s of float32 ms has ~120 ns steps).
 * Thread-safe, capture-safe, no driver call. */
void gs_pool_set_anchor_interval(gs_pool* pool, int64_t interval_ns);

#ifdef __cplusplus
}
#endif

#endif /* GPUSPANS_GPUSPANS_H_ */

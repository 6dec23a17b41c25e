/*
 * gpuspans testing hooks: switch the library to a fake CUDA driver, steer
 * that fake, and read what it was asked to do. For tests only (the C tests,
 * and go/cuda/cudatest through cgo): they live in //cuda:core_testing
 * (src/fake_driver.cc, src/pool_testing.cc), which production code never
 * links.
 *
 * Rules for every function here:
 * - Not thread-safe against each other, nor against gs_driver_load or
 *   gs_pool_create: call them from the test's main thread while no pool
 *   call runs. The fake's driver functions themselves are thread-safe, so
 *   pool calls may run concurrently once the knobs are set.
 * - No ownership changes hands; nothing here allocates on the caller's
 *   behalf.
 * - Switching drivers forgets the previous load but not the pools made
 *   with it: destroy those first (a pool keeps calling the driver it was
 *   created with).
 *
 * The fake models a GPU with a settable clock. Each stream has a "busy
 * until" time; gs_testing_fake_stream_work queues work on it. An event
 * recorded at fake time `now` on a stream gets the timestamp
 * max(now, busy_until) and is complete once the fake clock reaches it.
 * cuEventElapsedTime returns the difference of timestamps in float
 * milliseconds, like the real one.
 */
#ifndef GPUSPANS_GPUSPANS_TESTING_H_
#define GPUSPANS_GPUSPANS_TESTING_H_

#include <stdint.h>

#include "gpuspans/gpuspans.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gs_testing_use_fake_driver resets the fake (clock 0, no knobs, counters
 * zero, one device unless set) and makes the next gs_driver_load load it
 * instead of libcuda.so.1. */
void gs_testing_use_fake_driver(void);

/* gs_testing_use_real_driver makes the next gs_driver_load dlopen
 * libcuda.so.1 again. */
void gs_testing_use_real_driver(void);

/* gs_testing_set_capture_mode_exchange turns off (0) or back on (nonzero)
 * the capture-mode exchange around harvest and destroy queries, for every
 * driver, real or fake. A GPU test turns it off as a control, to show that
 * a harvest without it can invalidate another thread's GLOBAL capture. */
void gs_testing_set_capture_mode_exchange(int32_t enabled);

/* gs_testing_pool_event returns the CUevent of slot's begin (end == 0) or
 * end (end != 0) event as an integer, for gs_testing_fake_force; 0 for a
 * bad pool or slot. Works with any driver. */
uint64_t gs_testing_pool_event(const gs_pool* pool, uint32_t slot, int32_t end);

/* --- Loading ------------------------------------------------------------ */

/* gs_testing_fake_fail_open makes the fake's "dlopen" fail (nonzero) or
 * succeed (0). */
void gs_testing_fake_fail_open(int32_t fail);

/* gs_testing_fake_drop_symbol makes the fake's "dlsym" return NULL for the
 * exported symbol `name` (e.g. "cuEventRecord", "cuCtxPushCurrent_v2").
 * The name is copied. */
void gs_testing_fake_drop_symbol(const char* name);

/* gs_testing_fake_init_result sets what the fake cuInit returns. */
void gs_testing_fake_init_result(int32_t cu_result);

/* gs_testing_fake_set_device_count sets the number of fake devices (1 to 8;
 * default 1). */
void gs_testing_fake_set_device_count(int32_t count);

/* --- Failures ----------------------------------------------------------- */

/* gs_testing_fake_fail_event_create makes the k-th cuEventCreate from now
 * (k >= 1) return cu_result; k <= 0 clears it. */
void gs_testing_fake_fail_event_create(int32_t k, int32_t cu_result);

/* gs_testing_fake_fail_call makes the k-th fake driver call from now (k >=
 * 1, counted as gs_fake_counters.driver_calls counts them) return cu_result
 * without acting, once; k <= 0 clears it. Failing each call of an operation
 * in turn (k = 1, 2, ... up to the calls a successful one makes) checks
 * every failure path it has. */
void gs_testing_fake_fail_call(int64_t k, int32_t cu_result);

/* gs_testing_fake_record_result makes the next `times` cuEventRecord calls
 * (times < 0: all of them) return cu_result without recording. */
void gs_testing_fake_record_result(int32_t cu_result, int32_t times);

/* Operations gs_testing_fake_force applies to. */
enum { GS_FAKE_QUERY = 1, GS_FAKE_ELAPSED = 2 };

/* gs_testing_fake_force makes the next `times` calls of the operations in
 * `ops` (GS_FAKE_QUERY | GS_FAKE_ELAPSED) that involve `event` return
 * cu_result (times < 0: until cleared by times == 0). Use
 * CUDA_ERROR_NOT_READY (600) to hold a span in flight, any other code for an
 * error. */
void gs_testing_fake_force(uint64_t event, int32_t ops, int32_t cu_result, int32_t times);

/* gs_testing_fake_set_sticky makes every later fake driver call (but the
 * error-string ones) return cu_result, as a context does after a sticky
 * error; 0 clears it. */
void gs_testing_fake_set_sticky(int32_t cu_result);

/* --- Clock, streams, capture -------------------------------------------- */

/* gs_testing_fake_kernels makes the fake export cuModuleLoadData,
 * cuModuleUnload, cuModuleGetFunction and cuLaunchKernel from the next
 * gs_driver_load on (launch_ns >= 0), each launch queueing launch_ns of work
 * on its stream, so a pool's offset calibration measures launch_ns; or hides
 * them (launch_ns < 0, the default after gs_testing_use_fake_driver). */
void gs_testing_fake_kernels(int64_t launch_ns);

/* gs_testing_fake_advance moves the fake GPU clock forward by ns. */
void gs_testing_fake_advance(int64_t ns);

/* gs_testing_fake_now returns the fake GPU clock in ns. */
int64_t gs_testing_fake_now(void);

/* gs_testing_fake_stream_work queues ns of work on stream: its busy-until
 * time becomes max(busy_until, now) + ns. */
void gs_testing_fake_stream_work(uint64_t stream, int64_t ns);

/* gs_testing_fake_set_capturing starts (mode = a CUstreamCaptureMode, 0
 * GLOBAL, 1 THREAD_LOCAL, 2 RELAXED) or ends (mode < 0) a pretend capture
 * of stream. While one runs, cuStreamIsCapturing reports it, an event
 * recorded on that stream becomes "captured" (later queries return 907 and
 * the capture is invalidated), and, for a GLOBAL capture, an event query or
 * elapsed-time call made by a thread whose capture mode is not RELAXED
 * invalidates it (the real driver does this for calls from any thread). */
void gs_testing_fake_set_capturing(uint64_t stream, int32_t mode);

/* gs_testing_fake_set_current_device makes the primary context of device
 * the calling thread's current context (device < 0: none), so tests can
 * check that a pool pushes its context only when it is not current. */
void gs_testing_fake_set_current_device(int32_t device);

/* gs_testing_fake_thread_capture_mode returns the calling thread's capture
 * mode as the fake sees it (it starts GLOBAL, as in CUDA). */
int32_t gs_testing_fake_thread_capture_mode(void);

/* --- Counters ----------------------------------------------------------- */

/* Counts of fake driver calls since gs_testing_use_fake_driver or
 * gs_testing_fake_reset_counters; live_events, live_streams,
 * retained_contexts and live_modules are levels, not reset, for leak
 * checks. */
typedef struct gs_fake_counters {
  int64_t driver_calls;         /* every fake driver call */
  int64_t inits;
  int64_t event_creates;        /* successful ones */
  int64_t event_destroys;
  int64_t live_events;          /* created and not destroyed */
  int64_t event_records;        /* successful ones */
  int64_t records_into_capture; /* records on a capturing stream: must stay 0 */
  int64_t event_queries;
  int64_t event_elapsed;
  int64_t is_capturing;
  int64_t mode_exchanges;       /* cuThreadExchangeStreamCaptureMode calls */
  int64_t unrelaxed_queries;    /* queries/elapsed while the thread's mode was not RELAXED */
  int64_t captures_invalidated; /* pretend captures a call broke: must stay 0 */
  int64_t ctx_pushes;
  int64_t ctx_sets; /* cuCtxSetCurrent: a thread with no context adopting one */
  int64_t ctx_pops;
  int64_t retained_contexts;    /* primary context retains minus releases */
  int64_t live_streams;         /* created and not destroyed */
  int64_t destroys_in_flight;   /* events destroyed while recorded and not complete: must stay
                                   0, but for a pool released after a sticky error */
  int64_t live_modules;         /* loaded and not unloaded */
} gs_fake_counters;

/* gs_testing_fake_counters copies the counters into *out. */
void gs_testing_fake_counters(gs_fake_counters* out);

/* gs_testing_fake_reset_counters zeroes the call counts. */
void gs_testing_fake_reset_counters(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUSPANS_GPUSPANS_TESTING_H_ */

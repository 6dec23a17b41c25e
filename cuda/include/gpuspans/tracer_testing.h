/*
 * gpuspans tracer testing hooks: switch the kernel tracer to a fake CUPTI
 * and feed it kernel records, drops and refusals through the same callbacks
 * the real one uses. For tests only: //cuda:core_testing
 * (src/fake_cupti.cc), which production code never links. The rules of
 * gpuspans_testing.h apply: call these from one thread, not concurrently
 * with gs_tracer_open, gs_tracer_window_open or gs_tracer_close.
 */
#ifndef GPUSPANS_TRACER_TESTING_H_
#define GPUSPANS_TRACER_TESTING_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gs_testing_use_fake_cupti resets the fake (version 130001, nothing queued,
 * no knobs) and makes later gs_tracer_open calls load it. Close the tracer
 * first. */
void gs_testing_use_fake_cupti(void);

/* gs_testing_use_real_cupti makes later gs_tracer_open calls load libcupti. */
void gs_testing_use_real_cupti(void);

/* gs_testing_cupti_version sets what the fake cuptiGetVersion reports. */
void gs_testing_cupti_version(uint32_t version);

/* gs_testing_cupti_fail_open makes the fake library fail to load (nonzero). */
void gs_testing_cupti_fail_open(int32_t fail);

/* gs_testing_cupti_other_subscriber makes the fake's cuptiSubscribe answer
 * that another client holds CUPTI (nonzero), as torch.profiler would. */
void gs_testing_cupti_other_subscriber(int32_t other);

/* gs_testing_cupti_fail_enable makes the fake cuptiActivityEnable fail with
 * CUPTI result `result` (0: succeed). */
void gs_testing_cupti_fail_enable(int32_t result);

/* gs_testing_cupti_kernel queues a kernel record, as if the kernel had run,
 * if collection is on (otherwise it is not recorded, as with CUPTI, and it
 * returns 0); it returns 1 when queued. name is mangled or plain. */
int32_t gs_testing_cupti_kernel(uint32_t device, uint32_t stream, int64_t start_ns, int64_t end_ns,
                                const char* name, uint32_t graph);

/* gs_testing_cupti_drop makes the next delivery report n records dropped on
 * device's context. */
void gs_testing_cupti_drop(uint32_t device, uint64_t n);

/* gs_testing_cupti_deliver delivers the queued records through the buffer
 * callbacks (as CUPTI's flush would), in buffers of per_buffer records;
 * returns how many records were written. */
int64_t gs_testing_cupti_deliver(int32_t per_buffer);

/* gs_testing_cupti_clock_offset sets how far the fake's clock
 * (cuptiGetTimestamp) runs behind CLOCK_REALTIME, in ns (0 after
 * gs_testing_use_fake_cupti). */
void gs_testing_cupti_clock_offset(int64_t ns);

/* gs_testing_cupti_enabled reports whether collection is on in the fake. */
int32_t gs_testing_cupti_enabled(void);

/* gs_testing_cupti_calls reports how often the fake's enable and disable
 * were called since gs_testing_use_fake_cupti. */
void gs_testing_cupti_calls(int64_t* enables, int64_t* disables);

/* gs_testing_cupti_finalizes reports how often cuptiFinalize was called. */
int64_t gs_testing_cupti_finalizes(void);

/* gs_testing_cupti_graph_launch plays a CUDA graph replay by the calling
 * thread: one made while CUPTI is attached with collection off, or by
 * another thread than the one that attached it, breaks the next
 * cuptiFinalize, as on the H200 (gs_testing_cupti_bad_finalizes counts
 * them), and every replay after such a finalize returns 719
 * (CUDA_ERROR_LAUNCH_FAILED); 0 otherwise. While RUNTIME activity is on it
 * queues the replay's API record (cudaGraphLaunch), naming the thread as
 * cuptiSetThreadIdType last said (pthread_self by default). */
int32_t gs_testing_cupti_graph_launch(void);

/* gs_testing_cupti_graph_launch_for is gs_testing_cupti_graph_launch in
 * flight for hold_ns: a disable or finalize meanwhile breaks the next
 * finalize, as a replay with collection off does. A replay inside the
 * launch guard (gs_launch_guard_enter) by another thread is not, by
 * itself, a reason for a finalize to break. */
int32_t gs_testing_cupti_graph_launch_for(int64_t hold_ns);

/* gs_testing_cupti_guarded_graph_launch is gs_testing_cupti_graph_launch_for
 * inside the launch guard. */
int32_t gs_testing_cupti_guarded_graph_launch(int64_t hold_ns);

/* gs_testing_cupti_kernel_launch plays an eager kernel launch by the
 * calling thread: while DRIVER activity is on it queues its API record
 * (cuLaunchKernel). */
void gs_testing_cupti_kernel_launch(void);

/* gs_testing_cupti_api_call plays an API call by the calling thread,
 * cbid of the runtime API (runtime != 0) or the driver API: it calls a
 * subscriber's callbacks (enter, exit) enabled for cbid, and while that
 * API's activity is on and cbid not switched off
 * (cuptiActivityEnableDriverApi or RuntimeApi) it queues its record, from
 * start_ns to end_ns on the fake's clock (both 0: now). It returns the
 * call's correlation id; 0 when neither happened. */
uint32_t gs_testing_cupti_api_call(int32_t runtime, uint32_t cbid, int64_t start_ns, int64_t end_ns);

/* gs_testing_cupti_copy queues a copy (memset_not_copy 0) or a memset
 * record, as if it had run, if that kind's collection is on; it returns 1
 * when queued, else 0. */
int32_t gs_testing_cupti_copy(uint32_t device, uint32_t stream, int64_t start_ns, int64_t end_ns,
                              int32_t memset_not_copy, uint32_t graph);

/* gs_testing_cupti_api_records counts the API records (DRIVER, RUNTIME)
 * the fake queued since gs_testing_use_fake_cupti. */
int64_t gs_testing_cupti_api_records(void);

/* gs_testing_cupti_api_switched_off counts the cbids of both APIs whose
 * records are switched off now. The fake keeps the switches across
 * cuptiFinalize. */
int32_t gs_testing_cupti_api_switched_off(void);

/* gs_testing_cupti_callbacks counts the API calls that reached a
 * subscriber's callbacks (enabled with cuptiEnableCallback for their cbid)
 * since gs_testing_use_fake_cupti; gs_testing_cupti_no_callbacks makes the
 * fake lack cuptiEnableCallback (nonzero). */
int64_t gs_testing_cupti_callbacks(void);
void gs_testing_cupti_no_callbacks(int32_t missing);

/* gs_testing_cupti_no_api_switches makes the fake lack the per-cbid
 * switches (nonzero), as CUPTI before 12.5 does. */
void gs_testing_cupti_no_api_switches(int32_t missing);

/* gs_testing_cupti_bad_finalizes counts finalizes that followed a replay
 * made while attached with collection off, or by another thread. */
int64_t gs_testing_cupti_bad_finalizes(void);

/* gs_testing_cupti_attached reports whether CUPTI is attached (callbacks
 * registered and not finalized since). */
int32_t gs_testing_cupti_attached(void);

/* gs_testing_cupti_expect_thread makes the fake count every CUPTI call the
 * tracer makes from a thread other than tid (gs_testing_thread_id's; 0: any
 * thread), from now on; gs_testing_cupti_stray_calls returns the count.
 * Calls CUPTI's delivery makes (the buffer callbacks) are not counted. */
void gs_testing_cupti_expect_thread(int64_t tid);
int64_t gs_testing_cupti_stray_calls(void);

/* gs_testing_in_launch_guard reports whether the calling thread is inside
 * the launch guard (gs_launch_guard_enter). */
int32_t gs_testing_in_launch_guard(void);

/* gs_testing_lock_rank_violations returns how many of the tracer's locks
 * were taken out of their order (cuda/src/lock_rank.h) in the process, and
 * writes the first into why (cap bytes, NUL-terminated).
 * gs_testing_lock_out_of_order takes two of its lock ranks the wrong way
 * round, once: the check must count it. */
uint64_t gs_testing_lock_rank_violations(char* why, size_t cap);
void gs_testing_lock_out_of_order(void);

/* gs_testing_thread_id is the calling thread's kernel id (gettid). */
int64_t gs_testing_thread_id(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUSPANS_TRACER_TESTING_H_ */

/*
 * gpuspans GPU kit: just enough of the CUDA driver to give spans known
 * work, for the demo's workload, benchmarks and GPU tests. Not part of the
 * product library (Bazel target //cuda:kit; tools/ci/checks.sh holds that
 * neither //go/cuda nor the C ABI's library links it).
 *
 * The kernels come from PTX text in the kit (JIT-compiled by the driver, so
 * no CUDA compiler is needed to build): a spin kernel that busy-waits on
 * %globaltimer for a given number of ns and can write its own start and end
 * %globaltimer readings to device memory, and an empty kernel.
 *
 * Conventions as in gpuspans.h: every call returns a gs_status and fills
 * *err (may be NULL); handles are integers holding the driver's pointer
 * values. Each call makes the kit's context (the device's primary context)
 * current for its duration, pushing it only when it is not already current.
 * Thread-safety: the kit holds no mutable state after gs_kit_create, so any
 * call may run on any thread, subject to CUDA's own rules (a GLOBAL or
 * THREAD_LOCAL capture must end on the thread that began it). Capture
 * safety: launches and graph calls are as safe as the driver's; gs_kit_read,
 * gs_kit_alloc, gs_kit_free and gs_kit_sync are not capture-safe (they
 * synchronise), which is why the product library never does any of that.
 */
#ifndef GPUSPANS_GPUSPANS_KIT_H_
#define GPUSPANS_GPUSPANS_KIT_H_

#include <stddef.h>
#include <stdint.h>

#include "gpuspans/gpuspans.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gs_kit gs_kit;

/* gs_kit_create loads the driver (gs_driver_load), retains device's primary
 * context and loads the kit's PTX module. On success *out owns the kit;
 * release it with gs_kit_destroy. GS_ERR_MISSING_SYMBOL when the driver
 * lacks a call the kit needs (the test fake lacks them all). */
gs_status gs_kit_create(int32_t device, gs_kit** out, gs_error* err);

/* gs_kit_destroy unloads the module and releases the context. Streams,
 * memory and graphs made with the kit must be destroyed first. NULL is
 * GS_OK. */
gs_status gs_kit_destroy(gs_kit* kit, gs_error* err);

/* gs_kit_stream_create creates a non-blocking stream (owned by the caller:
 * gs_kit_stream_destroy it); gs_kit_stream_destroy destroys one. */
gs_status gs_kit_stream_create(gs_kit* kit, uint64_t* stream, gs_error* err);
gs_status gs_kit_stream_destroy(gs_kit* kit, uint64_t stream, gs_error* err);

/* gs_kit_spin launches one thread that spins until %globaltimer has advanced
 * by ns. When timer is not 0 it is a device address of two uint64 values,
 * which receive the kernel's first and last %globaltimer readings. */
gs_status gs_kit_spin(gs_kit* kit, uint64_t stream, uint64_t ns, uint64_t timer, gs_error* err);

/* gs_kit_spin_grid launches `ctas` one-thread CTAs that each spin like
 * gs_kit_spin and store their first and last %globaltimer readings at
 * out[2*i], out[2*i+1] (out: device memory of 16*ctas bytes): a kernel as
 * wide as the GPU, whose own interval is the earliest first reading to the
 * latest last. */
gs_status gs_kit_spin_grid(gs_kit* kit, uint64_t stream, uint64_t ns, uint32_t ctas, uint64_t out,
                            gs_error* err);

/* gs_kit_empty launches the empty kernel (one thread). */
gs_status gs_kit_empty(gs_kit* kit, uint64_t stream, gs_error* err);

/* gs_kit_count launches a kernel (one thread) that adds 1 to the uint64 at
 * device address counter (gs_kit_alloc'd): a test's proof that every kernel
 * it launched ran. */
gs_status gs_kit_count(gs_kit* kit, uint64_t stream, uint64_t counter, gs_error* err);

/* gs_kit_alloc allocates bytes of zeroed device memory (owned by the caller:
 * gs_kit_free it). gs_kit_read copies device memory to host memory, waiting
 * for it (call gs_kit_sync on the writing stream first). */
gs_status gs_kit_alloc(gs_kit* kit, size_t bytes, uint64_t* dptr, gs_error* err);
gs_status gs_kit_read(gs_kit* kit, uint64_t dptr, void* host, size_t bytes, gs_error* err);
gs_status gs_kit_free(gs_kit* kit, uint64_t dptr, gs_error* err);

/* gs_kit_sync waits until stream's work is done (tests only: the product
 * never waits). */
gs_status gs_kit_sync(gs_kit* kit, uint64_t stream, gs_error* err);

/* gs_kit_capture_begin starts capturing stream into a graph in `mode` (a
 * CUstreamCaptureMode: 0 GLOBAL, 1 THREAD_LOCAL, 2 RELAXED).
 * gs_kit_capture_end ends it and returns the graph (owned by the caller:
 * gs_kit_graph_destroy it); CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (901) in
 * err->cu_result says something broke the capture. */
gs_status gs_kit_capture_begin(gs_kit* kit, uint64_t stream, int32_t mode, gs_error* err);
gs_status gs_kit_capture_end(gs_kit* kit, uint64_t stream, uint64_t* graph, gs_error* err);

/* gs_kit_graph_instantiate makes an executable graph (owned by the caller:
 * gs_kit_graph_exec_destroy it); gs_kit_graph_launch launches one on
 * stream. */
gs_status gs_kit_graph_instantiate(gs_kit* kit, uint64_t graph, uint64_t* exec, gs_error* err);
gs_status gs_kit_graph_launch(gs_kit* kit, uint64_t exec, uint64_t stream, gs_error* err);
gs_status gs_kit_graph_destroy(gs_kit* kit, uint64_t graph, gs_error* err);
gs_status gs_kit_graph_exec_destroy(gs_kit* kit, uint64_t exec, gs_error* err);

#ifdef __cplusplus
}
#endif

#endif /* GPUSPANS_GPUSPANS_KIT_H_ */

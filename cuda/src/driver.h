// Internal: the process-wide CUDA driver table and helpers shared by the
// pool, the fake driver, the GPU kit and the benchmark. Not a public header.
#ifndef GPUSPANS_CUDA_SRC_DRIVER_H_
#define GPUSPANS_CUDA_SRC_DRIVER_H_

#include <stddef.h>
#include <stdint.h>

#include "cuda_driver_subset.h"
#include "gpuspans/gpuspans.h"

namespace gs {

// X(field, exported symbol). Versioned names are the ones the driver exports
// for the current ABI of each call; cuda.h maps the plain names to them with
// macros, which we do not have. The plain names below have no newer version
// with the same signature (cuEventElapsedTime_v2 drops error reporting for
// pending work, which a harvest wants to see).
#define GS_DRIVER_REQUIRED(X)                                      \
  X(cuInit, "cuInit")                                              \
  X(cuDeviceGetCount, "cuDeviceGetCount")                          \
  X(cuDeviceGet, "cuDeviceGet")                                    \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")          \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")     \
  X(cuCtxGetCurrent, "cuCtxGetCurrent")                            \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2")                       \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2")                         \
  X(cuCtxSetCurrent, "cuCtxSetCurrent")                            \
  X(cuStreamCreate, "cuStreamCreate")                              \
  X(cuStreamDestroy, "cuStreamDestroy_v2")                         \
  X(cuStreamIsCapturing, "cuStreamIsCapturing")                    \
  X(cuEventCreate, "cuEventCreate")                                \
  X(cuEventDestroy, "cuEventDestroy_v2")                           \
  X(cuEventRecord, "cuEventRecord")                                \
  X(cuEventQuery, "cuEventQuery")                                  \
  X(cuEventElapsedTime, "cuEventElapsedTime")

// Optional symbols are null when absent and checked where used.
#define GS_DRIVER_OPTIONAL(X)                                      \
  X(cuGetErrorName, "cuGetErrorName")                              \
  X(cuGetErrorString, "cuGetErrorString")                          \
  X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode") \
  X(cuDeviceGetName, "cuDeviceGetName")                              \
  X(cuDeviceGetUuid, "cuDeviceGetUuid_v2")                           \
  X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId")                     \
  X(cuDriverGetVersion, "cuDriverGetVersion")                       \
  X(cuModuleLoadData, "cuModuleLoadData")                            \
  X(cuModuleUnload, "cuModuleUnload")                                \
  X(cuModuleGetFunction, "cuModuleGetFunction")                      \
  X(cuLaunchKernel, "cuLaunchKernel")

struct Driver {
#define GS_DRIVER_FIELD(field, symbol) PFN_##field field;
  GS_DRIVER_REQUIRED(GS_DRIVER_FIELD)
  GS_DRIVER_OPTIONAL(GS_DRIVER_FIELD)
#undef GS_DRIVER_FIELD
};

// How the loader reaches a driver library: dlopen/dlsym for the real one,
// the fake's own table in tests.
struct Loader {
  void* (*open)();                              // library handle or null
  void* (*symbol)(void* handle, const char* name);
  const char* (*last_error)();                  // why open failed
};

// LoadedDriver returns the driver table after a successful gs_driver_load,
// else null. The table lives until process exit (tables of earlier test
// loads too), so pools may keep the pointer.
const Driver* LoadedDriver();

// Symbol looks up another symbol of the loaded driver library (the GPU kit's
// calls), or returns null when absent or when no driver is loaded.
void* Symbol(const char* name);

// IsSticky reports whether r leaves the context unusable: once one of these
// is seen, every later call on the context fails the same way.
bool IsSticky(CUresult r);

// SetError fills *err (when not null) with status, cu_result and a formatted
// message; when r != 0 the driver's name and description of r are appended.
// Returns status.
gs_status SetError(gs_error* err, gs_status status, CUresult r, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

// HostNowNs reads CLOCK_REALTIME in nanoseconds since the Unix epoch.
int64_t HostNowNs();

// CaptureModeExchangeEnabled is false only while a test turned the exchange
// off (gs_testing_set_capture_mode_exchange) to show what it prevents.
bool CaptureModeExchangeEnabled();

// Test seams. Production code never calls them: the gs_testing_* entry
// points of gpuspans_testing.h (fake_driver.cc, //cuda:core_testing) do, so
// that the core links no test code. That header's rules apply.
//
// SetLoaderForTesting makes the next gs_driver_load use loader (null: the
// real libcuda.so.1), forgetting the current load.
void SetLoaderForTesting(const Loader* loader);
// SetCaptureModeExchangeForTesting turns the capture-mode exchange off or on.
void SetCaptureModeExchangeForTesting(bool enabled);

// Makes a context current for a scope unless it already is. A thread with no
// current context adopts it for good (cuCtxSetCurrent), as the CUDA runtime
// does with the primary context on a thread's first call: Go runs cgo calls
// on whichever OS thread is free, and a push and pop on each record would
// cost two driver calls per event. A thread already on another context gets
// a push, popped at the end of the scope, so it is left as it was.
class ContextScope {
 public:
  ContextScope() = default;
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
  ~ContextScope() {
    if (d_) {
      CUcontext popped;
      d_->cuCtxPopCurrent(&popped);
    }
  }
  CUresult Enter(const Driver* d, CUcontext ctx) {
    CUcontext cur = nullptr;
    CUresult r = d->cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS || cur == ctx) return r;
    if (cur == nullptr) return d->cuCtxSetCurrent(ctx);
    r = d->cuCtxPushCurrent(ctx);
    if (r == CUDA_SUCCESS) d_ = d;
    return r;
  }

 private:
  const Driver* d_ = nullptr;
};

}  // namespace gs

#endif  // GPUSPANS_CUDA_SRC_DRIVER_H_

// Loading the CUDA driver at run time: dlopen once, resolve a table of
// symbols, cuInit. Nothing here links -lcuda, so a process without a GPU
// starts and reports GS_ERR_NO_DRIVER.
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <mutex>

#include "driver.h"

namespace gs {
namespace {

void* RealOpen() { return dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); }
void* RealSymbol(void* handle, const char* name) { return dlsym(handle, name); }
const char* RealLastError() {
  const char* e = dlerror();
  return e ? e : "unknown dlopen error";
}
const Loader kRealLoader = {&RealOpen, &RealSymbol, &RealLastError};

// One load attempt. Tests replace the current state with a fresh one to load
// again; earlier states stay linked (and alive) because pools created under
// them keep pointers to their driver tables.
struct LoadState {
  explicit LoadState(const Loader* l, LoadState* prev) : loader(l), previous(prev) {}
  const Loader* loader;
  LoadState* previous;
  std::once_flag once;
  std::atomic<bool> ready{false};  // set once the table is usable
  gs_error result{};
  void* handle = nullptr;
  Driver driver{};
};

LoadState g_initial(&kRealLoader, nullptr);
std::atomic<LoadState*> g_state{&g_initial};
std::atomic<bool> g_exchange_capture_mode{true};

void FormatResult(const Driver* d, CUresult r, char* buf, size_t cap) {
  if (cap == 0) return;
  const char* name = nullptr;
  const char* desc = nullptr;
  if (d && d->cuGetErrorName && d->cuGetErrorName(r, &name) != CUDA_SUCCESS) name = nullptr;
  if (d && d->cuGetErrorString && d->cuGetErrorString(r, &desc) != CUDA_SUCCESS) desc = nullptr;
  if (name && desc) {
    snprintf(buf, cap, "%s: %s", name, desc);
  } else if (name) {
    snprintf(buf, cap, "%s", name);
  } else {
    snprintf(buf, cap, "CUDA error %d", r);
  }
}

gs_status VSetError(const Driver* d, gs_error* err, gs_status status, CUresult r,
                    const char* fmt, va_list ap) {
  if (!err) return status;
  err->status = status;
  err->cu_result = r;
  int n = vsnprintf(err->message, sizeof(err->message), fmt, ap);
  if (r != CUDA_SUCCESS && n >= 0 && static_cast<size_t>(n) + 2 < sizeof(err->message)) {
    strcpy(err->message + n, ": ");
    FormatResult(d, r, err->message + n + 2, sizeof(err->message) - n - 2);
  }
  return status;
}

gs_status LoadError(LoadState* s, gs_status status, CUresult r, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
gs_status LoadError(LoadState* s, gs_status status, CUresult r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  VSetError(&s->driver, &s->result, status, r, fmt, ap);
  va_end(ap);
  return status;
}

void Load(LoadState* s) {
  s->handle = s->loader->open();
  if (!s->handle) {
    LoadError(s, GS_ERR_NO_DRIVER, 0, "dlopen libcuda.so.1: %s", s->loader->last_error());
    return;
  }
  Driver& d = s->driver;
#define GS_RESOLVE_REQUIRED(field, name)                                               \
  d.field = reinterpret_cast<PFN_##field>(s->loader->symbol(s->handle, name));         \
  if (!d.field) {                                                                      \
    LoadError(s, GS_ERR_MISSING_SYMBOL, 0, "libcuda.so.1 lacks required symbol %s", name); \
    return;                                                                            \
  }
  GS_DRIVER_REQUIRED(GS_RESOLVE_REQUIRED)
#undef GS_RESOLVE_REQUIRED
#define GS_RESOLVE_OPTIONAL(field, name) \
  d.field = reinterpret_cast<PFN_##field>(s->loader->symbol(s->handle, name));
  GS_DRIVER_OPTIONAL(GS_RESOLVE_OPTIONAL)
#undef GS_RESOLVE_OPTIONAL
  // Drivers before CUDA 11.4 export only the unversioned name.
  if (!d.cuDeviceGetUuid) {
    d.cuDeviceGetUuid = reinterpret_cast<PFN_cuDeviceGetUuid>(s->loader->symbol(s->handle, "cuDeviceGetUuid"));
  }
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    LoadError(s, GS_ERR_INIT, r, "cuInit(0)");
    return;
  }
  s->result.status = GS_OK;
  s->ready.store(true, std::memory_order_release);
}

}  // namespace

void SetLoaderForTesting(const Loader* loader) {
  LoadState* old = g_state.load(std::memory_order_acquire);
  g_state.store(new LoadState(loader ? loader : &kRealLoader, old), std::memory_order_release);
}

void SetCaptureModeExchangeForTesting(bool enabled) {
  g_exchange_capture_mode.store(enabled, std::memory_order_relaxed);
}

const Driver* LoadedDriver() {
  LoadState* s = g_state.load(std::memory_order_acquire);
  return s->ready.load(std::memory_order_acquire) ? &s->driver : nullptr;
}

void* Symbol(const char* name) {
  LoadState* s = g_state.load(std::memory_order_acquire);
  if (!s->ready.load(std::memory_order_acquire)) return nullptr;
  return s->loader->symbol(s->handle, name);
}

bool IsSticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_UNKNOWN:
      return true;
  }
  return false;
}

gs_status SetError(gs_error* err, gs_status status, CUresult r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  VSetError(LoadedDriver(), err, status, r, fmt, ap);
  va_end(ap);
  return status;
}

int64_t HostNowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool CaptureModeExchangeEnabled() {
  return g_exchange_capture_mode.load(std::memory_order_relaxed);
}

// FormatUuid writes u as nvidia-smi and DCGM do: "GPU-" and 8-4-4-4-12 hex.
void FormatUuid(const CUuuid& u, char* buf, size_t cap) {
  const unsigned char* b = reinterpret_cast<const unsigned char*>(u.bytes);
  snprintf(buf, cap,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

// NormalizeBusId rewrites the driver's "dddd:bb:dd.f" as NVML writes bus ids
// ("%08X:%02X:%02X.%X"), which DCGM's pci_bus_id label carries. Anything it
// cannot parse is kept as the driver wrote it.
void NormalizeBusId(const char* in, char* buf, size_t cap) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (sscanf(in, "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) == 4) {
    snprintf(buf, cap, "%08X:%02X:%02X.%X", domain, bus, dev, fn);
  } else {
    snprintf(buf, cap, "%s", in);
  }
}

// FormatDriverVersion writes cuDriverGetVersion's 1000 * major + 10 * minor
// as nvidia-smi's "CUDA Version" does: 13000 -> "13.0", 12080 -> "12.8".
// A version it cannot be (not positive) leaves buf empty.
void FormatDriverVersion(int v, char* buf, size_t cap) {
  if (cap == 0) return;
  buf[0] = 0;
  if (v > 0) snprintf(buf, cap, "%d.%d", v / 1000, (v % 1000) / 10);
}

}  // namespace gs

extern "C" {

const char* gs_status_name(int32_t st) {
  switch (st) {
    case GS_OK: return "GS_OK";
    case GS_ERR_INVALID_ARGUMENT: return "GS_ERR_INVALID_ARGUMENT";
    case GS_ERR_NO_DRIVER: return "GS_ERR_NO_DRIVER";
    case GS_ERR_MISSING_SYMBOL: return "GS_ERR_MISSING_SYMBOL";
    case GS_ERR_INIT: return "GS_ERR_INIT";
    case GS_ERR_DRIVER: return "GS_ERR_DRIVER";
    case GS_ERR_CAPTURING: return "GS_ERR_CAPTURING";
    case GS_ERR_POOL_DEAD: return "GS_ERR_POOL_DEAD";
    case GS_ERR_BUSY: return "GS_ERR_BUSY";
    case GS_ERR_NO_MEMORY: return "GS_ERR_NO_MEMORY";
    case GS_ERR_WRONG_THREAD: return "GS_ERR_WRONG_THREAD";
  }
  return "GS_STATUS_UNKNOWN";
}

gs_status gs_driver_load(gs_error* err) {
  try {
    gs::LoadState* s = gs::g_state.load(std::memory_order_acquire);
    std::call_once(s->once, [s] { gs::Load(s); });
    if (err) *err = s->result;
    return static_cast<gs_status>(s->result.status);
  } catch (...) {
    // call_once reports a failed thread start as std::system_error; nothing
    // in Load throws.
    return gs::SetError(err, GS_ERR_NO_MEMORY, 0, "gs_driver_load: out of resources");
  }
}

void gs_driver_error_string(int32_t cu_result, char* buf, size_t cap) {
  gs::FormatResult(gs::LoadedDriver(), cu_result, buf, cap);
}

gs_status gs_driver_device_count(int32_t* count, gs_error* err) {
  if (!count) return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_driver_device_count: count is NULL");
  *count = 0;
  gs_status st = gs_driver_load(err);
  if (st != GS_OK) return st;
  int n = 0;
  CUresult r = gs::LoadedDriver()->cuDeviceGetCount(&n);
  if (r != CUDA_SUCCESS) return gs::SetError(err, GS_ERR_DRIVER, r, "cuDeviceGetCount");
  *count = n;
  if (err) *err = gs_error{};
  return GS_OK;
}

gs_status gs_driver_device_identity(int32_t device, gs_device_identity* out, gs_error* err) {
  if (!out) return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_driver_device_identity: out is NULL");
  *out = gs_device_identity{};
  gs_status st = gs_driver_load(err);
  if (st != GS_OK) return st;
  const gs::Driver* d = gs::LoadedDriver();
  CUdevice dev = 0;
  CUresult r = d->cuDeviceGet(&dev, device);
  if (r != CUDA_SUCCESS) return gs::SetError(err, GS_ERR_DRIVER, r, "cuDeviceGet(%d)", device);
  if (d->cuDeviceGetUuid) {
    CUuuid u{};
    r = d->cuDeviceGetUuid(&u, dev);
    if (r != CUDA_SUCCESS) return gs::SetError(err, GS_ERR_DRIVER, r, "cuDeviceGetUuid(%d)", device);
    gs::FormatUuid(u, out->uuid, sizeof(out->uuid));
  }
  if (d->cuDeviceGetPCIBusId) {
    char raw[64] = {0};
    r = d->cuDeviceGetPCIBusId(raw, static_cast<int>(sizeof(raw) - 1), dev);
    if (r != CUDA_SUCCESS) return gs::SetError(err, GS_ERR_DRIVER, r, "cuDeviceGetPCIBusId(%d)", device);
    gs::NormalizeBusId(raw, out->pci_bus_id, sizeof(out->pci_bus_id));
  }
  if (d->cuDeviceGetName) {
    r = d->cuDeviceGetName(out->name, static_cast<int>(sizeof(out->name) - 1), dev);
    if (r != CUDA_SUCCESS) {
      out->name[0] = 0;
      return gs::SetError(err, GS_ERR_DRIVER, r, "cuDeviceGetName(%d)", device);
    }
  }
  if (d->cuDriverGetVersion) {
    int v = 0;
    r = d->cuDriverGetVersion(&v);
    if (r != CUDA_SUCCESS) return gs::SetError(err, GS_ERR_DRIVER, r, "cuDriverGetVersion");
    gs::FormatDriverVersion(v, out->driver, sizeof(out->driver));
  }
  if (err) *err = gs_error{};
  return GS_OK;
}

}  // extern "C"

// A fake CUDA driver for tests (//cuda:core_testing, never linked into
// production), so the pool's logic (and the Go binding above it) is tested
// on machines without a GPU. It implements the core's symbol table with the
// same signatures as the real driver, models event completion with a
// settable clock, and counts every call. It also holds the gs_testing_*
// entry points, over the core's test seams in driver.h, but for
// gs_testing_pool_event (pool_testing.cc). See gpuspans_testing.h for the
// model and the control API. Over 600 lines: one model of the driver, each
// entry point next to the state it changes.
#include <stdio.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "driver.h"
#include "gpuspans/gpuspans_testing.h"

namespace gs {
namespace {

constexpr int kMaxDevices = 8;

struct FakeEvent {
  bool recorded = false;
  bool captured = false;  // last recorded on a capturing stream
  uint64_t stream = 0;
  int64_t ts = 0;
  int32_t force_ops = 0, force_code = 0, force_times = 0;
};

struct FakeStream {
  int64_t busy_until = 0;
  int32_t capture_mode = -1;  // a CUstreamCaptureMode while capturing
  bool invalidated = false;
};

struct FakeContext {
  char unused;  // only its address matters: it is the CUcontext
};

struct State {
  std::mutex mu;
  int64_t now = 0;
  int32_t device_count = 1;
  bool fail_open = false;
  std::set<std::string> dropped;
  CUresult init_result = CUDA_SUCCESS;
  CUresult sticky = CUDA_SUCCESS;
  int32_t fail_create_at = 0, create_calls = 0;
  CUresult fail_create_code = CUDA_SUCCESS;
  int64_t fail_call_in = 0;  // > 0: the fail_call_in-th call from now fails
  CUresult fail_call_code = CUDA_SUCCESS;
  CUresult record_code = CUDA_SUCCESS;
  int32_t record_times = 0;
  uint64_t next_stream = 0x5000;
  int64_t kernel_ns = -1;  // < 0: no module or launch symbols exported
  std::set<FakeEvent*> events;
  std::map<uint64_t, FakeStream> streams;
  FakeContext contexts[kMaxDevices];
  gs_fake_counters n{};
};

State& S() {
  static State* s = new State;  // never destroyed: other threads may still call in at exit
  return *s;
}

thread_local int32_t t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
thread_local std::vector<CUcontext> t_contexts;

uint64_t Key(CUstream s) { return reinterpret_cast<uint64_t>(s); }

// Begin takes the lock, counts the call and fails it when told to; the
// fake's calls all start here.
#define FAKE_BEGIN()                                                        \
  State& s = S();                                                           \
  std::lock_guard<std::mutex> lock(s.mu);                                   \
  ++s.n.driver_calls;                                                       \
  if (s.fail_call_in > 0 && --s.fail_call_in == 0) return s.fail_call_code; \
  if (s.sticky != CUDA_SUCCESS) return s.sticky

FakeEvent* Find(State& s, CUevent e) {
  auto* fe = reinterpret_cast<FakeEvent*>(e);
  return s.events.count(fe) ? fe : nullptr;
}

// A query or elapsed-time call from a thread not in RELAXED mode breaks every
// GLOBAL capture in progress, as the real driver does.
void CheckCaptureSafety(State& s) {
  if (t_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return;
  ++s.n.unrelaxed_queries;
  for (auto& kv : s.streams) {
    FakeStream& st = kv.second;
    if (st.capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && !st.invalidated) {
      st.invalidated = true;
      ++s.n.captures_invalidated;
    }
  }
}

// Forced reports whether a knob overrides op on e, consuming one use.
bool Forced(FakeEvent* e, int32_t op, CUresult* code) {
  if (!(e->force_ops & op) || e->force_times == 0) return false;
  if (e->force_times > 0) --e->force_times;
  *code = e->force_code;
  return true;
}

// Using an event recorded into a capture is an error that breaks the capture.
CUresult CapturedEvent(State& s, FakeEvent* e) {
  auto it = s.streams.find(e->stream);
  if (it != s.streams.end() && it->second.capture_mode >= 0 && !it->second.invalidated) {
    it->second.invalidated = true;
    ++s.n.captures_invalidated;
  }
  return CUDA_ERROR_CAPTURED_EVENT;
}

CUresult FakeInit(unsigned int) {
  FAKE_BEGIN();
  ++s.n.inits;
  return s.init_result;
}

CUresult FakeGetErrorName(CUresult r, const char** str) {
  switch (r) {
    case CUDA_SUCCESS: *str = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_OUT_OF_MEMORY: *str = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
    case CUDA_ERROR_NO_DEVICE: *str = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case CUDA_ERROR_INVALID_HANDLE: *str = "CUDA_ERROR_INVALID_HANDLE"; return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_READY: *str = "CUDA_ERROR_NOT_READY"; return CUDA_SUCCESS;
    case CUDA_ERROR_ILLEGAL_ADDRESS: *str = "CUDA_ERROR_ILLEGAL_ADDRESS"; return CUDA_SUCCESS;
    case CUDA_ERROR_CAPTURED_EVENT: *str = "CUDA_ERROR_CAPTURED_EVENT"; return CUDA_SUCCESS;
  }
  *str = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult FakeGetErrorString(CUresult r, const char** str) {
  const char* name = nullptr;
  if (FakeGetErrorName(r, &name) != CUDA_SUCCESS) {
    *str = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *str = "fake driver error";
  return CUDA_SUCCESS;
}

CUresult FakeDeviceGetCount(int* count) {
  FAKE_BEGIN();
  *count = s.device_count;
  return CUDA_SUCCESS;
}

CUresult FakeDeviceGet(CUdevice* dev, int ordinal) {
  FAKE_BEGIN();
  if (ordinal < 0 || ordinal >= s.device_count) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

// Identity: fixed, distinct per device, in the driver's own formats.
CUresult FakeDeviceGetName(char* name, int len, CUdevice dev) {
  FAKE_BEGIN();
  if (dev < 0 || dev >= s.device_count) return CUDA_ERROR_INVALID_DEVICE;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, static_cast<size_t>(len), "gpuspans fake GPU");
  return CUDA_SUCCESS;
}

CUresult FakeDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  FAKE_BEGIN();
  if (dev < 0 || dev >= s.device_count) return CUDA_ERROR_INVALID_DEVICE;
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < 16; i++) uuid->bytes[i] = static_cast<char>(0xa0 + i);
  uuid->bytes[15] = static_cast<char>(dev);
  return CUDA_SUCCESS;
}

CUresult FakeDeviceGetPCIBusId(char* id, int len, CUdevice dev) {
  FAKE_BEGIN();
  if (dev < 0 || dev >= s.device_count) return CUDA_ERROR_INVALID_DEVICE;
  if (!id || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(id, static_cast<size_t>(len), "0000:%02x:00.0", 0x19 + dev);
  return CUDA_SUCCESS;
}

// The driver's CUDA version, as cuDriverGetVersion reports it: 12.9, so that
// the minor digit shows.
constexpr int kFakeDriverVersion = 12090;

CUresult FakeDriverGetVersion(int* version) {
  FAKE_BEGIN();
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = kFakeDriverVersion;
  return CUDA_SUCCESS;
}

CUresult FakePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  FAKE_BEGIN();
  if (dev < 0 || dev >= s.device_count) return CUDA_ERROR_INVALID_DEVICE;
  ++s.n.retained_contexts;
  *ctx = reinterpret_cast<CUcontext>(&s.contexts[dev]);
  return CUDA_SUCCESS;
}

CUresult FakePrimaryCtxRelease(CUdevice dev) {
  FAKE_BEGIN();
  if (dev < 0 || dev >= s.device_count) return CUDA_ERROR_INVALID_DEVICE;
  --s.n.retained_contexts;
  return CUDA_SUCCESS;
}

CUresult FakeCtxGetCurrent(CUcontext* ctx) {
  FAKE_BEGIN();
  *ctx = t_contexts.empty() ? nullptr : t_contexts.back();
  return CUDA_SUCCESS;
}

CUresult FakeCtxPushCurrent(CUcontext ctx) {
  FAKE_BEGIN();
  ++s.n.ctx_pushes;
  t_contexts.push_back(ctx);
  return CUDA_SUCCESS;
}

CUresult FakeCtxSetCurrent(CUcontext ctx) {
  FAKE_BEGIN();
  ++s.n.ctx_sets;
  if (t_contexts.empty()) {
    t_contexts.push_back(ctx);
  } else {
    t_contexts.back() = ctx;
  }
  return CUDA_SUCCESS;
}

CUresult FakeCtxPopCurrent(CUcontext* ctx) {
  FAKE_BEGIN();
  ++s.n.ctx_pops;
  if (t_contexts.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx) *ctx = t_contexts.back();
  t_contexts.pop_back();
  return CUDA_SUCCESS;
}

CUresult FakeStreamCreate(CUstream* out, unsigned int) {
  FAKE_BEGIN();
  ++s.n.live_streams;
  uint64_t key = s.next_stream++;
  s.streams[key] = FakeStream{};
  *out = reinterpret_cast<CUstream>(key);
  return CUDA_SUCCESS;
}

CUresult FakeStreamDestroy(CUstream stream) {
  FAKE_BEGIN();
  if (!s.streams.erase(Key(stream))) return CUDA_ERROR_INVALID_HANDLE;
  --s.n.live_streams;
  return CUDA_SUCCESS;
}

CUresult FakeStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  FAKE_BEGIN();
  ++s.n.is_capturing;
  const FakeStream& st = s.streams[Key(stream)];
  *status = st.capture_mode < 0 ? CU_STREAM_CAPTURE_STATUS_NONE
            : st.invalidated    ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

CUresult FakeExchangeCaptureMode(CUstreamCaptureMode* mode) {
  FAKE_BEGIN();
  ++s.n.mode_exchanges;
  int32_t old = t_capture_mode;
  t_capture_mode = *mode;
  *mode = static_cast<CUstreamCaptureMode>(old);
  return CUDA_SUCCESS;
}

CUresult FakeEventCreate(CUevent* out, unsigned int) {
  FAKE_BEGIN();
  if (s.fail_create_at > 0 && ++s.create_calls == s.fail_create_at) {
    s.fail_create_at = 0;
    return s.fail_create_code;
  }
  auto* e = new FakeEvent;
  s.events.insert(e);
  ++s.n.event_creates;
  ++s.n.live_events;
  *out = reinterpret_cast<CUevent>(e);
  return CUDA_SUCCESS;
}

CUresult FakeEventDestroy(CUevent event) {
  FAKE_BEGIN();
  FakeEvent* e = Find(s, event);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  // The real driver defers the release of an event still in flight; the
  // pool must never rely on that (gs_pool_destroy refuses while busy).
  if (e->recorded && !e->captured && e->ts > s.now) ++s.n.destroys_in_flight;
  s.events.erase(e);
  delete e;
  ++s.n.event_destroys;
  --s.n.live_events;
  return CUDA_SUCCESS;
}

CUresult FakeEventRecord(CUevent event, CUstream stream) {
  FAKE_BEGIN();
  if (s.record_times != 0) {
    if (s.record_times > 0) --s.record_times;
    return s.record_code;
  }
  FakeEvent* e = Find(s, event);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  FakeStream& st = s.streams[Key(stream)];
  e->stream = Key(stream);
  e->recorded = true;
  e->captured = st.capture_mode >= 0;
  if (e->captured) {
    ++s.n.records_into_capture;
  } else {
    e->ts = std::max(s.now, st.busy_until);
    ++s.n.event_records;
  }
  return CUDA_SUCCESS;
}

CUresult FakeEventQuery(CUevent event) {
  FAKE_BEGIN();
  ++s.n.event_queries;
  FakeEvent* e = Find(s, event);
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  CheckCaptureSafety(s);
  CUresult forced;
  if (Forced(e, GS_FAKE_QUERY, &forced)) return forced;
  if (e->captured) return CapturedEvent(s, e);
  if (!e->recorded || e->ts <= s.now) return CUDA_SUCCESS;
  return CUDA_ERROR_NOT_READY;
}

CUresult FakeEventElapsedTime(float* ms, CUevent start, CUevent end) {
  FAKE_BEGIN();
  ++s.n.event_elapsed;
  FakeEvent* b = Find(s, start);
  FakeEvent* e = Find(s, end);
  if (!b || !e) return CUDA_ERROR_INVALID_HANDLE;
  CheckCaptureSafety(s);
  CUresult forced;
  if (Forced(b, GS_FAKE_ELAPSED, &forced) || Forced(e, GS_FAKE_ELAPSED, &forced)) return forced;
  if (b->captured) return CapturedEvent(s, b);
  if (e->captured) return CapturedEvent(s, e);
  if (!b->recorded || !e->recorded) return CUDA_ERROR_INVALID_HANDLE;
  if (b->ts > s.now || e->ts > s.now) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(static_cast<double>(e->ts - b->ts) / 1e6);
  return CUDA_SUCCESS;
}

// Modules and launches: enough for the pool's offset calibration. A launch
// queues kernel_ns of work on its stream, plus, for gs_calibrate_wait, the
// nanoseconds it is asked to spin: an event pair around it reads exactly
// kernel_ns beyond the spin.
char g_module, g_function, g_wait;

CUresult FakeModuleLoadData(CUmodule* module, const void* image) {
  FAKE_BEGIN();
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  ++s.n.live_modules;
  *module = reinterpret_cast<CUmodule>(&g_module);
  return CUDA_SUCCESS;
}

CUresult FakeModuleUnload(CUmodule module) {
  FAKE_BEGIN();
  if (module != reinterpret_cast<CUmodule>(&g_module) || s.n.live_modules == 0) return CUDA_ERROR_INVALID_HANDLE;
  --s.n.live_modules;
  return CUDA_SUCCESS;
}

CUresult FakeModuleGetFunction(CUfunction* f, CUmodule module, const char* name) {
  FAKE_BEGIN();
  if (!f || module != reinterpret_cast<CUmodule>(&g_module) || !name) return CUDA_ERROR_INVALID_VALUE;
  *f = reinterpret_cast<CUfunction>(std::string(name) == "gs_calibrate_wait" ? &g_wait : &g_function);
  return CUDA_SUCCESS;
}

CUresult FakeLaunchKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, CUstream stream, void** params, void**) {
  FAKE_BEGIN();
  const bool wait = f == reinterpret_cast<CUfunction>(&g_wait);
  if (!wait && f != reinterpret_cast<CUfunction>(&g_function)) return CUDA_ERROR_INVALID_HANDLE;
  int64_t ns = s.kernel_ns;
  if (wait) {
    if (!params || !params[0]) return CUDA_ERROR_INVALID_VALUE;
    ns += static_cast<int64_t>(*static_cast<const uint64_t*>(params[0]));
  }
  FakeStream& st = s.streams[Key(stream)];
  st.busy_until = std::max(st.busy_until, s.now) + ns;
  return CUDA_SUCCESS;
}

bool IsKernelSymbol(const std::string& name) {
  return name == "cuModuleLoadData" || name == "cuModuleUnload" || name == "cuModuleGetFunction" ||
         name == "cuLaunchKernel";
}

struct Entry {
  const char* name;
  void* fn;
};

// The fake's exported symbols, under the driver's names (versioned ones too).
const Entry kSymbols[] = {
    {"cuInit", reinterpret_cast<void*>(&FakeInit)},
    {"cuGetErrorName", reinterpret_cast<void*>(&FakeGetErrorName)},
    {"cuGetErrorString", reinterpret_cast<void*>(&FakeGetErrorString)},
    {"cuDeviceGetCount", reinterpret_cast<void*>(&FakeDeviceGetCount)},
    {"cuDeviceGet", reinterpret_cast<void*>(&FakeDeviceGet)},
    {"cuDeviceGetName", reinterpret_cast<void*>(&FakeDeviceGetName)},
    {"cuDeviceGetUuid_v2", reinterpret_cast<void*>(&FakeDeviceGetUuid)},
    {"cuDeviceGetUuid", reinterpret_cast<void*>(&FakeDeviceGetUuid)},
    {"cuDeviceGetPCIBusId", reinterpret_cast<void*>(&FakeDeviceGetPCIBusId)},
    {"cuDriverGetVersion", reinterpret_cast<void*>(&FakeDriverGetVersion)},
    {"cuDevicePrimaryCtxRetain", reinterpret_cast<void*>(&FakePrimaryCtxRetain)},
    {"cuDevicePrimaryCtxRelease_v2", reinterpret_cast<void*>(&FakePrimaryCtxRelease)},
    {"cuCtxGetCurrent", reinterpret_cast<void*>(&FakeCtxGetCurrent)},
    {"cuCtxPushCurrent_v2", reinterpret_cast<void*>(&FakeCtxPushCurrent)},
    {"cuCtxPopCurrent_v2", reinterpret_cast<void*>(&FakeCtxPopCurrent)},
    {"cuCtxSetCurrent", reinterpret_cast<void*>(&FakeCtxSetCurrent)},
    {"cuStreamCreate", reinterpret_cast<void*>(&FakeStreamCreate)},
    {"cuStreamDestroy_v2", reinterpret_cast<void*>(&FakeStreamDestroy)},
    {"cuStreamIsCapturing", reinterpret_cast<void*>(&FakeStreamIsCapturing)},
    {"cuThreadExchangeStreamCaptureMode", reinterpret_cast<void*>(&FakeExchangeCaptureMode)},
    {"cuEventCreate", reinterpret_cast<void*>(&FakeEventCreate)},
    {"cuEventDestroy_v2", reinterpret_cast<void*>(&FakeEventDestroy)},
    {"cuEventRecord", reinterpret_cast<void*>(&FakeEventRecord)},
    {"cuEventQuery", reinterpret_cast<void*>(&FakeEventQuery)},
    {"cuEventElapsedTime", reinterpret_cast<void*>(&FakeEventElapsedTime)},
    {"cuModuleLoadData", reinterpret_cast<void*>(&FakeModuleLoadData)},
    {"cuModuleUnload", reinterpret_cast<void*>(&FakeModuleUnload)},
    {"cuModuleGetFunction", reinterpret_cast<void*>(&FakeModuleGetFunction)},
    {"cuLaunchKernel", reinterpret_cast<void*>(&FakeLaunchKernel)},
};

char g_handle;  // the fake "library handle": any non-null pointer

void* FakeOpen() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.fail_open ? nullptr : &g_handle;
}

void* FakeSymbol(void*, const char* name) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.dropped.count(name)) return nullptr;
  if (s.kernel_ns < 0 && IsKernelSymbol(name)) return nullptr;
  for (const Entry& e : kSymbols) {
    if (std::string(e.name) == name) return e.fn;
  }
  return nullptr;
}

const char* FakeLastError() {
  return "libcuda.so.1: cannot open shared object file (fake driver told to fail)";
}

const Loader& FakeLoader() {
  static const Loader loader = {&FakeOpen, &FakeSymbol, &FakeLastError};
  return loader;
}

void FakeReset() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  for (FakeEvent* e : s.events) delete e;
  s.events.clear();
  s.streams.clear();
  s.dropped.clear();
  s.now = 0;
  s.device_count = 1;
  s.fail_open = false;
  s.init_result = s.sticky = s.fail_create_code = s.record_code = CUDA_SUCCESS;
  s.fail_create_at = s.create_calls = s.record_times = 0;
  s.fail_call_in = 0;
  s.fail_call_code = CUDA_SUCCESS;
  s.n = gs_fake_counters{};
  s.kernel_ns = -1;
  t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  t_contexts.clear();
}

}  // namespace
}  // namespace gs

using gs::S;

extern "C" {

void gs_testing_use_fake_driver(void) {
  gs::FakeReset();
  gs::SetLoaderForTesting(&gs::FakeLoader());
}

void gs_testing_use_real_driver(void) { gs::SetLoaderForTesting(nullptr); }

void gs_testing_set_capture_mode_exchange(int32_t enabled) {
  gs::SetCaptureModeExchangeForTesting(enabled != 0);
}

void gs_testing_fake_fail_open(int32_t fail) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().fail_open = fail != 0;
}

void gs_testing_fake_drop_symbol(const char* name) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().dropped.insert(name);
}

void gs_testing_fake_init_result(int32_t cu_result) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().init_result = cu_result;
}

void gs_testing_fake_set_device_count(int32_t count) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().device_count = std::min(std::max(count, 1), gs::kMaxDevices);
}

void gs_testing_fake_fail_event_create(int32_t k, int32_t cu_result) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().fail_create_at = k > 0 ? k : 0;
  S().create_calls = 0;
  S().fail_create_code = cu_result;
}

void gs_testing_fake_fail_call(int64_t k, int32_t cu_result) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().fail_call_in = k > 0 ? k : 0;
  S().fail_call_code = cu_result;
}

void gs_testing_fake_record_result(int32_t cu_result, int32_t times) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().record_code = cu_result;
  S().record_times = times;
}

void gs_testing_fake_force(uint64_t event, int32_t ops, int32_t cu_result, int32_t times) {
  std::lock_guard<std::mutex> lock(S().mu);
  gs::FakeEvent* e = gs::Find(S(), reinterpret_cast<CUevent>(event));
  if (!e) return;
  e->force_ops = ops;
  e->force_code = cu_result;
  e->force_times = times;
}

void gs_testing_fake_set_sticky(int32_t cu_result) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().sticky = cu_result;
}

void gs_testing_fake_advance(int64_t ns) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().now += ns;
}

int64_t gs_testing_fake_now(void) {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().now;
}

void gs_testing_fake_kernels(int64_t launch_ns) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().kernel_ns = launch_ns < 0 ? -1 : launch_ns;
}

void gs_testing_fake_stream_work(uint64_t stream, int64_t ns) {
  std::lock_guard<std::mutex> lock(S().mu);
  gs::FakeStream& st = S().streams[stream];
  st.busy_until = std::max(st.busy_until, S().now) + ns;
}

void gs_testing_fake_set_capturing(uint64_t stream, int32_t mode) {
  std::lock_guard<std::mutex> lock(S().mu);
  gs::FakeStream& st = S().streams[stream];
  st.capture_mode = mode < 0 ? -1 : mode;
  st.invalidated = false;
}

void gs_testing_fake_set_current_device(int32_t device) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (device < 0 || device >= gs::kMaxDevices) {
    gs::t_contexts.clear();
    return;
  }
  CUcontext ctx = reinterpret_cast<CUcontext>(&S().contexts[device]);
  if (gs::t_contexts.empty()) {
    gs::t_contexts.push_back(ctx);
  } else {
    gs::t_contexts.back() = ctx;
  }
}

int32_t gs_testing_fake_thread_capture_mode(void) { return gs::t_capture_mode; }

void gs_testing_fake_counters(gs_fake_counters* out) {
  std::lock_guard<std::mutex> lock(S().mu);
  *out = S().n;
}

void gs_testing_fake_reset_counters(void) {
  std::lock_guard<std::mutex> lock(S().mu);
  gs_fake_counters& n = S().n;
  const gs_fake_counters levels = n;
  n = gs_fake_counters{};
  n.live_events = levels.live_events;
  n.live_streams = levels.live_streams;
  n.retained_contexts = levels.retained_contexts;
  n.live_modules = levels.live_modules;
}

}  // extern "C"

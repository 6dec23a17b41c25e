// The kernel tracer: CUPTI's activity records of every kernel, parsed into a
// bounded ring on CUPTI's and our flush thread, read in batches by the
// control plane. gpuspans/tracer.h has the contract.
#include "gpuspans/tracer.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cupti_subset.h"
#include "driver.h"

namespace gs {
namespace {

#define GS_CUPTI_REQUIRED(X)                                         \
  X(cuptiGetVersion)                                                 \
  X(cuptiGetResultString)                                            \
  X(cuptiGetTimestamp)                                               \
  X(cuptiActivityEnable)                                             \
  X(cuptiActivityDisable)                                            \
  X(cuptiActivityRegisterCallbacks)                                  \
  X(cuptiActivityFlushAll)                                           \
  X(cuptiActivityGetNextRecord)                                      \
  X(cuptiActivityGetNumDroppedRecords)
#define GS_CUPTI_OPTIONAL(X) \
  X(cuptiGetDeviceId)        \
  X(cuptiSubscribe)          \
  X(cuptiUnsubscribe)        \
  X(cuptiEnableDomain)       \
  X(cuptiFinalize)

struct Cupti {
#define GS_CUPTI_FIELD(name) PFN_##name name;
  GS_CUPTI_REQUIRED(GS_CUPTI_FIELD)
  GS_CUPTI_OPTIONAL(GS_CUPTI_FIELD)
#undef GS_CUPTI_FIELD
};

void* RealCuptiOpen(const char* path) {
  // RTLD_NOLOAD first: a second copy of CUPTI beside the process's own
  // (torch's wheel ships one) would fight it for the driver's callbacks.
  if (path) return dlopen(path, RTLD_NOW | RTLD_LOCAL);
  static const char* const kNames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
  for (const char* n : kNames) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return h;
  }
  const char* env = getenv("GPUSPANS_CUPTI");
  if (env && *env) return dlopen(env, RTLD_NOW | RTLD_LOCAL);  // named: that one or none
  for (const char* n : kNames) {
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  static const char* const kDirs[] = {"/usr/local/cuda/lib64/", "/usr/local/cuda/extras/CUPTI/lib64/",
                                      "/usr/local/cuda/targets/x86_64-linux/lib/"};
  for (const char* d : kDirs) {
    for (const char* n : kNames) {
      std::string p = std::string(d) + n;
      if (void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    }
  }
  return nullptr;
}
void* RealCuptiSymbol(void* h, const char* name) { return dlsym(h, name); }
const char* RealCuptiError() {
  const char* e = dlerror();
  return e ? e : "libcupti not found (set GPUSPANS_CUPTI to its path)";
}
const CuptiLoader kRealCuptiLoader = {&RealCuptiOpen, &RealCuptiSymbol, &RealCuptiError};
std::atomic<const CuptiLoader*> g_loader{&kRealCuptiLoader};

constexpr size_t kBufferSize = 512 << 10;  // ~2,500 kernel records
constexpr size_t kMaxBuffers = 16;         // 8 MiB at most in CUPTI's hands
constexpr size_t kRingCap = 1 << 16;       // records awaiting gs_tracer_read
constexpr uint32_t kMaxNames = 4096;
constexpr size_t kMaxNameBytes = 127;

// The tracer. One per process, never destroyed: CUPTI may call the buffer
// callbacks at any time after they are registered, also after a close.
struct Tracer {
  std::mutex mu;  // open, close, enable
  bool open = false;
  Cupti api{};
  void* lib = nullptr;

  std::thread flusher;
  std::mutex flush_mu;
  std::condition_variable flush_cv;
  bool stop = false;
  uint32_t period_ms = 100;

  std::mutex buf_mu;
  std::vector<uint8_t*> free_buffers;
  size_t outstanding = 0;  // buffers handed to CUPTI and not yet returned

  std::mutex ring_mu;
  gs_kernel_record* ring = nullptr;  // kRingCap entries, made at the first open
  size_t head = 0, count = 0;

  std::mutex name_mu;
  std::unordered_map<const char*, uint32_t> by_ptr;
  std::unordered_map<std::string, uint32_t> by_name;
  std::vector<std::string> names;  // id-1

  std::atomic<uint64_t> records{0}, cupti_dropped{0}, ring_dropped{0}, names_overflow{0};
  std::atomic<uint64_t> buffers{0}, buffers_refused{0}, flushes{0};
  std::atomic<uint32_t> enabled{0};
  std::atomic<bool> detach{false};  // finalize at the next driver API exit
  CUpti_SubscriberHandle detach_sub = nullptr;  // mu; valid while detach
  std::atomic<uint64_t> detaches{0};
  std::atomic<uint64_t> dropped_by_device[GS_TRACER_MAX_DEVICES]{};
};

Tracer& T() {
  static Tracer* t = new Tracer;  // leaked on purpose: see Tracer
  return *t;
}

// ShortName turns a demangled kernel name into a label: no return type, no
// parameter list, at most kMaxNameBytes bytes ("..." marks a cut).
std::string ShortName(const std::string& full) {
  std::string s = full;
  // Parameters: the last top-level "(...)", and any qualifier after it.
  size_t end = s.size();
  while (end > 0 && s[end - 1] != ')') end--;
  if (end > 0) {
    int depth = 0;
    for (size_t i = end; i-- > 0;) {
      if (s[i] == ')') depth++;
      if (s[i] == '(' && --depth == 0) {
        if (i > 0) s.resize(i);
        break;
      }
    }
  }
  // Return type: whatever precedes the last space outside template brackets.
  int angle = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '<') angle++;
    if (s[i] == '>' && angle > 0) angle--;
    if (s[i] == ' ' && angle == 0) start = i + 1;
  }
  s = s.substr(start);
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  if (s.empty()) s = "?";
  if (s.size() > kMaxNameBytes) {
    size_t cut = kMaxNameBytes - 3;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) cut--;  // UTF-8 boundary
    s.resize(cut);
    s += "...";
  }
  return s;
}

std::string Readable(const char* mangled) {
  if (!mangled || !*mangled) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? ShortName(d) : ShortName(mangled);
  free(d);
  return out;
}

uint32_t Intern(Tracer& t, const char* name) {
  std::lock_guard<std::mutex> l(t.name_mu);
  auto p = t.by_ptr.find(name);
  if (p != t.by_ptr.end()) return p->second;
  std::string s = Readable(name);
  uint32_t id = 0;
  auto n = t.by_name.find(s);
  if (n != t.by_name.end()) {
    id = n->second;
  } else if (t.names.size() < kMaxNames) {
    t.names.push_back(s);
    id = static_cast<uint32_t>(t.names.size());
    t.by_name.emplace(std::move(s), id);
  } else {
    return 0;  // not remembered by pointer either: the table stays bounded
  }
  if (t.by_ptr.size() < 4 * kMaxNames) t.by_ptr.emplace(name, id);
  return id;
}

void CountDrop(Tracer& t, uint32_t device, uint64_t n) {
  if (device < GS_TRACER_MAX_DEVICES) t.dropped_by_device[device] += n;
}

void Push(Tracer& t, const gs_kernel_record* recs, size_t n) {
  std::lock_guard<std::mutex> l(t.ring_mu);
  for (size_t i = 0; i < n; i++) {
    if (t.count == kRingCap || recs[i].device >= GS_TRACER_MAX_DEVICES) {
      t.ring_dropped++;
      CountDrop(t, recs[i].device, 1);
      continue;
    }
    t.ring[(t.head + t.count) % kRingCap] = recs[i];
    t.count++;
    t.records++;
  }
}

void BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  Tracer& t = T();
  *max_records = 0;
  std::lock_guard<std::mutex> l(t.buf_mu);
  uint8_t* b = nullptr;
  if (!t.free_buffers.empty()) {
    b = t.free_buffers.back();
    t.free_buffers.pop_back();
  } else if (t.outstanding < kMaxBuffers) {
    void* p = nullptr;
    if (posix_memalign(&p, 8, kBufferSize) == 0) b = static_cast<uint8_t*>(p);
  }
  if (!b) {
    // CUPTI drops what it cannot place and reports the count at completion.
    t.buffers_refused++;
    *buffer = nullptr;
    *size = 0;
    return;
  }
  t.outstanding++;
  *buffer = b;
  *size = kBufferSize;
}

void BufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  Tracer& t = T();
  const Cupti& api = t.api;
  t.buffers++;
  gs_kernel_record batch[256];
  size_t n = 0;
  CUpti_Activity* rec = nullptr;
  while (buffer && valid > 0 && api.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_KernelRecordPrefix*>(rec);
    gs_kernel_record& r = batch[n++];
    r.start_ns = static_cast<int64_t>(k->start);
    r.end_ns = static_cast<int64_t>(k->end);
    r.device = k->deviceId;
    r.stream = k->streamId;
    r.name = Intern(t, k->name);
    if (r.name == 0) t.names_overflow++;
    r.graph = k->graphId;
    r.correlation = k->correlationId;
    r.context = k->contextId;
    if (n == sizeof(batch) / sizeof(batch[0])) {
      Push(t, batch, n);
      n = 0;
    }
  }
  Push(t, batch, n);
  size_t dropped = 0;
  if (api.cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped) {
    t.cupti_dropped += dropped;
    uint32_t dev = GS_TRACER_MAX_DEVICES;
    if (!ctx || !api.cuptiGetDeviceId || api.cuptiGetDeviceId(ctx, &dev) != CUPTI_SUCCESS) dev = 0;
    CountDrop(t, dev, dropped);
  }
  if (buffer) {
    std::lock_guard<std::mutex> l(t.buf_mu);
    if (t.outstanding > 0) t.outstanding--;
    t.free_buffers.push_back(buffer);
  }
}

// DetachAtApiExit is the driver API callback of a close that detaches:
// CUPTI documents cuptiFinalize as safe at a driver call's exit, where no
// launch is half-instrumented. Finalizing removes CUPTI's hooks, and with
// them the cost every launch pays once collection has been on (about 1 us on
// an H200, measured by bench/cupti/attach_cost.cc), and the subscriber.
void DetachAtApiExit(void*, int domain, uint32_t, const void* data) {
  Tracer& t = T();
  const auto* cb = static_cast<const CUpti_CallbackDataPrefix*>(data);
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || !cb || cb->callbackSite != CUPTI_API_EXIT) return;
  bool want = true;
  if (!t.detach.compare_exchange_strong(want, false)) return;
  if (t.api.cuptiFinalize && t.api.cuptiFinalize() == CUPTI_SUCCESS) t.detaches++;
}

gs_status CuptiError(const Cupti& api, gs_error* err, gs_status st, CUptiResult r, const char* op) {
  const char* s = nullptr;
  if (api.cuptiGetResultString && api.cuptiGetResultString(r, &s) != CUPTI_SUCCESS) s = nullptr;
  return SetError(err, st, 0, "%s: %s (CUPTI result %d)", op, s ? s : "CUPTI error", r);
}

// KnownLayout reports whether version's kernel records start with
// CUpti_KernelRecordPrefix: CUDA 12.x (API versions 19-28) and 13.x
// (130000-139999, the new numbering).
bool KnownLayout(uint32_t version) {
  return (version >= 19 && version <= 28) || (version >= 130000 && version <= 139999);
}

void FlushLoop(Tracer* t) {
  std::unique_lock<std::mutex> l(t->flush_mu);
  while (!t->stop) {
    t->flush_cv.wait_for(l, std::chrono::milliseconds(t->period_ms));
    if (t->stop) break;
    l.unlock();
    // Default flush: completed buffers only, full or not. CUPTI's own
    // periodic flush would return full buffers only.
    t->api.cuptiActivityFlushAll(0);
    t->flushes++;
    l.lock();
  }
}

}  // namespace

void SetCuptiLoaderForTesting(const CuptiLoader* loader) {
  g_loader.store(loader ? loader : &kRealCuptiLoader);
}

}  // namespace gs

using gs::T;
using gs::Tracer;

extern "C" gs_status gs_tracer_open(const char* path, uint32_t flush_period_ms, gs_error* err) {
  if (flush_period_ms < 1 || flush_period_ms > 60000) {
    return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0,
                        "gs_tracer_open: flush period %u ms outside 1..60000", flush_period_ms);
  }
  Tracer& t = T();
  std::lock_guard<std::mutex> l(t.mu);
  if (t.open) return gs::SetError(err, GS_ERR_BUSY, 0, "gs_tracer_open: the tracer is open already in this process");
  // A detach still pending holds our subscriber: withdraw it, as the new
  // open keeps CUPTI attached anyway (and the probe below needs none).
  if (t.detach.exchange(false) && t.api.cuptiUnsubscribe) t.api.cuptiUnsubscribe(t.detach_sub);
  if (!t.ring) {
    t.ring = new (std::nothrow) gs_kernel_record[gs::kRingCap];
    if (!t.ring) return gs::SetError(err, GS_ERR_NO_MEMORY, 0, "gs_tracer_open: no memory for the record ring");
  }
  const gs::CuptiLoader* loader = gs::g_loader.load();
  void* lib = loader->open(path && *path ? path : nullptr);
  if (!lib) {
    return gs::SetError(err, GS_ERR_NO_DRIVER, 0, "loading CUPTI%s%s: %s", path && *path ? " from " : "",
                        path && *path ? path : "", loader->last_error());
  }
  gs::Cupti api{};
#define GS_CUPTI_RESOLVE(name)                                                                  \
  api.name = reinterpret_cast<PFN_##name>(loader->symbol(lib, #name));                         \
  if (!api.name) {                                                                              \
    return gs::SetError(err, GS_ERR_NO_DRIVER, 0, "loading CUPTI: symbol %s is missing", #name); \
  }
  GS_CUPTI_REQUIRED(GS_CUPTI_RESOLVE)
#undef GS_CUPTI_RESOLVE
#define GS_CUPTI_OPTIONAL_RESOLVE(name) api.name = reinterpret_cast<PFN_##name>(loader->symbol(lib, #name));
  GS_CUPTI_OPTIONAL(GS_CUPTI_OPTIONAL_RESOLVE)
#undef GS_CUPTI_OPTIONAL_RESOLVE
  uint32_t version = 0;
  CUptiResult r = api.cuptiGetVersion(&version);
  if (r != CUPTI_SUCCESS) return gs::CuptiError(api, err, GS_ERR_DRIVER, r, "cuptiGetVersion");
  if (!gs::KnownLayout(version)) {
    return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0,
                        "CUPTI API version %u has a kernel record layout this build does not know "
                        "(known: 19-28, CUDA 12; 130000-139999, CUDA 13)",
                        version);
  }
  // Another subscriber (torch.profiler, Nsight) owns CUPTI's callbacks and
  // would lose them, or we ours, if both ran: step aside. The probe holds
  // the subscription for no longer than the check.
  if (api.cuptiSubscribe && api.cuptiUnsubscribe) {
    CUpti_SubscriberHandle sub = nullptr;
    CUptiResult sr = api.cuptiSubscribe(&sub, [](void*, int, uint32_t, const void*) {}, nullptr);
    if (sr == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      return gs::SetError(err, GS_ERR_BUSY, 0, "CUPTI is in use by another client in this process (a profiler)");
    }
    if (sr == CUPTI_SUCCESS) api.cuptiUnsubscribe(sub);
  }
  t.api = api;  // the callbacks read it; nothing is registered yet, or they are ours from an earlier open
  r = api.cuptiActivityRegisterCallbacks(&gs::BufferRequested, &gs::BufferCompleted);
  if (r != CUPTI_SUCCESS) return gs::CuptiError(api, err, GS_ERR_DRIVER, r, "cuptiActivityRegisterCallbacks");
  t.lib = lib;
  t.period_ms = flush_period_ms;
  // Counters are per open (gpuspans/tracer.h): a hub that opens the tracer
  // again must not count an earlier open's drops as its own.
  for (auto* c : {&t.records, &t.cupti_dropped, &t.ring_dropped, &t.names_overflow, &t.buffers,
                  &t.buffers_refused, &t.flushes}) {
    c->store(0);
  }
  for (auto& c : t.dropped_by_device) c.store(0);
  {
    std::lock_guard<std::mutex> fl(t.flush_mu);
    t.stop = false;
  }
  try {
    t.flusher = std::thread(gs::FlushLoop, &t);
  } catch (...) {
    return gs::SetError(err, GS_ERR_NO_MEMORY, 0, "gs_tracer_open: cannot start the flush thread");
  }
  t.open = true;
  return GS_OK;
}

extern "C" gs_status gs_tracer_enable(int32_t on, gs_error* err) {
  Tracer& t = T();
  std::lock_guard<std::mutex> l(t.mu);
  if (!t.open) return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_tracer_enable: the tracer is not open");
  if ((t.enabled.load() != 0) == (on != 0)) return GS_OK;
  CUptiResult r = on ? t.api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                     : t.api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    if (on) return gs::CuptiError(t.api, err, GS_ERR_DRIVER, r, "cuptiActivityEnable(CONCURRENT_KERNEL)");
    t.enabled = 0;  // a failed disable leaves nothing we could retry usefully
    return gs::CuptiError(t.api, err, GS_ERR_DRIVER, r, "cuptiActivityDisable(CONCURRENT_KERNEL)");
  }
  t.enabled = on ? 1 : 0;
  if (!on) {
    // Deliver the window's records now, before its graphs replay again: a
    // kernel replayed from a CUDA graph whose record is still pending when
    // the graph replays with collection off gets a stale start time (on an
    // H200, CUDA 13: 380 of 400 records read the time since the previous
    // replay; none once flushed here, bench/cupti/graph_toggle.cc). Records
    // of work still running stay pending, so the engine's per-step sync,
    // before the next step, is what makes them right.
    t.api.cuptiActivityFlushAll(0);
  }
  return GS_OK;
}

extern "C" size_t gs_tracer_read(gs_kernel_record* out, size_t cap) {
  if (!out || cap == 0) return 0;
  Tracer& t = T();
  std::lock_guard<std::mutex> l(t.ring_mu);
  size_t n = t.count < cap ? t.count : cap;
  for (size_t i = 0; i < n; i++) out[i] = t.ring[(t.head + i) % gs::kRingCap];
  t.head = (t.head + n) % gs::kRingCap;
  t.count -= n;
  return n;
}

extern "C" size_t gs_tracer_name(uint32_t id, char* buf, size_t cap) {
  Tracer& t = T();
  std::lock_guard<std::mutex> l(t.name_mu);
  if (cap > 0) buf[0] = 0;
  if (id == 0 || id > t.names.size()) return 0;
  const std::string& s = t.names[id - 1];
  if (cap > 0) {
    size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
    memcpy(buf, s.data(), n);
    buf[n] = 0;
  }
  return s.size();
}

extern "C" void gs_tracer_get_stats(gs_tracer_stats* out) {
  if (!out) return;
  Tracer& t = T();
  memset(out, 0, sizeof(*out));
  out->records = t.records;
  out->cupti_dropped = t.cupti_dropped;
  out->ring_dropped = t.ring_dropped;
  out->names_overflow = t.names_overflow;
  out->buffers = t.buffers;
  out->buffers_refused = t.buffers_refused;
  out->flushes = t.flushes;
  out->detaches = t.detaches;
  out->enabled = t.enabled;
  {
    std::lock_guard<std::mutex> l(t.name_mu);
    out->names = static_cast<uint32_t>(t.names.size());
  }
  for (int i = 0; i < GS_TRACER_MAX_DEVICES; i++) out->dropped_by_device[i] = t.dropped_by_device[i];
}

extern "C" int64_t gs_tracer_clock_offset_ns(void) {
  Tracer& t = T();
  std::lock_guard<std::mutex> l(t.mu);
  if (!t.open) return 0;
  int64_t best = INT64_MAX, offset = 0;
  for (int i = 0; i < 5; i++) {
    uint64_t c = 0;
    int64_t h1 = gs::HostNowNs();
    if (t.api.cuptiGetTimestamp(&c) != CUPTI_SUCCESS) return 0;
    int64_t h2 = gs::HostNowNs();
    if (h2 - h1 < best) {
      best = h2 - h1;
      offset = h1 + (h2 - h1) / 2 - static_cast<int64_t>(c);
    }
  }
  return offset;
}

extern "C" gs_status gs_tracer_close(gs_error* err) {
  Tracer& t = T();
  std::lock_guard<std::mutex> l(t.mu);
  if (!t.open) return GS_OK;
  gs_status st = GS_OK;
  if (t.enabled) {
    CUptiResult r = t.api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) st = gs::CuptiError(t.api, err, GS_ERR_DRIVER, r, "cuptiActivityDisable(CONCURRENT_KERNEL)");
    t.enabled = 0;
  }
  {
    std::lock_guard<std::mutex> fl(t.flush_mu);
    t.stop = true;
  }
  t.flush_cv.notify_all();
  if (t.flusher.joinable()) t.flusher.join();
  t.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    // Buffers CUPTI still holds (none, after the forced flush, unless another
    // client took the callbacks) are forgotten, so later opens stay bounded.
    std::lock_guard<std::mutex> bl(t.buf_mu);
    t.outstanding = 0;
  }
  t.open = false;
  return st;
}

extern "C" gs_status gs_tracer_detach(gs_error* err) {
  Tracer& t = T();
  std::lock_guard<std::mutex> l(t.mu);
  if (t.open) return gs::SetError(err, GS_ERR_BUSY, 0, "gs_tracer_detach: the tracer is open; close it first");
  if (!t.lib || t.detach) return GS_OK;  // never loaded, or a detach is pending already
  if (t.api.cuptiSubscribe && t.api.cuptiEnableDomain && t.api.cuptiFinalize) {
    // Our own subscriber, so that finalizing happens at a driver call's exit
    // on whichever thread calls the driver next. None when another client
    // subscribed meanwhile: CUPTI is theirs then, attached anyway.
    CUpti_SubscriberHandle sub = nullptr;
    if (t.api.cuptiSubscribe(&sub, &gs::DetachAtApiExit, nullptr) == CUPTI_SUCCESS) {
      t.detach_sub = sub;
      t.detach = true;
      if (t.api.cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS &&
          t.detach.exchange(false) && t.api.cuptiUnsubscribe) {
        t.api.cuptiUnsubscribe(sub);
      }
    }
  }
  return GS_OK;
}

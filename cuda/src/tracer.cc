// The kernel tracer: CUPTI's activity records of every kernel (and, in a
// kernel window, its copies, memsets and launch calls), parsed into a
// bounded ring on CUPTI's thread (and, attached, our flush thread), read in
// batches by the control plane; and a window's attach and detach.
// gpuspans/tracer.h has the contract. Beside it: the launch watch's counts
// (launch_watch.cc), the launch guard (launch_guard.cc), kernel names
// (kernel_name.cc), and the locks' order (lock_rank.h). One file over 600
// lines because CUPTI's callbacks, the ring they fill and the open and
// close they race share one state, Tracer.
#include "gpuspans/tracer.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cupti_loader.h"
#include "cupti_subset.h"
#include "driver.h"
#include "kernel_name.h"
#include "launch_guard.h"
#include "launch_watch.h"
#include "lock_rank.h"

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
  X(cuptiFinalize)           \
  X(cuptiSetThreadIdType)    \
  X(cuptiActivityEnableDriverApi) \
  X(cuptiActivityEnableRuntimeApi) \
  X(cuptiEnableCallback)

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
constexpr uint32_t kMaxNames = GS_TRACER_MAX_NAMES;

struct Name {
  std::string label, full;
};

// The tracer. One per process, never destroyed: CUPTI may call the buffer
// callbacks at any time after they are registered, also after a close.
struct Tracer {
  RankedMutex mu{kRankTracer};  // open, close, enable, and the fields up to the flusher's (lock_rank.h: the order)
  bool open = false;
  bool window = false;  // this open is a kernel window
  pid_t owner = 0;      // window: the thread that opened it (the last one, once closed)
  int64_t window_offset = 0;
  // Sticky: CUPTI stays attached to this process for good, so no window may
  // open (its finalize could break a CUDA graph replayed meanwhile with
  // collection off): an attached open happened, or a window could not
  // detach. attach_why says which.
  bool no_windows = false;
  std::string no_windows_why;
  Cupti api{};

  std::thread flusher;  // attached opens only
  RankedMutex flush_mu{kRankFlush};
  std::condition_variable_any flush_cv;
  bool stop = false;
  uint32_t period_ms = 0;  // gs_tracer_open's flush_period_ms

  RankedMutex buf_mu{kRankBuffers};
  std::vector<uint8_t*> free_buffers;
  size_t outstanding = 0;  // buffers handed to CUPTI and not yet returned

  RankedMutex ring_mu{kRankRing};
  gs_kernel_record* ring = nullptr;  // kRingCap entries, made at the first open
  size_t head = 0, count = 0;

  RankedMutex name_mu{kRankNames};
  std::unordered_map<const char*, uint32_t> by_ptr;
  std::unordered_map<std::string, uint32_t> by_label;
  std::vector<Name> names;  // id-1

  std::atomic<uint64_t> records{0}, cupti_dropped{0}, ring_dropped{0}, names_overflow{0};
  std::atomic<uint64_t> buffers{0}, buffers_refused{0}, flushes{0};
  std::atomic<uint32_t> enabled{0};
  std::atomic<uint64_t> windows{0}, detaches{0};  // for the process, never reset
  // The launch watch's CUPTI side (its counts are launch_watch.h's):
  // LaunchCallsOnly: the window's API records are the launch calls alone;
  // filtered: some per-cbid switch may be off (AllCalls undoes it).
  bool launch_calls_only = false;
  bool filtered = false;
  // The watch by callbacks (CallbackWatch): our subscriber while a window
  // collects, and the window's clock offset, which its callbacks read
  // instead of calling CUPTI on the launching threads.
  CUpti_SubscriberHandle sub = nullptr;
  std::atomic<int64_t> callback_offset{0};
  std::atomic<uint64_t> dropped_by_device[GS_TRACER_MAX_DEVICES]{};
};

Tracer& T() {
  static Tracer* t = new Tracer;  // leaked on purpose: see Tracer
  return *t;
}

pid_t ThisThread() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// ThreadAlive: whether thread tid of this process still runs. A window
// whose opener has exited has no launching thread left to race its close.
// A thread that was just joined can still be signalled for a moment (the
// kernel wakes its joiner before the task is gone), a zombie counting as
// gone; with wait, one that looks alive is asked again for up to 20 ms. Only
// a second thread's open waits: it turns windows off for good, where a
// close refused as from the wrong thread is tried again at a later step.
bool ThreadAlive(pid_t tid, bool wait) {
  for (int i = 0; i < (wait ? 40 : 1); i++) {
    if (syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH) return false;
    char path[64], stat[256] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
    FILE* f = fopen(path, "r");
    if (f == nullptr) return false;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    const char* state = strrchr(stat, ')');  // the name may hold spaces and parens
    if (n == 0 || state == nullptr || state[1] == 0) return false;
    if (state[2] == 'Z' || state[2] == 'X' || state[2] == 'x') return false;
    if (wait) usleep(500);
  }
  return true;
}

uint32_t Intern(Tracer& t, const char* name) {
  std::lock_guard<gs::RankedMutex> l(t.name_mu);
  auto p = t.by_ptr.find(name);
  if (p != t.by_ptr.end()) return p->second;
  std::string full = FullKernelName(name);
  std::string label = KernelLabel(full);
  uint32_t id = 0;
  auto n = t.by_label.find(label);
  if (n != t.by_label.end()) {
    id = n->second;
  } else if (t.names.size() < kMaxNames) {
    t.names.push_back(Name{label, std::move(full)});
    id = static_cast<uint32_t>(t.names.size());
    t.by_label.emplace(std::move(label), id);
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
  std::lock_guard<gs::RankedMutex> l(t.ring_mu);
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
  std::lock_guard<gs::RankedMutex> l(t.buf_mu);
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
    // Only versions where a refused buffer is safe get here (KnownLayout).
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
    gs_kernel_record& r = batch[n];
    if (rec->kind == CUPTI_ACTIVITY_KIND_DRIVER || rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      bool runtime = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      LaunchWatch::Launch launch = LaunchWatch::KindOf(runtime, a->cbid);
      Watch().Count(a->threadId, runtime, launch);
      if (launch == LaunchWatch::Launch::kOther) continue;
      r = gs_kernel_record{};
      r.start_ns = static_cast<int64_t>(a->start);
      r.end_ns = static_cast<int64_t>(a->end);
      r.graph = launch == LaunchWatch::Launch::kGraph ? GS_RECORD_LAUNCHED_GRAPH : 0;
      r.correlation = a->correlationId;
      r.kind = GS_RECORD_LAUNCH;
      // The window's thread as gettid, also where CUPTI kept pthread ids.
      r.thread = Watch().Own(a->threadId);
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY || rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* c = reinterpret_cast<const CUpti_CopyRecordPrefix*>(rec);
      r = gs_kernel_record{};
      r.start_ns = static_cast<int64_t>(c->start);
      r.end_ns = static_cast<int64_t>(c->end);
      r.device = c->deviceId;
      r.stream = c->streamId;
      r.graph = c->graphId;
      r.correlation = c->correlationId;
      r.context = c->contextId;
      r.kind = rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY ? GS_RECORD_MEMCPY : GS_RECORD_MEMSET;
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_KernelRecordPrefix*>(rec);
      r.start_ns = static_cast<int64_t>(k->start);
      r.end_ns = static_cast<int64_t>(k->end);
      r.device = k->deviceId;
      r.stream = k->streamId;
      r.name = Intern(t, k->name);
      if (r.name == 0) t.names_overflow++;
      r.graph = k->graphId;
      r.correlation = k->correlationId;
      r.context = k->contextId;
      r.kind = GS_RECORD_KERNEL;
      r.thread = 0;
    } else {
      continue;
    }
    if (++n == sizeof(batch) / sizeof(batch[0])) {
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
    std::lock_guard<gs::RankedMutex> l(t.buf_mu);
    if (t.outstanding > 0) t.outstanding--;
    t.free_buffers.push_back(buffer);
  }
}

gs_status CuptiError(const Cupti& api, gs_error* err, gs_status st, CUptiResult r, const char* op) {
  const char* s = nullptr;
  if (api.cuptiGetResultString && api.cuptiGetResultString(r, &s) != CUPTI_SUCCESS) s = nullptr;
  return SetError(err, st, 0, "%s: %s (CUPTI result %d)", op, s ? s : "CUPTI error", r);
}

// KnownLayout reports whether version's kernel records start with
// CUpti_KernelRecordPrefix and a refused activity buffer is safe: CUDA 12.9
// and later 12.x (API versions 27-28; kineto notes that refusing a buffer
// can crash CUPTI before 27) and 13.x (130000-139999, the new numbering).
bool KnownLayout(uint32_t version) {
  return (version >= 27 && version <= 28) || (version >= 130000 && version <= 139999);
}

// Load resolves CUPTI into *api and checks that it can be used now: a known
// version, and no other subscriber (torch.profiler, Nsight) whose
// callbacks we would take. Caller holds t.mu.
gs_status Load(const char* path, bool take_over, Cupti* api, gs_error* err) {
  const CuptiLoader* loader = g_loader.load();
  void* lib = loader->open(path && *path ? path : nullptr);
  if (!lib) {
    return SetError(err, GS_ERR_NO_DRIVER, 0, "loading CUPTI%s%s: %s", path && *path ? " from " : "",
                    path && *path ? path : "", loader->last_error());
  }
  *api = Cupti{};
#define GS_CUPTI_RESOLVE(name)                                                              \
  api->name = reinterpret_cast<PFN_##name>(loader->symbol(lib, #name));                     \
  if (!api->name) {                                                                         \
    return SetError(err, GS_ERR_NO_DRIVER, 0, "loading CUPTI: symbol %s is missing", #name); \
  }
  GS_CUPTI_REQUIRED(GS_CUPTI_RESOLVE)
#undef GS_CUPTI_RESOLVE
#define GS_CUPTI_OPTIONAL_RESOLVE(name) api->name = reinterpret_cast<PFN_##name>(loader->symbol(lib, #name));
  GS_CUPTI_OPTIONAL(GS_CUPTI_OPTIONAL_RESOLVE)
#undef GS_CUPTI_OPTIONAL_RESOLVE
  uint32_t version = 0;
  CUptiResult r = api->cuptiGetVersion(&version);
  if (r != CUPTI_SUCCESS) return CuptiError(*api, err, GS_ERR_DRIVER, r, "cuptiGetVersion");
  if (!KnownLayout(version)) {
    return SetError(err, GS_ERR_INVALID_ARGUMENT, 0,
                    "CUPTI API version %u is not one this build can use (known: 27-28, CUDA 12.9 and "
                    "later 12.x; 130000-139999, CUDA 13)",
                    version);
  }
  // The probe holds the subscription for no longer than the check.
  if (!take_over && api->cuptiSubscribe && api->cuptiUnsubscribe) {
    CUpti_SubscriberHandle sub = nullptr;
    CUptiResult sr = api->cuptiSubscribe(&sub, [](void*, int, uint32_t, const void*) {}, nullptr);
    if (sr == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
      return SetError(err, GS_ERR_BUSY, 0, "CUPTI is in use by another client in this process (a profiler)");
    }
    if (sr == CUPTI_SUCCESS) api->cuptiUnsubscribe(sub);
  }
  return GS_OK;
}

// Start readies the ring and the counters of a new open. Caller holds t.mu.
gs_status Start(Tracer& t, gs_error* err) {
  if (!t.ring) {
    t.ring = new (std::nothrow) gs_kernel_record[kRingCap];
    if (!t.ring) return SetError(err, GS_ERR_NO_MEMORY, 0, "gs_tracer_open: no memory for the record ring");
  }
  // Counters are per open (gpuspans/tracer.h): a hub that opens the tracer
  // again must not count an earlier open's drops as its own.
  for (auto* c : {&t.records, &t.cupti_dropped, &t.ring_dropped, &t.names_overflow, &t.buffers,
                  &t.buffers_refused, &t.flushes}) {
    c->store(0);
  }
  Watch().Reset();
  for (auto& c : t.dropped_by_device) c.store(0);
  return GS_OK;
}

// Register hands CUPTI our buffer callbacks: CUPTI's initialisation, some
// milliseconds. Caller holds t.mu.
gs_status Register(Tracer& t, const Cupti& api, gs_error* err) {
  t.api = api;  // the callbacks read it; nothing is registered yet, or they are ours from an earlier open
  CUptiResult r = api.cuptiActivityRegisterCallbacks(&BufferRequested, &BufferCompleted);
  if (r != CUPTI_SUCCESS) return CuptiError(api, err, GS_ERR_DRIVER, r, "cuptiActivityRegisterCallbacks");
  return GS_OK;
}

// Forget forgets buffers CUPTI still holds (none after a forced flush,
// unless another client took the callbacks), so later opens stay bounded.
void Forget(Tracer& t) {
  std::lock_guard<gs::RankedMutex> bl(t.buf_mu);
  t.outstanding = 0;
}

int64_t SampleOffset(const Cupti& api) {
  int64_t best = INT64_MAX, offset = 0;
  for (int i = 0; i < 5; i++) {
    uint64_t c = 0;
    int64_t h1 = HostNowNs();
    if (api.cuptiGetTimestamp(&c) != CUPTI_SUCCESS) return 0;
    int64_t h2 = HostNowNs();
    if (h2 - h1 < best) {
      best = h2 - h1;
      offset = h1 + (h2 - h1) / 2 - static_cast<int64_t>(c);
    }
  }
  return offset;
}

void FlushLoop(Tracer* t) {
  std::unique_lock<gs::RankedMutex> l(t->flush_mu);
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

// NoWindows makes CUPTI's attachment permanent for the process. Caller
// holds t.mu.
void NoWindows(Tracer& t, const char* why) {
  if (t.no_windows) return;
  t.no_windows = true;
  t.no_windows_why = why;
}

// The activity kinds of the launch watch: the API calls of the process
// while a window collects, each record naming the calling thread. Where
// CUPTI can (LaunchCallsOnly), only the launch calls.
constexpr CUpti_ActivityKind kWatchKinds[] = {CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_RUNTIME};

// What a window collects besides kernels: a copy or memset on the device is
// not idle. Optional: a CUPTI that refuses them leaves copies as idle.
constexpr CUpti_ActivityKind kCopyKinds[] = {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

// The launch calls the watch and the launch records need, by API.
constexpr uint32_t kDriverLaunches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,           CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};
constexpr uint32_t kRuntimeLaunches[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060};

// LaunchCallback is the watch's callback on the launch calls: at the call's
// exit, a GS_RECORD_LAUNCH record from the enter's and the exit's times,
// and the watch's count. It runs on the launching thread, so it calls no
// CUPTI function: the times are the host's clock less the window's offset.
void LaunchCallback(void*, int domain, uint32_t cbid, const void* data) {
  const auto* d = static_cast<const CUpti_CallbackDataPrefix*>(data);
  Tracer& t = T();
  int64_t now = HostNowNs() - t.callback_offset.load(std::memory_order_relaxed);
  if (d->callbackSite == CUPTI_API_ENTER) {
    if (d->correlationData) *d->correlationData = static_cast<uint64_t>(now);
    return;
  }
  bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  LaunchWatch::Launch launch = LaunchWatch::KindOf(runtime, cbid);
  if (launch == LaunchWatch::Launch::kOther) return;
  static thread_local uint32_t tid = static_cast<uint32_t>(ThisThread());
  gs_kernel_record r{};
  r.start_ns = d->correlationData && *d->correlationData != 0 ? static_cast<int64_t>(*d->correlationData) : now;
  r.end_ns = now;
  r.graph = launch == LaunchWatch::Launch::kGraph ? GS_RECORD_LAUNCHED_GRAPH : 0;
  r.correlation = d->correlationId;
  r.kind = GS_RECORD_LAUNCH;
  r.thread = tid;
  Push(t, &r, 1);
  Watch().Count(tid, runtime, launch);
}

// CallbacksWanted: the watch by callbacks, unless the activity records'
// is asked for ($GPUSPANS_LAUNCH_WATCH=records), to compare the two.
bool CallbacksWanted() {
  const char* v = getenv("GPUSPANS_LAUNCH_WATCH");
  return !(v && strcmp(v, "records") == 0);
}

// CallbackWatch watches a window's launches through a subscriber with
// callbacks on the launch calls alone, no API activity records: a call
// CUPTI has no callback enabled for costs it nothing more, where API
// activity records make CUPTI time every call of every thread. False, and
// nothing left subscribed, where CUPTI refuses (another client's
// subscriber, such as torch.profiler's after it stopped): then the
// activity records watch. Caller holds t.mu, on the window's thread.
bool CallbackWatch(Tracer& t, const Cupti& api) {
  if (!api.cuptiSubscribe || !api.cuptiUnsubscribe || !api.cuptiEnableCallback) return false;
  t.callback_offset = SampleOffset(api);
  CUpti_SubscriberHandle sub = nullptr;
  if (api.cuptiSubscribe(&sub, &LaunchCallback, nullptr) != CUPTI_SUCCESS) return false;
  bool ok = true;
  for (uint32_t c : kDriverLaunches) ok = ok && api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, c) == CUPTI_SUCCESS;
  for (uint32_t c : kRuntimeLaunches) ok = ok && api.cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, c) == CUPTI_SUCCESS;
  if (!ok) {
    api.cuptiUnsubscribe(sub);
    return false;
  }
  t.sub = sub;
  return true;
}

// EndCallbackWatch unsubscribes CallbackWatch's subscriber. Caller holds t.mu.
void EndCallbackWatch(Tracer& t, const Cupti& api) {
  if (!t.sub) return;
  api.cuptiUnsubscribe(t.sub);
  t.sub = nullptr;
}

// Callback ids run from 1 to a bound that grows with each CUDA release
// (CUDA 13.0: below 1,000 for either API): switching goes up to the first
// run of kCbidMisses refusals, and never past kMaxCbid.
constexpr uint32_t kMaxCbid = 4096;
constexpr int kCbidMisses = 16;

// SwitchApis sets every cbid of one API to on, up to CUPTI's bound, and
// returns the highest it accepted (0: none).
uint32_t SwitchApis(CUptiResult (*fn)(uint32_t, uint8_t), uint8_t on) {
  uint32_t last = 0;
  int misses = 0;
  for (uint32_t cbid = 1; cbid < kMaxCbid && misses < kCbidMisses; cbid++) {
    if (fn(cbid, on) == CUPTI_SUCCESS) {
      last = cbid;
      misses = 0;
    } else {
      misses++;
    }
  }
  return last;
}

// LaunchCallsOnly switches the API records of a window's watch off but for
// the launch calls: every other call of every thread would write a record
// while the window collects (an eager torch launch makes several runtime
// calls), which nearly doubled an eager window's step on an H100. False,
// with every call recorded as before, where CUPTI lacks the per-cbid
// switches (before CUDA 12.5) or refuses them. The switches may outlive
// cuptiFinalize, so AllCalls switches them back at the window's end: a
// profiler that attaches later records every call. Caller holds t.mu.
bool LaunchCallsOnly(Tracer& t, const Cupti& api) {
  if (!api.cuptiActivityEnableDriverApi || !api.cuptiActivityEnableRuntimeApi) return false;
  t.filtered = true;  // from here AllCalls undoes whatever was switched
  if (SwitchApis(api.cuptiActivityEnableDriverApi, 0) == 0 || SwitchApis(api.cuptiActivityEnableRuntimeApi, 0) == 0) {
    return false;
  }
  for (uint32_t c : kDriverLaunches) {
    if (api.cuptiActivityEnableDriverApi(c, 1) != CUPTI_SUCCESS) return false;
  }
  for (uint32_t c : kRuntimeLaunches) {
    if (api.cuptiActivityEnableRuntimeApi(c, 1) != CUPTI_SUCCESS) return false;
  }
  return true;
}

// AllCalls switches every API record back on after LaunchCallsOnly.
// Caller holds t.mu.
void AllCalls(Tracer& t, const Cupti& api) {
  if (!t.filtered) return;
  t.filtered = false;
  SwitchApis(api.cuptiActivityEnableDriverApi, 1);
  SwitchApis(api.cuptiActivityEnableRuntimeApi, 1);
}

// StopCollecting turns a window's collection and launch watch off and has
// every record delivered. Caller holds t.mu.
gs_status StopCollecting(Tracer& t, gs_error* err) {
  gs_status st = GS_OK;
  CUptiResult r = t.api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) st = CuptiError(t.api, err, GS_ERR_DRIVER, r, "cuptiActivityDisable(CONCURRENT_KERNEL)");
  EndCallbackWatch(t, t.api);
  for (CUpti_ActivityKind k : kWatchKinds) t.api.cuptiActivityDisable(k);
  for (CUpti_ActivityKind k : kCopyKinds) t.api.cuptiActivityDisable(k);
  t.enabled = 0;
  t.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  AllCalls(t, t.api);
  Watch().End();
  Forget(t);
  return st;
}

// CloseWindow ends a window on the calling thread: collection off, every
// record delivered, CUPTI detached. The caller is the window's launching
// thread, and it is here; guarded launches of other threads are held off
// (Quiesce). Another thread that replayed a CUDA graph outside the guard
// during the window (the launch watch saw it) may replay one during the
// detach, which lost the process's CUDA context on an H200 (error 719 on
// every thread, for good): then CUPTI stays attached, as attached tracing
// leaves it, and windows stay off. Caller holds t.mu.
gs_status CloseWindow(Tracer& t, gs_error* err) {
  if (!Quiesce()) {
    return GuardHeld(err, "gs_tracer_close", "collects on and closes");
  }
  struct Release {
    ~Release() { Unquiesce(); }
  } release;
  gs_status st = StopCollecting(t, err);
  Watch().Settle();
  t.window_offset = SampleOffset(t.api);
  t.open = false;
  t.window = false;
  if (uint64_t n = Watch().ForeignGraphLaunches()) {
    char why[240];
    snprintf(why, sizeof why,
             "thread %u replayed %llu CUDA graphs in thread %d's kernel window: a detach beside another thread's "
             "replays loses the CUDA context, so CUPTI stays attached and windows are off (several launching "
             "threads: use attached)",
             Watch().ForeignThread(), static_cast<unsigned long long>(n), static_cast<int>(t.owner));
    NoWindows(t, why);
    return SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_tracer_close: %s", why);
  }
  CUptiResult r = t.api.cuptiFinalize();
  if (r == CUPTI_SUCCESS) {
    t.detaches++;
  } else {
    NoWindows(t, "a kernel window's cuptiFinalize failed, so CUPTI stays attached and a detach could break a CUDA graph");
    if (st == GS_OK) st = CuptiError(t.api, err, GS_ERR_DRIVER, r, "cuptiFinalize");
  }
  return st;
}

}  // namespace

void SetCuptiLoaderForTesting(const CuptiLoader* loader) {
  g_loader.store(loader ? loader : &kRealCuptiLoader);
}

void ResetTracerForTesting() {
  Tracer& t = T();
  std::lock_guard<gs::RankedMutex> l(t.mu);
  t.no_windows = false;
  t.no_windows_why.clear();
  t.owner = 0;
  t.window_offset = 0;
  t.windows = 0;
  t.detaches = 0;
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
  std::lock_guard<gs::RankedMutex> l(t.mu);
  if (t.open) return gs::SetError(err, GS_ERR_BUSY, 0, "gs_tracer_open: the tracer is open already in this process");
  gs::Cupti api;
  gs_status st = gs::Load(path, false, &api, err);
  if (st == GS_OK) st = gs::Start(t, err);
  if (st == GS_OK) st = gs::Register(t, api, err);
  if (st != GS_OK) return st;
  // From here CUPTI stays attached to the process, and graphs replay while
  // collection is off: a later cuptiFinalize could break them.
  gs::NoWindows(t, "the tracer was opened attached (gs_tracer_open) in this process, so CUPTI stays attached and a detach could break a CUDA graph");
  t.period_ms = flush_period_ms;
  t.window_offset = 0;
  {
    std::lock_guard<gs::RankedMutex> fl(t.flush_mu);
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

extern "C" gs_status gs_tracer_window_open(const char* path, uint32_t flags, gs_error* err) {
  Tracer& t = T();
  std::lock_guard<gs::RankedMutex> l(t.mu);
  if (t.no_windows) {
    return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_tracer_window_open: %s, so kernel windows stay off in this process",
                        t.no_windows_why.c_str());
  }
  // A window from a second thread while the first lives (its window open
  // or not): two threads step (two hubs, or one stepped from two threads),
  // so each launches while the other attaches or detaches, which broke
  // processes on the H200.
  pid_t me = gs::ThisThread();
  if (t.open && !t.window) {
    return gs::SetError(err, GS_ERR_BUSY, 0, "gs_tracer_window_open: the tracer is open already in this process");
  }
  if (t.owner != 0 && t.owner != me && gs::ThreadAlive(t.owner, true)) {
    char why[160];
    snprintf(why, sizeof why,
             "kernel windows were opened on two threads (%d, then %d): they need one launching thread in the "
             "process (with more, use attached)",
             static_cast<int>(t.owner), static_cast<int>(me));
    gs::NoWindows(t, why);
    return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_tracer_window_open: %s", why);
  }
  if (t.open) {
    return gs::SetError(err, GS_ERR_BUSY, 0, "gs_tracer_window_open: a window is open already on this thread");
  }
  if (flags & ~static_cast<uint32_t>(GS_TRACER_TAKE_OVER)) {
    return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_tracer_window_open: unknown flags %#x", flags);
  }
  gs::Cupti api;
  gs_status st = gs::Load(path, (flags & GS_TRACER_TAKE_OVER) != 0, &api, err);
  if (st != GS_OK) return st;
  if (!api.cuptiFinalize) {
    return gs::SetError(err, GS_ERR_NO_DRIVER, 0, "loading CUPTI: symbol cuptiFinalize is missing (kernel windows detach with it)");
  }
  // CUPTI is attached with collection off for an instant here: no guarded
  // launch may run meanwhile (a replay then breaks a later detach).
  if (!gs::Quiesce()) {
    return gs::GuardHeld(err, "gs_tracer_window_open", "opens");
  }
  struct Release {
    ~Release() { gs::Unquiesce(); }
  } release;
  if ((st = gs::Start(t, err)) == GS_OK && (st = gs::Register(t, api, err)) == GS_OK) {
    // The watch names threads by gettid where CUPTI lets us choose.
    if (api.cuptiSetThreadIdType) api.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    gs::Watch().Begin(static_cast<uint32_t>(me), static_cast<uint32_t>(reinterpret_cast<uintptr_t>(pthread_self())));
    CUptiResult r = api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) st = gs::CuptiError(api, err, GS_ERR_DRIVER, r, "cuptiActivityEnable(CONCURRENT_KERNEL)");
    bool callbacks = st == GS_OK && gs::CallbacksWanted() && gs::CallbackWatch(t, api);
    for (CUpti_ActivityKind k : gs::kWatchKinds) {
      if (st != GS_OK || callbacks) break;
      // No watch, no safe detach beside another thread's graphs: no window.
      if ((r = api.cuptiActivityEnable(k)) != CUPTI_SUCCESS) {
        st = gs::CuptiError(api, err, GS_ERR_DRIVER, r,
                            k == CUPTI_ACTIVITY_KIND_DRIVER ? "cuptiActivityEnable(DRIVER)" : "cuptiActivityEnable(RUNTIME)");
      }
    }
    if (st == GS_OK && !callbacks) {
      // A refusal leaves every call recorded: costlier, as right.
      t.launch_calls_only = gs::LaunchCallsOnly(t, api);
    }
    if (st == GS_OK) {
      for (CUpti_ActivityKind k : gs::kCopyKinds) api.cuptiActivityEnable(k);
    }
  }
  if (st != GS_OK) {
    // CUPTI may be initialised by now, and collecting since an instant: a
    // finalize gives the process back as it was.
    gs::Watch().End();
    gs::EndCallbackWatch(t, api);
    for (CUpti_ActivityKind k : gs::kWatchKinds) api.cuptiActivityDisable(k);
    for (CUpti_ActivityKind k : gs::kCopyKinds) api.cuptiActivityDisable(k);
    api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    gs::AllCalls(t, api);
    if (api.cuptiFinalize() == CUPTI_SUCCESS) {
      t.detaches++;
    } else {
      gs::NoWindows(t, "a kernel window's cuptiFinalize failed, so CUPTI stays attached and a detach could break a CUDA graph");
    }
    return st;
  }
  t.enabled = 1;
  t.window_offset = gs::SampleOffset(api);
  t.owner = me;
  t.window = true;
  t.open = true;
  t.windows++;
  return GS_OK;
}

extern "C" gs_status gs_tracer_enable(int32_t on, gs_error* err) {
  Tracer& t = T();
  std::lock_guard<gs::RankedMutex> l(t.mu);
  if (!t.open) return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_tracer_enable: the tracer is not open");
  if ((t.enabled.load() != 0) == (on != 0)) return GS_OK;
  if (t.window) {
    return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0,
                        "gs_tracer_enable: a kernel window collects until gs_tracer_close (a graph replayed "
                        "with collection off would break at the detach)");
  }
  CUptiResult r = on ? t.api.cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                     : t.api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    if (on) return gs::CuptiError(t.api, err, GS_ERR_DRIVER, r, "cuptiActivityEnable(CONCURRENT_KERNEL)");
    t.enabled = 0;  // a failed disable leaves nothing we could retry usefully
    return gs::CuptiError(t.api, err, GS_ERR_DRIVER, r, "cuptiActivityDisable(CONCURRENT_KERNEL)");
  }
  t.enabled = on ? 1 : 0;
  if (!on) {
    // Deliver the armed steps' records now, before their graphs replay
    // again: a kernel replayed from a CUDA graph whose record is still
    // pending when the graph replays with collection off gets a stale start
    // time (on an H200, CUDA 13: 380 of 400 records read the time since the
    // previous replay; none once flushed here, bench/cupti/graph_toggle.cc).
    // Records of work still running stay pending, so the engine's per-step
    // sync, before the next step, is what makes them right.
    t.api.cuptiActivityFlushAll(0);
  }
  return GS_OK;
}

extern "C" size_t gs_tracer_read(gs_kernel_record* out, size_t cap) {
  if (!out || cap == 0) return 0;
  Tracer& t = T();
  std::lock_guard<gs::RankedMutex> l(t.ring_mu);
  size_t n = t.count < cap ? t.count : cap;
  for (size_t i = 0; i < n; i++) out[i] = t.ring[(t.head + i) % gs::kRingCap];
  t.head = (t.head + n) % gs::kRingCap;
  t.count -= n;
  return n;
}

namespace {
size_t CopyName(uint32_t id, bool full, char* buf, size_t cap) {
  Tracer& t = T();
  std::lock_guard<gs::RankedMutex> l(t.name_mu);
  if (buf && cap > 0) buf[0] = 0;
  if (id == 0 || id > t.names.size()) return 0;
  const std::string& s = full ? t.names[id - 1].full : t.names[id - 1].label;
  if (buf && cap > 0) {
    size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
    memcpy(buf, s.data(), n);
    buf[n] = 0;
  }
  return s.size();
}
}  // namespace

extern "C" size_t gs_tracer_name(uint32_t id, char* buf, size_t cap) { return CopyName(id, false, buf, cap); }

extern "C" size_t gs_tracer_full_name(uint32_t id, char* buf, size_t cap) { return CopyName(id, true, buf, cap); }

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
  out->windows = t.windows;
  out->enabled = t.enabled;
  out->foreign_launches = gs::Watch().ForeignLaunches();
  out->foreign_graph_launches = gs::Watch().ForeignGraphLaunches();
  gs::GuardState g = gs::GuardNow();
  out->guarded_launches = g.launches;
  out->guard_waits = g.waits;
  out->guard_inflight = g.inflight;
  out->guard_unmatched_exits = g.unmatched_exits;
  out->guard_unmatched_thread = g.unmatched_thread;
  out->guard_backoffs = g.backoffs;
  out->guard_holder = g.holder;
  out->guard_held_ns = g.held_ns;
  {
    std::lock_guard<gs::RankedMutex> l(t.name_mu);
    out->names = static_cast<uint32_t>(t.names.size());
  }
  for (int i = 0; i < GS_TRACER_MAX_DEVICES; i++) out->dropped_by_device[i] = t.dropped_by_device[i];
}

extern "C" int64_t gs_tracer_clock_offset_ns(void) {
  Tracer& t = T();
  std::lock_guard<gs::RankedMutex> l(t.mu);
  // A window's offset was sampled on its own thread: no CUPTI call here.
  if (t.window || (!t.open && t.window_offset != 0)) return t.window_offset;
  if (!t.open) return 0;
  return gs::SampleOffset(t.api);
}

extern "C" gs_status gs_tracer_close(gs_error* err) {
  Tracer& t = T();
  std::lock_guard<gs::RankedMutex> l(t.mu);
  if (!t.open) return GS_OK;
  if (t.window) {
    pid_t me = gs::ThisThread();
    if (me != t.owner && gs::ThreadAlive(t.owner, false)) {
      return gs::SetError(err, GS_ERR_WRONG_THREAD, 0,
                          "gs_tracer_close: the kernel window was opened on thread %d and this is thread %d: "
                          "CUPTI detaches only on the launching thread",
                          static_cast<int>(t.owner), static_cast<int>(me));
    }
    return gs::CloseWindow(t, err);
  }
  gs_status st = GS_OK;
  if (t.enabled) {
    CUptiResult r = t.api.cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS) st = gs::CuptiError(t.api, err, GS_ERR_DRIVER, r, "cuptiActivityDisable(CONCURRENT_KERNEL)");
    t.enabled = 0;
  }
  {
    std::lock_guard<gs::RankedMutex> fl(t.flush_mu);
    t.stop = true;
  }
  t.flush_cv.notify_all();
  if (t.flusher.joinable()) t.flusher.join();
  t.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  gs::Forget(t);
  t.open = false;
  return st;
}

extern "C" gs_status gs_tracer_abandon(gs_error* err) {
  Tracer& t = T();
  std::lock_guard<gs::RankedMutex> l(t.mu);
  if (!t.open || !t.window) return GS_OK;
  gs::NoWindows(t, "a kernel window was abandoned (its thread never stepped again), so CUPTI stays attached and a detach could break a CUDA graph");
  gs_status st = gs::StopCollecting(t, err);
  t.open = false;
  t.window = false;
  return st;
}


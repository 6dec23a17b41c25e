// A fake CUPTI for CPU tests: the activity API subset the tracer calls,
// delivering synthesised kernel records through the tracer's own buffer
// callbacks. gpuspans/tracer_testing.h has the hooks. One file over 600
// lines: it is one fake library, whose state every hook and every CUPTI
// entry point shares, and it fails the way the GPU machine's CUPTI failed.
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "cupti_subset.h"
#include "cupti_loader.h"
#include "launch_guard.h"
#include "lock_rank.h"
#include "driver.h"
#include "gpuspans/tracer.h"
#include "gpuspans/tracer_testing.h"

namespace gs {
namespace {

// Real records are larger than the prefix we read; so are the fake's.
constexpr size_t kStride = 200;
// The fake's callback ids run 1..kCbids-1 per API, as CUPTI's run up to
// its CBID_SIZE; a switch past them is refused.
constexpr uint32_t kCbids = 1000;
constexpr CUptiResult kInvalidParameter = 1;  // CUPTI_ERROR_INVALID_PARAMETER

// One queued activity record, of any kind, as CUPTI would lay it out.
struct Rec {
  uint8_t b[kStride];
  uint32_t device() const {
    CUpti_KernelRecordPrefix k;
    memcpy(&k, b, sizeof k);
    return k.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? k.deviceId : 0;
  }
};
template <typename T>
Rec RecOf(const T& r) {
  static_assert(sizeof(T) <= kStride, "record larger than the fake's stride");
  Rec out;
  memset(out.b, 0, kStride);
  memcpy(out.b, &r, sizeof r);
  return out;
}

struct FakeCupti {
  std::mutex mu;
  uint32_t version = 130001;
  bool fail_open = false;
  bool other = false;
  CUptiResult enable_result = CUPTI_SUCCESS;
  bool enabled = false;   // CONCURRENT_KERNEL
  bool api_on[2] = {};    // DRIVER, RUNTIME
  bool copy_on[2] = {};   // MEMCPY, MEMSET
  // Per-cbid switches of API records (DRIVER, RUNTIME), cbids 1..kCbids-1:
  // kept across cuptiFinalize, as nothing says CUPTI resets them.
  bool api_off[2][kCbids] = {};
  bool no_api_switches = false;  // the per-cbid symbols are missing
  int64_t api_records = 0;       // API records queued
  int64_t callbacks = 0;         // API calls that reached the subscriber's callbacks
  int thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  int64_t enables = 0, disables = 0;
  int64_t clock_offset = 0;  // Unix ns minus the fake's timestamp
  CUpti_BuffersCallbackRequestFunc req = nullptr;
  CUpti_BuffersCallbackCompleteFunc done = nullptr;
  std::vector<Rec> queued;
  std::deque<std::string> names;  // the records' name pointers stay valid
  uint32_t drop_device = 0;
  uint64_t drop = 0;     // reported at the next completion
  uint64_t pending = 0;  // records CUPTI had no buffer for
  uint32_t correlation = 0;
  CUpti_CallbackFunc subscriber = nullptr;  // the one subscriber, if any
  bool domain_on = false;
  bool callback_on[2][kCbids] = {};  // the subscriber's callbacks: driver, runtime domain by cbid
  bool no_callbacks = false;         // cuptiEnableCallback is missing
  int64_t finalizes = 0;
  // The rules of kernel windows (gpuspans/tracer.h), as the fake can see
  // them: CUPTI attached from RegisterCallbacks to Finalize; a graph
  // replayed while attached with collection off, or by another thread than
  // the one that attached, breaks the next finalize.
  bool attached = false;
  int64_t attach_tid = 0;
  bool replayed_off = false;
  bool replayed_foreign = false;
  int64_t inflight = 0;  // replays under way: a disable or finalize now overlaps one
  int64_t bad_finalizes = 0;
  int64_t expect_tid = 0;  // 0: any thread
  int64_t stray_calls = 0;  // CUPTI calls of ours from another thread than expect_tid
};

FakeCupti& F() {
  static FakeCupti* f = new FakeCupti;
  return *f;
}

// Stray counts a CUPTI call made off the expected thread. Caller holds f.mu.
void Stray(FakeCupti& f) {
  if (f.expect_tid != 0 && f.expect_tid != static_cast<int64_t>(syscall(SYS_gettid))) f.stray_calls++;
}

int64_t Deliver(int32_t per_buffer);

CUcontext ContextOf(uint32_t device) { return reinterpret_cast<CUcontext>(static_cast<uintptr_t>(device) + 1); }

CUptiResult GetVersion(uint32_t* v) {
  *v = F().version;
  return CUPTI_SUCCESS;
}
CUptiResult GetResultString(CUptiResult, const char** s) {
  *s = "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}
CUptiResult GetTimestamp(uint64_t* ts) {
  std::lock_guard<std::mutex> l(F().mu);
  Stray(F());
  *ts = static_cast<uint64_t>(HostNowNs() - F().clock_offset);
  return CUPTI_SUCCESS;
}
// ApiSlot is kind's place in api_on; -1 for a kind not an API one.
int ApiSlot(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_DRIVER ? 0 : kind == CUPTI_ACTIVITY_KIND_RUNTIME ? 1 : -1;
}
// CopySlot is kind's place in copy_on; -1 for another kind.
int CopySlot(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_MEMCPY ? 0 : kind == CUPTI_ACTIVITY_KIND_MEMSET ? 1 : -1;
}
CUptiResult SwitchApi(int slot, uint32_t cbid, uint8_t on) {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  Stray(f);
  if (cbid == 0 || cbid >= kCbids) return kInvalidParameter;
  f.api_off[slot][cbid] = on == 0;
  return CUPTI_SUCCESS;
}
CUptiResult EnableDriverApi(uint32_t cbid, uint8_t on) { return SwitchApi(0, cbid, on); }
CUptiResult EnableRuntimeApi(uint32_t cbid, uint8_t on) { return SwitchApi(1, cbid, on); }
// enables and disables count CONCURRENT_KERNEL's switches alone.
CUptiResult Enable(CUpti_ActivityKind kind) {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  Stray(f);
  int i = ApiSlot(kind);
  if (i >= 0) {
    f.api_on[i] = true;
    return CUPTI_SUCCESS;
  }
  if ((i = CopySlot(kind)) >= 0) {
    f.copy_on[i] = true;
    return CUPTI_SUCCESS;
  }
  if (kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) return 1;
  f.enables++;
  if (f.enable_result != CUPTI_SUCCESS) return f.enable_result;
  f.enabled = true;
  return CUPTI_SUCCESS;
}
CUptiResult Disable(CUpti_ActivityKind kind) {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  Stray(f);
  int i = ApiSlot(kind);
  if (i >= 0) {
    f.api_on[i] = false;
    return CUPTI_SUCCESS;
  }
  if ((i = CopySlot(kind)) >= 0) {
    f.copy_on[i] = false;
    return CUPTI_SUCCESS;
  }
  f.disables++;
  f.enabled = false;
  if (f.attached && f.inflight > 0) f.replayed_off = true;
  return CUPTI_SUCCESS;
}
CUptiResult SetThreadIdType(int type) {
  std::lock_guard<std::mutex> l(F().mu);
  F().thread_id_type = type;
  return CUPTI_SUCCESS;
}
CUptiResult RegisterCallbacks(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done) {
  std::lock_guard<std::mutex> l(F().mu);
  Stray(F());
  F().req = req;
  F().done = done;
  if (!F().attached) F().attach_tid = static_cast<int64_t>(syscall(SYS_gettid));
  F().attached = true;
  return CUPTI_SUCCESS;
}
// A forced flush delivers what is queued, as CUPTI's returns every buffer;
// the periodic one leaves delivery to the test.
CUptiResult FlushAll(uint32_t flags) {
  {
    std::lock_guard<std::mutex> l(F().mu);
    Stray(F());
  }
  if (flags & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) Deliver(1000);
  return CUPTI_SUCCESS;
}
CUptiResult GetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** rec) {
  uint8_t* next = *rec ? reinterpret_cast<uint8_t*>(*rec) + kStride : buffer;
  if (next + kStride > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}
CUptiResult GetNumDropped(CUcontext ctx, uint32_t, size_t* dropped) {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  *dropped = 0;
  if (ctx == ContextOf(f.drop_device) && f.drop) {
    *dropped = f.drop;
    f.drop = 0;
  }
  return CUPTI_SUCCESS;
}
CUptiResult GetDeviceId(CUcontext ctx, uint32_t* device) {
  *device = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(ctx) - 1);
  return CUPTI_SUCCESS;
}
int g_fake_cupti_subscriber;
CUptiResult Subscribe(CUpti_SubscriberHandle* sub, CUpti_CallbackFunc cb, void*) {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  Stray(f);
  if (f.other || f.subscriber) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  f.subscriber = cb;
  *sub = reinterpret_cast<CUpti_SubscriberHandle>(&g_fake_cupti_subscriber);
  return CUPTI_SUCCESS;
}
CUptiResult Unsubscribe(CUpti_SubscriberHandle) {
  std::lock_guard<std::mutex> l(F().mu);
  Stray(F());
  F().subscriber = nullptr;
  F().domain_on = false;
  memset(F().callback_on, 0, sizeof F().callback_on);
  return CUPTI_SUCCESS;
}
CUptiResult EnableCallback(uint32_t enable, CUpti_SubscriberHandle, int domain, uint32_t cbid) {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  Stray(f);
  if (!f.subscriber || (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) || cbid == 0 ||
      cbid >= kCbids) {
    return kInvalidParameter;
  }
  f.callback_on[domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 1 : 0][cbid] = enable != 0;
  return CUPTI_SUCCESS;
}
CUptiResult EnableDomain(uint32_t enable, CUpti_SubscriberHandle, int) {
  std::lock_guard<std::mutex> l(F().mu);
  F().domain_on = enable != 0;
  return CUPTI_SUCCESS;
}
CUptiResult Finalize() {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  Stray(f);
  f.finalizes++;
  if (f.replayed_off || f.replayed_foreign || f.inflight > 0) f.bad_finalizes++;
  f.replayed_off = f.replayed_foreign = false;
  f.attached = false;
  f.api_on[0] = f.api_on[1] = false;
  f.copy_on[0] = f.copy_on[1] = false;
  f.thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
  f.other = false;  // a finalize clears every subscriber, another client's too
  f.enabled = false;
  f.subscriber = nullptr;
  f.domain_on = false;
  memset(f.callback_on, 0, sizeof f.callback_on);
  f.req = nullptr;
  f.done = nullptr;
  return CUPTI_SUCCESS;
}

int64_t Deliver(int32_t per_buffer) {
  FakeCupti& f = F();
  std::vector<Rec> recs;
  CUpti_BuffersCallbackRequestFunc req;
  CUpti_BuffersCallbackCompleteFunc done;
  uint32_t drop_device;
  {
    std::lock_guard<std::mutex> l(f.mu);
    recs.swap(f.queued);
    req = f.req;
    done = f.done;
    drop_device = f.drop_device;
  }
  if (!req || !done) return 0;
  if (per_buffer < 1) per_buffer = 1;
  int64_t written = 0;
  size_t i = 0;
  do {
    uint8_t* buf = nullptr;
    size_t size = 0, max_records = 0;
    req(&buf, &size, &max_records);
    size_t n = recs.size() - i;
    if (n > static_cast<size_t>(per_buffer)) n = per_buffer;
    if (!buf) {
      // No buffer: CUPTI drops these records and says so at the next completion.
      std::lock_guard<std::mutex> l(f.mu);
      f.drop_device = recs.empty() ? drop_device : recs[i].device();
      f.drop += n;
      i += n;
      continue;
    }
    if (n > size / kStride) n = size / kStride;
    memset(buf, 0, n * kStride);
    for (size_t k = 0; k < n; k++) memcpy(buf + k * kStride, recs[i + k].b, kStride);
    i += n;
    written += n;
    done(ContextOf(drop_device), 0, buf, size, n * kStride);
  } while (i < recs.size());
  return written;
}

int g_fake_cupti_library;
void* FakeCuptiOpen(const char*) { return F().fail_open ? nullptr : &g_fake_cupti_library; }
void* FakeCuptiSymbol(void*, const char* name) {
  if (F().no_api_switches &&
      (strcmp(name, "cuptiActivityEnableDriverApi") == 0 || strcmp(name, "cuptiActivityEnableRuntimeApi") == 0)) {
    return nullptr;
  }
  if (F().no_callbacks && strcmp(name, "cuptiEnableCallback") == 0) return nullptr;
  struct Entry {
    const char* name;
    void* fn;
  };
  static const Entry kTable[] = {
      {"cuptiGetVersion", reinterpret_cast<void*>(&GetVersion)},
      {"cuptiGetResultString", reinterpret_cast<void*>(&GetResultString)},
      {"cuptiGetTimestamp", reinterpret_cast<void*>(&GetTimestamp)},
      {"cuptiActivityEnable", reinterpret_cast<void*>(&Enable)},
      {"cuptiActivityDisable", reinterpret_cast<void*>(&Disable)},
      {"cuptiActivityRegisterCallbacks", reinterpret_cast<void*>(&RegisterCallbacks)},
      {"cuptiActivityFlushAll", reinterpret_cast<void*>(&FlushAll)},
      {"cuptiActivityGetNextRecord", reinterpret_cast<void*>(&GetNextRecord)},
      {"cuptiActivityGetNumDroppedRecords", reinterpret_cast<void*>(&GetNumDropped)},
      {"cuptiGetDeviceId", reinterpret_cast<void*>(&GetDeviceId)},
      {"cuptiSubscribe", reinterpret_cast<void*>(&Subscribe)},
      {"cuptiUnsubscribe", reinterpret_cast<void*>(&Unsubscribe)},
      {"cuptiEnableDomain", reinterpret_cast<void*>(&EnableDomain)},
      {"cuptiFinalize", reinterpret_cast<void*>(&Finalize)},
      {"cuptiSetThreadIdType", reinterpret_cast<void*>(&SetThreadIdType)},
      {"cuptiActivityEnableDriverApi", reinterpret_cast<void*>(&EnableDriverApi)},
      {"cuptiActivityEnableRuntimeApi", reinterpret_cast<void*>(&EnableRuntimeApi)},
      {"cuptiEnableCallback", reinterpret_cast<void*>(&EnableCallback)},
  };
  for (const Entry& e : kTable) {
    if (strcmp(e.name, name) == 0) return e.fn;
  }
  return nullptr;
}
const char* FakeCuptiError() { return "fake CUPTI: load refused (gs_testing_cupti_fail_open)"; }
const CuptiLoader kFakeCuptiLoader = {&FakeCuptiOpen, &FakeCuptiSymbol, &FakeCuptiError};

}  // namespace
}  // namespace gs

using gs::F;
using gs::FakeCupti;

extern "C" void gs_testing_use_fake_cupti(void) {
  FakeCupti& f = F();
  {
    std::lock_guard<std::mutex> l(f.mu);
    f.version = 130001;
    f.fail_open = f.other = false;
    f.enable_result = CUPTI_SUCCESS;
    f.enabled = false;
    f.api_on[0] = f.api_on[1] = false;
    f.copy_on[0] = f.copy_on[1] = false;
    memset(f.api_off, 0, sizeof f.api_off);
    f.no_api_switches = false;
    f.api_records = 0;
    f.callbacks = 0;
    f.thread_id_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
    f.enables = f.disables = 0;
    f.clock_offset = 0;
    f.queued.clear();
    f.drop = f.pending = 0;
    f.subscriber = nullptr;
    f.domain_on = false;
    memset(f.callback_on, 0, sizeof f.callback_on);
    f.no_callbacks = false;
    f.finalizes = 0;
    f.attached = f.replayed_off = f.replayed_foreign = false;
    f.attach_tid = 0;
    f.inflight = 0;
    f.bad_finalizes = 0;
    f.expect_tid = 0;
    f.stray_calls = 0;
  }
  gs::SetCuptiLoaderForTesting(&gs::kFakeCuptiLoader);
  gs::ResetTracerForTesting();
}

extern "C" void gs_testing_use_real_cupti(void) { gs::SetCuptiLoaderForTesting(nullptr); }
extern "C" void gs_testing_cupti_version(uint32_t version) { F().version = version; }
extern "C" void gs_testing_cupti_fail_open(int32_t fail) { F().fail_open = fail != 0; }
extern "C" void gs_testing_cupti_other_subscriber(int32_t other) { F().other = other != 0; }
extern "C" void gs_testing_cupti_fail_enable(int32_t result) { F().enable_result = result; }

namespace gs {
namespace {
// Place sets what a kernel's and a copy's record share: where and when it
// ran, a new correlation id, and its graph (a node of it, made up).
template <typename Record>
void Place(FakeCupti& f, Record& r, uint32_t device, uint32_t stream, int64_t start_ns, int64_t end_ns, uint32_t graph) {
  r.start = static_cast<uint64_t>(start_ns);
  r.end = static_cast<uint64_t>(end_ns);
  r.deviceId = device;
  r.contextId = device + 1;
  r.streamId = stream;
  r.correlationId = ++f.correlation;
  r.graphId = graph;
  r.graphNodeId = graph ? f.correlation : 0;
}
}  // namespace
}  // namespace gs

extern "C" int32_t gs_testing_cupti_kernel(uint32_t device, uint32_t stream, int64_t start_ns, int64_t end_ns,
                                           const char* name, uint32_t graph) {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  if (!f.enabled) return 0;
  CUpti_KernelRecordPrefix r;
  memset(&r, 0, sizeof(r));
  r.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  gs::Place(f, r, device, stream, start_ns, end_ns, graph);
  f.names.emplace_back(name ? name : "");
  r.name = f.names.back().c_str();
  f.queued.push_back(gs::RecOf(r));
  return 1;
}

namespace gs {
namespace {
// ApiCall queues the API record of a call by the calling thread when its
// kind's collection is on. Caller holds f.mu.
// The call goes to the subscriber's callbacks, enter and exit, where
// enabled for its cbid (the callbacks call no CUPTI function of the fake).
void ApiCall(FakeCupti& f, CUpti_ActivityKind kind, uint32_t cbid, int64_t start = 0, int64_t end = 0) {
  int i = ApiSlot(kind);
  if (i < 0) return;
  bool callback = f.subscriber && cbid < kCbids && f.callback_on[i][cbid];
  bool record = f.api_on[i] && !(cbid < kCbids && f.api_off[i][cbid]);
  if (!callback && !record) return;
  uint32_t correlation = ++f.correlation;  // one id per call, as CUPTI's
  if (callback) {
    uint64_t scratch = 0;
    CUpti_CallbackDataPrefix d;
    memset(&d, 0, sizeof d);
    d.correlationData = &scratch;
    d.correlationId = correlation;
    int domain = i == 1 ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
    d.callbackSite = CUPTI_API_ENTER;
    f.subscriber(nullptr, domain, cbid, &d);
    d.callbackSite = CUPTI_API_EXIT;
    f.subscriber(nullptr, domain, cbid, &d);
    f.callbacks++;
  }
  if (!record) return;
  f.api_records++;
  CUpti_ActivityAPI a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  a.cbid = cbid;
  a.start = a.end = static_cast<uint64_t>(HostNowNs() - f.clock_offset);
  if (start != 0 || end != 0) {
    a.start = static_cast<uint64_t>(start);
    a.end = static_cast<uint64_t>(end);
  }
  a.processId = static_cast<uint32_t>(getpid());
  a.threadId = f.thread_id_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
                   ? static_cast<uint32_t>(syscall(SYS_gettid))
                   : static_cast<uint32_t>(reinterpret_cast<uintptr_t>(pthread_self()));
  a.correlationId = correlation;
  f.queued.push_back(RecOf(a));
}
}  // namespace
}  // namespace gs

extern "C" void gs_testing_cupti_kernel_launch(void) {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  gs::ApiCall(f, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
}

extern "C" uint32_t gs_testing_cupti_api_call(int32_t runtime, uint32_t cbid, int64_t start_ns, int64_t end_ns) {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  int64_t before = f.api_records + f.callbacks;
  uint32_t first = f.correlation + 1;
  gs::ApiCall(f, runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER, cbid, start_ns, end_ns);
  return f.api_records + f.callbacks == before ? 0 : first;
}

extern "C" int64_t gs_testing_cupti_callbacks(void) {
  std::lock_guard<std::mutex> l(F().mu);
  return F().callbacks;
}

extern "C" void gs_testing_cupti_no_callbacks(int32_t missing) {
  std::lock_guard<std::mutex> l(F().mu);
  F().no_callbacks = missing != 0;
}

extern "C" int32_t gs_testing_cupti_copy(uint32_t device, uint32_t stream, int64_t start_ns, int64_t end_ns,
                                         int32_t memset_not_copy, uint32_t graph) {
  FakeCupti& f = F();
  std::lock_guard<std::mutex> l(f.mu);
  if (!f.copy_on[memset_not_copy ? 1 : 0]) return 0;
  CUpti_CopyRecordPrefix r;
  memset(&r, 0, sizeof r);
  r.kind = memset_not_copy ? CUPTI_ACTIVITY_KIND_MEMSET : CUPTI_ACTIVITY_KIND_MEMCPY;
  r.bytes = 4096;
  gs::Place(f, r, device, stream, start_ns, end_ns, graph);
  f.queued.push_back(gs::RecOf(r));
  return 1;
}

extern "C" int64_t gs_testing_cupti_api_records(void) {
  std::lock_guard<std::mutex> l(F().mu);
  return F().api_records;
}

extern "C" int32_t gs_testing_cupti_api_switched_off(void) {
  std::lock_guard<std::mutex> l(F().mu);
  int32_t n = 0;
  for (auto& api : F().api_off) {
    for (bool off : api) n += off ? 1 : 0;
  }
  return n;
}

extern "C" void gs_testing_cupti_no_api_switches(int32_t missing) {
  std::lock_guard<std::mutex> l(F().mu);
  F().no_api_switches = missing != 0;
}

extern "C" void gs_testing_cupti_drop(uint32_t device, uint64_t n) {
  std::lock_guard<std::mutex> l(F().mu);
  F().drop_device = device;
  F().drop += n;
}

extern "C" int64_t gs_testing_cupti_deliver(int32_t per_buffer) { return gs::Deliver(per_buffer); }

extern "C" void gs_testing_cupti_clock_offset(int64_t ns) {
  std::lock_guard<std::mutex> l(F().mu);
  F().clock_offset = ns;
}

extern "C" int32_t gs_testing_cupti_enabled(void) {
  std::lock_guard<std::mutex> l(F().mu);
  return F().enabled ? 1 : 0;
}

extern "C" void gs_testing_cupti_calls(int64_t* enables, int64_t* disables) {
  std::lock_guard<std::mutex> l(F().mu);
  if (enables) *enables = F().enables;
  if (disables) *disables = F().disables;
}

extern "C" int64_t gs_testing_cupti_finalizes(void) {
  std::lock_guard<std::mutex> l(F().mu);
  return F().finalizes;
}

extern "C" int32_t gs_testing_cupti_graph_launch_for(int64_t hold_ns) {
  FakeCupti& f = F();
  bool guarded = gs::InLaunchGuard();
  {
    std::lock_guard<std::mutex> l(f.mu);
    if (f.bad_finalizes > 0) return 719;  // CUDA_ERROR_LAUNCH_FAILED, as seen on the H200
    if (f.attached && !f.enabled) f.replayed_off = true;
    // Unguarded replays of another thread beside a window lost the context
    // on the H200; guarded ones are held off the attach and detach, which
    // the in-flight count checks.
    if (f.attached && !guarded && f.attach_tid != static_cast<int64_t>(syscall(SYS_gettid))) f.replayed_foreign = true;
    gs::ApiCall(f, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000);
    f.inflight++;
  }
  for (int64_t end = gs::HostNowNs() + hold_ns; gs::HostNowNs() < end;) {
  }
  std::lock_guard<std::mutex> l(f.mu);
  f.inflight--;
  return 0;
}

extern "C" int32_t gs_testing_cupti_graph_launch(void) { return gs_testing_cupti_graph_launch_for(0); }

extern "C" int32_t gs_testing_cupti_guarded_graph_launch(int64_t hold_ns) {
  gs_launch_guard_enter();
  int32_t rc = gs_testing_cupti_graph_launch_for(hold_ns);
  gs_launch_guard_exit();
  return rc;
}

extern "C" int64_t gs_testing_cupti_bad_finalizes(void) {
  std::lock_guard<std::mutex> l(F().mu);
  return F().bad_finalizes;
}

extern "C" int32_t gs_testing_cupti_attached(void) {
  std::lock_guard<std::mutex> l(F().mu);
  return F().attached ? 1 : 0;
}

extern "C" void gs_testing_cupti_expect_thread(int64_t tid) {
  std::lock_guard<std::mutex> l(F().mu);
  F().expect_tid = tid;
  F().stray_calls = 0;
}

extern "C" int64_t gs_testing_cupti_stray_calls(void) {
  std::lock_guard<std::mutex> l(F().mu);
  return F().stray_calls;
}

extern "C" int64_t gs_testing_thread_id(void) { return static_cast<int64_t>(syscall(SYS_gettid)); }

extern "C" int32_t gs_testing_in_launch_guard(void) { return gs::InLaunchGuard() ? 1 : 0; }

extern "C" uint64_t gs_testing_lock_rank_violations(char* why, size_t cap) { return gs::LockRankViolations(why, cap); }

extern "C" void gs_testing_lock_out_of_order(void) {
  gs::RankedMutex inner(gs::kRankRing), outer(gs::kRankTracer);
  std::lock_guard<gs::RankedMutex> a(inner);
  std::lock_guard<gs::RankedMutex> b(outer);
}

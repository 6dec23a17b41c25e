// The event pool: N (begin, end) CUDA event pairs on a device's primary
// context, recorded on caller streams and harvested in batches without ever
// waiting for the GPU.
#include <math.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>

#include "driver.h"
#include "gpuspans/gpuspans.h"

namespace gs {
namespace {

constexpr uint32_t kMaxSlots = 1u << 20;
constexpr int kAnchors = 4;  // a slot's anchor stays usable for 3 re-anchors
constexpr int64_t kDefaultAnchorIntervalNs = 500 * 1000 * 1000;
// Event pairs around an empty kernel that measure the event-to-kernel
// offset; the median is taken, so a few preempted pairs do not matter.
constexpr int kCalibrationPairs = 31;

// Calibration queues, on the private stream: a lead wait, so that every
// pair is enqueued before the GPU reaches it (else a pair would time the
// host's launch latency too); then, per pair, a short wait, so that its
// begin event follows a kernel as a kernel span's does in a busy engine,
// and (event, a kCalibrationSpinNs spin, event). The offset is what a pair
// reads beyond the spin's own %globaltimer length: the reference that
// kernel spans are judged against (bench/, accuracy).
constexpr uint64_t kCalibrationLeadNs = 200 * 1000;
constexpr uint64_t kCalibrationGapNs = 2000;
constexpr int64_t kCalibrationSpinNs = 10 * 1000;

// gs_calibrate_wait(ns): one thread spins until %globaltimer advanced ns.
// PTX ISA 7.0 for sm_70: the driver JIT accepts it on any GPU since Volta.
const char kCalibrationPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry gs_calibrate_wait(
    .param .u64 gs_calibrate_wait_ns
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [gs_calibrate_wait_ns];
    mov.u64 %rd2, %globaltimer;
    add.u64 %rd3, %rd2, %rd1;
$L_wait:
    mov.u64 %rd4, %globaltimer;
    setp.lt.u64 %p1, %rd4, %rd3;
    @%p1 bra $L_wait;
    ret;
}
)";

// Distinct end streams a harvest sorts and walks in end order; items on further
// streams are checked one by one. Serving engines use a handful of streams.
constexpr uint8_t kMaxGroups = 16;
// Scratch group values beyond the real groups.
constexpr uint8_t kDecided = 0xFD;      // the item's state is already known
constexpr uint8_t kElapsedOnly = 0xFE;  // nothing recorded since last seen complete
constexpr uint8_t kQueryEach = 0xFF;    // more streams than kMaxGroups

// Slot::state bits. kBeginPending / kEndPending: the event was recorded and
// not yet seen complete (destroy must query it). kOpen: begin recorded, end
// not yet, so a harvest reports the span in flight whatever the events say.
constexpr uint32_t kBeginPending = 1, kEndPending = 2, kOpen = 4;

}  // namespace

// Slot and Anchor are in gs, not in an anonymous namespace, because
// gs_pool (which has external linkage) holds them.
struct Slot {
  CUevent begin = nullptr;
  CUevent end = nullptr;
  std::atomic<uint32_t> state{0};
  std::atomic<uint32_t> anchor_gen{0};  // anchor current at record_begin, 0: none
  std::atomic<uint64_t> begin_stream{0};
  std::atomic<uint64_t> end_stream{0};
  std::atomic<uint64_t> end_seq{0};     // order of record_end calls in the pool
};

// A host-clock anchor: an event on the pool's private stream and the host
// time read right after it was recorded. gen 0 marks an unused entry.
struct Anchor {
  CUevent event = nullptr;
  uint32_t gen = 0;
  bool complete = false;
  int64_t host_ns = 0;
};

}  // namespace gs

struct gs_pool {
  const gs::Driver* d = nullptr;
  int32_t device = 0;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;  // retained primary context, null until retained
  uint32_t nslots = 0;
  std::unique_ptr<gs::Slot[]> slots;
  CUstream anchor_stream = nullptr;
  gs::Anchor anchors[gs::kAnchors];
  uint32_t last_gen = 0;     // harvester only
  uint32_t pending_gen = 0;  // harvester only: recorded, not yet seen complete
  std::atomic<uint32_t> current_gen{0};
  std::atomic<int64_t> anchor_interval_ns{gs::kDefaultAnchorIntervalNs};
  std::atomic<uint64_t> next_end_seq{0};
  std::atomic<int32_t> dead{0};  // the sticky CUresult that killed the pool, 0: alive
  // Offset calibration (gs_pool_event_offset_ns): pairs recorded at create
  // on anchor_stream, read by the first harvest that finds them done.
  CUmodule calib_module = nullptr;
  CUevent calib[2 * gs::kCalibrationPairs] = {};
  int calib_pairs = 0;           // pairs fully recorded
  CUevent calib_last = nullptr;  // harvester only: last event recorded, until read
  std::atomic<int64_t> offset_ns{-1};
  // Harvest scratch, sized for nslots items so a harvest never allocates.
  std::unique_ptr<uint32_t[]> order;
  std::unique_ptr<uint64_t[]> seq;
  std::unique_ptr<uint8_t[]> group;
};

namespace gs {
namespace {

// Switches the calling thread to RELAXED capture mode for a scope. In GLOBAL
// mode (the default) an event query from any thread can invalidate a GLOBAL
// capture in progress elsewhere in the process, even for unrelated events
// (pytorch/pytorch #104555); in RELAXED mode the query is allowed. On an
// H200 with driver 580, queries racing captures without this switch broke
// about a quarter of them, or crashed inside cuEventQuery
// (cuda/test/gpu_test.cc, CapturesSurviveHarvests); with it, none.
class RelaxedCaptureMode {
 public:
  RelaxedCaptureMode() = default;
  RelaxedCaptureMode(const RelaxedCaptureMode&) = delete;
  RelaxedCaptureMode& operator=(const RelaxedCaptureMode&) = delete;
  ~RelaxedCaptureMode() {
    if (d_) d_->cuThreadExchangeStreamCaptureMode(&mode_);
  }
  CUresult Enter(const Driver* d) {
    if (!d->cuThreadExchangeStreamCaptureMode || !CaptureModeExchangeEnabled()) {
      return CUDA_SUCCESS;
    }
    mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
    CUresult r = d->cuThreadExchangeStreamCaptureMode(&mode_);
    if (r == CUDA_SUCCESS) d_ = d;
    return r;
  }

 private:
  const Driver* d_ = nullptr;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

void SetCu(int32_t* cu, CUresult r) {
  if (cu) *cu = r;
}

// Fail turns a failed driver call into a status, killing the pool on a sticky
// error so no later call touches the driver.
gs_status Fail(gs_pool* p, CUresult r, int32_t* cu) {
  SetCu(cu, r);
  if (!IsSticky(r)) return GS_ERR_DRIVER;
  int32_t alive = 0;
  p->dead.compare_exchange_strong(alive, r, std::memory_order_relaxed);
  return GS_ERR_POOL_DEAD;
}

gs_status Dead(gs_pool* p, int32_t* cu) {
  SetCu(cu, p->dead.load(std::memory_order_relaxed));
  return GS_ERR_POOL_DEAD;
}

int64_t MsToNs(float ms) { return llround(static_cast<double>(ms) * 1e6); }

// Destroys whatever the pool holds; used by a failed create and by destroy.
// Errors are ignored: there is nothing left to do about them.
void ReleaseAll(gs_pool* p) {
  const Driver* d = p->d;
  if (!p->ctx) return;
  {
    ContextScope scope;
    scope.Enter(d, p->ctx);
    for (uint32_t i = 0; i < p->nslots; ++i) {
      if (p->slots[i].begin) d->cuEventDestroy(p->slots[i].begin);
      if (p->slots[i].end) d->cuEventDestroy(p->slots[i].end);
    }
    for (Anchor& a : p->anchors) {
      if (a.event) d->cuEventDestroy(a.event);
    }
    for (CUevent e : p->calib) {
      if (e) d->cuEventDestroy(e);
    }
    if (p->calib_module) d->cuModuleUnload(p->calib_module);
    if (p->anchor_stream) d->cuStreamDestroy(p->anchor_stream);
  }
  d->cuDevicePrimaryCtxRelease(p->dev);
  p->ctx = nullptr;
}

// RecordAnchor records the next anchor on the private stream and notes the
// host time once the record returns. The stream is idle, so the GPU stamps
// the event about when the host reads its clock.
CUresult RecordAnchor(gs_pool* p) {
  uint32_t gen = p->last_gen + 1;
  if (gen == 0) gen = 1;
  Anchor& a = p->anchors[gen % kAnchors];
  a.gen = 0;  // whatever this entry anchored is gone from here on
  CUresult r = p->d->cuEventRecord(a.event, p->anchor_stream);
  if (r != CUDA_SUCCESS) return r;
  a.host_ns = HostNowNs();
  a.gen = gen;
  a.complete = false;
  p->last_gen = gen;
  p->pending_gen = gen;
  return CUDA_SUCCESS;
}

// MaintainAnchor promotes a pending anchor once complete (record_begin then
// tags slots with it) and records a new one when the current is too old.
// Only a sticky error is returned; others just delay re-anchoring.
CUresult MaintainAnchor(gs_pool* p) {
  if (p->pending_gen) {
    Anchor& a = p->anchors[p->pending_gen % kAnchors];
    CUresult r = p->d->cuEventQuery(a.event);
    if (r == CUDA_ERROR_NOT_READY) return CUDA_SUCCESS;
    if (IsSticky(r)) return r;
    if (r == CUDA_SUCCESS && a.gen == p->pending_gen) {
      a.complete = true;
      p->current_gen.store(p->pending_gen, std::memory_order_release);
    }
    p->pending_gen = 0;
  }
  uint32_t cur = p->current_gen.load(std::memory_order_relaxed);
  if (cur) {
    int64_t age = HostNowNs() - p->anchors[cur % kAnchors].host_ns;
    // A negative age means the wall clock stepped back: re-anchor too.
    if (age >= 0 && age < p->anchor_interval_ns.load(std::memory_order_relaxed)) {
      return CUDA_SUCCESS;
    }
  }
  CUresult r = RecordAnchor(p);
  return IsSticky(r) ? r : CUDA_SUCCESS;
}

// StartCalibration enqueues kCalibrationPairs of (event, spin, event) on the
// pool's private stream, behind waits (see kCalibrationLeadNs),
// for MaintainCalibration to read once done: nothing waits for them. Called
// at create, on the pool's context. Any failure leaves the offset unknown
// (-1); spans are then reported raw.
void StartCalibration(gs_pool* p) {
  const Driver* d = p->d;
  if (!d->cuModuleLoadData || !d->cuModuleGetFunction || !d->cuLaunchKernel || !d->cuModuleUnload) {
    return;
  }
  if (d->cuModuleLoadData(&p->calib_module, kCalibrationPtx) != CUDA_SUCCESS) {
    p->calib_module = nullptr;
    return;
  }
  CUfunction wait = nullptr;
  if (d->cuModuleGetFunction(&wait, p->calib_module, "gs_calibrate_wait") != CUDA_SUCCESS) return;
  auto Wait = [&](uint64_t ns) {
    void* params[] = {&ns};
    return d->cuLaunchKernel(wait, 1, 1, 1, 1, 1, 1, 0, p->anchor_stream, params, nullptr);
  };
  for (CUevent& e : p->calib) {
    if (d->cuEventCreate(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
      e = nullptr;
      return;
    }
  }
  if (Wait(kCalibrationLeadNs) != CUDA_SUCCESS) return;
  for (int k = 0; k < kCalibrationPairs; ++k) {
    if (Wait(kCalibrationGapNs) != CUDA_SUCCESS ||
        d->cuEventRecord(p->calib[2 * k], p->anchor_stream) != CUDA_SUCCESS) {
      return;
    }
    p->calib_last = p->calib[2 * k];
    if (Wait(kCalibrationSpinNs) != CUDA_SUCCESS ||
        d->cuEventRecord(p->calib[2 * k + 1], p->anchor_stream) != CUDA_SUCCESS) {
      return;
    }
    p->calib_last = p->calib[2 * k + 1];
    p->calib_pairs = k + 1;
  }
}

// MaintainCalibration reads the calibration pairs once the last is done and
// publishes their median. Only a sticky error is returned.
CUresult MaintainCalibration(gs_pool* p) {
  if (!p->calib_last) return CUDA_SUCCESS;
  CUresult r = p->d->cuEventQuery(p->calib_last);
  if (r == CUDA_ERROR_NOT_READY) return CUDA_SUCCESS;
  if (IsSticky(r)) return r;
  p->calib_last = nullptr;  // read once, whatever comes of it
  if (r != CUDA_SUCCESS) return CUDA_SUCCESS;
  int64_t v[kCalibrationPairs];
  int n = 0;
  for (int k = 0; k < p->calib_pairs; ++k) {
    float ms = 0;
    r = p->d->cuEventElapsedTime(&ms, p->calib[2 * k], p->calib[2 * k + 1]);
    if (IsSticky(r)) return r;
    if (r == CUDA_SUCCESS && MsToNs(ms) >= kCalibrationSpinNs) v[n++] = MsToNs(ms) - kCalibrationSpinNs;
  }
  if (n < (kCalibrationPairs + 1) / 2) return CUDA_SUCCESS;  // too few to trust
  std::sort(v, v + n);
  p->offset_ns.store(v[n / 2], std::memory_order_release);
  return CUDA_SUCCESS;
}

// Harvest is one gs_pool_harvest call's work, split into steps.
class Harvest {
 public:
  Harvest(gs_pool* p, gs_harvest_item* items, size_t n) : p_(p), d_(p->d), items_(items), n_(n) {}

  // Run returns CUDA_SUCCESS or the sticky error that killed the pool.
  CUresult Run() {
    CUresult r = MaintainAnchor(p_);
    if (r != CUDA_SUCCESS) return r;
    r = MaintainCalibration(p_);
    if (r != CUDA_SUCCESS) return r;
    Classify();
    for (uint8_t g = 0; g < ngroups_; ++g) {
      r = SearchGroup(offset_[g], count_[g]);
      if (r != CUDA_SUCCESS) return r;
    }
    for (size_t i = 0; i < n_; ++i) {
      uint8_t g = p_->group[i];
      if (g == kElapsedOnly) {
        r = Elapsed(i);
      } else if (g == kQueryEach) {
        r = QueryThenElapsed(i);
      }
      if (r != CUDA_SUCCESS) return r;
    }
    for (size_t i = 0; i < n_; ++i) {
      if (items_[i].want_start && items_[i].state == GS_SPAN_DONE) {
        r = Start(i);
        if (r != CUDA_SUCCESS) return r;
      }
    }
    return CUDA_SUCCESS;
  }

 private:
  Slot& SlotOf(size_t i) { return p_->slots[items_[i].slot]; }

  // Classify sets every item in flight, then sorts the closed spans by the
  // stream their end was recorded on (a counting sort into p->order, each
  // group then ordered by end sequence).
  void Classify() {
    uint8_t* group = p_->group.get();
    uint64_t* seq = p_->seq.get();
    for (size_t i = 0; i < n_; ++i) {
      gs_harvest_item& it = items_[i];
      it.state = GS_SPAN_IN_FLIGHT;
      it.cu_result = 0;
      it.duration_ns = 0;
      it.start_ns = 0;
      Slot& s = SlotOf(i);
      uint32_t st = s.state.load(std::memory_order_acquire);
      if (st & kOpen) {
        group[i] = kDecided;
      } else if (!(st & kEndPending)) {
        group[i] = kElapsedOnly;
      } else {
        uint64_t stream = s.end_stream.load(std::memory_order_relaxed);
        seq[i] = s.end_seq.load(std::memory_order_relaxed);
        uint8_t g = 0;
        while (g < ngroups_ && streams_[g] != stream) ++g;
        if (g == ngroups_ && ngroups_ < kMaxGroups) {
          streams_[ngroups_] = stream;
          count_[ngroups_++] = 0;
        }
        if (g < ngroups_) {
          group[i] = g;
          ++count_[g];
        } else {
          group[i] = kQueryEach;
        }
      }
    }
    uint32_t next = 0;
    for (uint8_t g = 0; g < ngroups_; ++g) {
      offset_[g] = next;
      fill_[g] = next;
      next += count_[g];
    }
    uint32_t* order = p_->order.get();
    for (size_t i = 0; i < n_; ++i) {
      uint8_t g = group[i];
      if (g < ngroups_) order[fill_[g]++] = static_cast<uint32_t>(i);
    }
    // Insertion sort: callers harvest in about the order spans ended.
    for (uint8_t g = 0; g < ngroups_; ++g) {
      uint32_t* o = order + offset_[g];
      for (uint32_t k = 1; k < count_[g]; ++k) {
        uint32_t v = o[k];
        uint32_t j = k;
        for (; j > 0 && seq[o[j - 1]] > seq[v]; --j) o[j] = o[j - 1];
        o[j] = v;
      }
    }
  }

  // SearchGroup lands the completed prefix of a stream's spans, ordered by
  // end record: work on one stream completes in order, so the first span
  // whose end has not completed ends the walk, whatever follows it. The
  // elapsed-time read is the probe (NOT_READY until both events completed),
  // so a harvest costs one call per span that lands plus one per stream,
  // however many spans are still in flight behind. NOT_READY on a span that
  // began on another stream may be that begin: its end is queried, and the
  // walk goes on past it when the end has completed. Records racing on one
  // stream can order the prefix wrongly; then a completed span waits for a
  // later harvest, never the reverse (Elapsed is the ground truth).
  CUresult SearchGroup(uint32_t offset, uint32_t m) {
    const uint32_t* o = p_->order.get() + offset;
    for (uint32_t k = 0; k < m; ++k) {
      Slot& s = SlotOf(o[k]);
      float ms = 0;
      CUresult r = d_->cuEventElapsedTime(&ms, s.begin, s.end);
      if (r == CUDA_SUCCESS) {
        Land(o[k], ms);
        continue;
      }
      if (r != CUDA_ERROR_NOT_READY) {
        r = Outcome(o[k], r);  // this span's own failure: the order still holds
        if (r != CUDA_SUCCESS) return r;
        continue;
      }
      if (s.begin_stream.load(std::memory_order_relaxed) == s.end_stream.load(std::memory_order_relaxed)) {
        return CUDA_SUCCESS;  // the end itself is still in flight
      }
      r = d_->cuEventQuery(s.end);
      if (r == CUDA_ERROR_NOT_READY) return CUDA_SUCCESS;
      if (r != CUDA_SUCCESS) {
        r = Outcome(o[k], r);
        if (r != CUDA_SUCCESS) return r;
      }
    }
    return CUDA_SUCCESS;
  }

  CUresult QueryThenElapsed(size_t i) {
    CUresult r = d_->cuEventQuery(SlotOf(i).end);
    if (r == CUDA_SUCCESS) return Elapsed(i);
    return Outcome(i, r);
  }

  // Elapsed is the ground truth for an item: NOT_READY here (a begin on
  // another stream still running, or a prefix search misled by records
  // racing on one stream) keeps the span in flight.
  CUresult Elapsed(size_t i) {
    Slot& s = SlotOf(i);
    float ms = 0;
    CUresult r = d_->cuEventElapsedTime(&ms, s.begin, s.end);
    if (r == CUDA_SUCCESS) {
      Land(i, ms);
      return CUDA_SUCCESS;
    }
    return Outcome(i, r);
  }

  // Land marks item i done, ms long: both its events have completed.
  void Land(size_t i, float ms) {
    items_[i].state = GS_SPAN_DONE;
    items_[i].duration_ns = MsToNs(ms);
    SlotOf(i).state.store(0, std::memory_order_release);
  }

  CUresult Outcome(size_t i, CUresult r) {
    if (r == CUDA_ERROR_NOT_READY) return CUDA_SUCCESS;  // stays in flight
    if (IsSticky(r)) return r;
    items_[i].state = GS_SPAN_ERROR;
    items_[i].cu_result = r;
    return CUDA_SUCCESS;
  }

  // Start places a done span's begin on the host clock through the anchor
  // that was current when it began, if that anchor is still in the ring.
  CUresult Start(size_t i) {
    Slot& s = SlotOf(i);
    uint32_t gen = s.anchor_gen.load(std::memory_order_relaxed);
    if (gen == 0) return CUDA_SUCCESS;
    const Anchor& a = p_->anchors[gen % kAnchors];
    if (a.gen != gen || !a.complete) return CUDA_SUCCESS;
    float ms = 0;
    CUresult r = d_->cuEventElapsedTime(&ms, a.event, s.begin);
    if (r == CUDA_SUCCESS) {
      items_[i].start_ns = a.host_ns + MsToNs(ms);
      return CUDA_SUCCESS;
    }
    return IsSticky(r) ? r : CUDA_SUCCESS;
  }

  gs_pool* p_;
  const Driver* d_;
  gs_harvest_item* items_;
  size_t n_;
  uint8_t ngroups_ = 0;
  uint64_t streams_[kMaxGroups];
  uint32_t count_[kMaxGroups];
  uint32_t offset_[kMaxGroups];
  uint32_t fill_[kMaxGroups];
};

// HarvestRelaxed runs a harvest in RELAXED capture mode on the pool's
// context. Returns CUDA_SUCCESS, a sticky error from the harvest, or the
// error of the mode exchange or context push (then no item was touched).
CUresult HarvestRelaxed(gs_pool* p, gs_harvest_item* items, size_t n) {
  RelaxedCaptureMode mode;
  CUresult r = mode.Enter(p->d);
  if (r != CUDA_SUCCESS) return r;
  ContextScope scope;
  r = scope.Enter(p->d, p->ctx);
  if (r != CUDA_SUCCESS) return r;
  return Harvest(p, items, n).Run();
}

void SetItem(gs_harvest_item* it, gs_span_state state, int32_t cu) {
  it->state = state;
  it->cu_result = cu;
  it->duration_ns = 0;
  it->start_ns = 0;
}

gs_status Record(gs_pool* p, uint32_t slot, uint64_t stream, int32_t* cu, bool end) {
  SetCu(cu, 0);
  if (!p || slot >= p->nslots) return GS_ERR_INVALID_ARGUMENT;
  if (p->dead.load(std::memory_order_relaxed)) return Dead(p, cu);
  const Driver* d = p->d;
  CUstream s = reinterpret_cast<CUstream>(stream);
  // The context goes first: stream 0 means the current context's legacy
  // stream, for the capture check as for the record.
  ContextScope scope;
  CUresult r = scope.Enter(d, p->ctx);
  if (r != CUDA_SUCCESS) return Fail(p, r, cu);
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  r = d->cuStreamIsCapturing(s, &cs);
  // IMPLICIT: the legacy stream while a blocking stream captures; a record
  // there would join the capture too.
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return GS_ERR_CAPTURING;
  if (r != CUDA_SUCCESS) return Fail(p, r, cu);
  if (cs != CU_STREAM_CAPTURE_STATUS_NONE) return GS_ERR_CAPTURING;
  Slot& sl = p->slots[slot];
  r = d->cuEventRecord(end ? sl.end : sl.begin, s);
  if (r != CUDA_SUCCESS) return Fail(p, r, cu);
  if (end) {
    sl.end_stream.store(stream, std::memory_order_relaxed);
    sl.end_seq.store(p->next_end_seq.fetch_add(1, std::memory_order_relaxed),
                     std::memory_order_relaxed);
    sl.state.fetch_or(kEndPending, std::memory_order_relaxed);
    sl.state.fetch_and(~kOpen, std::memory_order_release);
  } else {
    sl.begin_stream.store(stream, std::memory_order_relaxed);
    sl.anchor_gen.store(p->current_gen.load(std::memory_order_acquire), std::memory_order_relaxed);
    sl.state.fetch_or(kBeginPending | kOpen, std::memory_order_release);
  }
  return GS_OK;
}

// InFlight reports whether an event recorded since last seen complete may
// still run; errors other than sticky ones mean it cannot.
CUresult InFlight(const Driver* d, CUevent e, bool* in_flight) {
  CUresult r = d->cuEventQuery(e);
  *in_flight = r == CUDA_ERROR_NOT_READY;
  return IsSticky(r) ? r : CUDA_SUCCESS;
}

// Busy queries every event the pool recorded and has not seen complete.
// Returns a sticky error, or sets *busy.
CUresult Busy(gs_pool* p, bool* busy) {
  *busy = false;
  const Driver* d = p->d;
  RelaxedCaptureMode mode;
  CUresult r = mode.Enter(d);
  if (r != CUDA_SUCCESS) return r;
  ContextScope scope;
  r = scope.Enter(d, p->ctx);
  if (r != CUDA_SUCCESS) return r;
  for (uint32_t i = 0; i < p->nslots; ++i) {
    Slot& s = p->slots[i];
    uint32_t st = s.state.load(std::memory_order_acquire);
    if (st & kBeginPending) {
      r = InFlight(d, s.begin, busy);
      if (r != CUDA_SUCCESS || *busy) return r;
    }
    if (st & kEndPending) {
      r = InFlight(d, s.end, busy);
      if (r != CUDA_SUCCESS || *busy) return r;
    }
    s.state.store(st & kOpen, std::memory_order_relaxed);
  }
  if (p->calib_last) {
    r = InFlight(d, p->calib_last, busy);
    if (r != CUDA_SUCCESS || *busy) return r;
  }
  if (p->pending_gen) return InFlight(d, p->anchors[p->pending_gen % kAnchors].event, busy);
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace gs

using gs::Slot;

extern "C" {

gs_status gs_pool_create(int32_t device, uint32_t slots, gs_pool** out, gs_error* err) {
  if (!out) return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_pool_create: out is NULL");
  *out = nullptr;
  if (slots == 0 || slots > gs::kMaxSlots) {
    return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0,
                        "gs_pool_create: slots must be 1..%u, got %u", gs::kMaxSlots, slots);
  }
  gs_status st = gs_driver_load(err);
  if (st != GS_OK) return st;
  std::unique_ptr<gs_pool> p;
  try {
    // Every allocation happens before the first driver resource, so a
    // bad_alloc leaves nothing to release.
    p.reset(new gs_pool);
    p->slots.reset(new Slot[slots]);
    p->order.reset(new uint32_t[slots]);
    p->seq.reset(new uint64_t[slots]);
    p->group.reset(new uint8_t[slots]);
  } catch (const std::bad_alloc&) {
    return gs::SetError(err, GS_ERR_NO_MEMORY, 0, "gs_pool_create: no memory for %u slots", slots);
  }
  const gs::Driver* d = gs::LoadedDriver();
  p->d = d;
  p->device = device;
  p->nslots = slots;
  CUresult r = d->cuDeviceGet(&p->dev, device);
  if (r != CUDA_SUCCESS) return gs::SetError(err, GS_ERR_DRIVER, r, "cuDeviceGet(%d)", device);
  CUcontext ctx = nullptr;
  r = d->cuDevicePrimaryCtxRetain(&ctx, p->dev);
  if (r != CUDA_SUCCESS) {
    return gs::SetError(err, GS_ERR_DRIVER, r, "cuDevicePrimaryCtxRetain(device %d)", device);
  }
  p->ctx = ctx;
  {
    gs::ContextScope scope;
    r = scope.Enter(d, ctx);
    if (r != CUDA_SUCCESS) {
      gs::ReleaseAll(p.get());
      return gs::SetError(err, GS_ERR_DRIVER, r, "making the context of device %d current", device);
    }
    const uint32_t total = 2 * slots + gs::kAnchors;
    for (uint32_t k = 0; k < total; ++k) {
      CUevent* e = k < 2 * slots ? (k % 2 ? &p->slots[k / 2].end : &p->slots[k / 2].begin)
                                 : &p->anchors[k - 2 * slots].event;
      r = d->cuEventCreate(e, CU_EVENT_DEFAULT);
      if (r != CUDA_SUCCESS) {
        *e = nullptr;
        gs::ReleaseAll(p.get());
        return gs::SetError(err, GS_ERR_DRIVER, r, "cuEventCreate (event %u of %u, device %d)",
                            k + 1, total, device);
      }
    }
    r = d->cuStreamCreate(&p->anchor_stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
      p->anchor_stream = nullptr;
      gs::ReleaseAll(p.get());
      return gs::SetError(err, GS_ERR_DRIVER, r, "cuStreamCreate (anchor stream, device %d)", device);
    }
    // The first anchor, so the first harvest can promote it.
    r = gs::RecordAnchor(p.get());
    if (r != CUDA_SUCCESS) {
      gs::ReleaseAll(p.get());
      return gs::SetError(err, GS_ERR_DRIVER, r, "cuEventRecord (anchor, device %d)", device);
    }
    gs::StartCalibration(p.get());
  }
  if (err) *err = gs_error{};
  *out = p.release();
  return GS_OK;
}

gs_status gs_pool_destroy(gs_pool* pool, gs_error* err) {
  if (!pool) return GS_OK;
  if (!pool->dead.load(std::memory_order_relaxed)) {
    bool busy = false;
    CUresult r = gs::Busy(pool, &busy);
    if (r != CUDA_SUCCESS) {
      // Sticky: release without further queries. Anything else came from
      // the capture-mode exchange or context push; the pool stays valid.
      if (!gs::IsSticky(r)) {
        return gs::SetError(err, GS_ERR_DRIVER, r, "gs_pool_destroy (device %d)", pool->device);
      }
      int32_t alive = 0;
      pool->dead.compare_exchange_strong(alive, r, std::memory_order_relaxed);
    } else if (busy) {
      return gs::SetError(err, GS_ERR_BUSY, 0,
                          "gs_pool_destroy (device %d): events still in flight", pool->device);
    }
  }
  gs::ReleaseAll(pool);
  delete pool;
  if (err) *err = gs_error{};
  return GS_OK;
}

uint32_t gs_pool_slots(const gs_pool* pool) { return pool ? pool->nslots : 0; }

int32_t gs_pool_device(const gs_pool* pool) { return pool ? pool->device : -1; }

gs_status gs_pool_is_capturing(gs_pool* pool, uint64_t stream, int32_t* capturing,
                               int32_t* cu_result) {
  gs::SetCu(cu_result, 0);
  if (!pool || !capturing) return GS_ERR_INVALID_ARGUMENT;
  *capturing = 0;
  if (pool->dead.load(std::memory_order_relaxed)) return gs::Dead(pool, cu_result);
  gs::ContextScope scope;
  CUresult r = scope.Enter(pool->d, pool->ctx);
  if (r != CUDA_SUCCESS) return gs::Fail(pool, r, cu_result);
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  r = pool->d->cuStreamIsCapturing(reinterpret_cast<CUstream>(stream), &cs);
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) {
    *capturing = 1;
    return GS_OK;
  }
  if (r != CUDA_SUCCESS) return gs::Fail(pool, r, cu_result);
  *capturing = cs != CU_STREAM_CAPTURE_STATUS_NONE;
  return GS_OK;
}

gs_status gs_pool_record_begin(gs_pool* pool, uint32_t slot, uint64_t stream, int32_t* cu_result) {
  return gs::Record(pool, slot, stream, cu_result, false);
}

gs_status gs_pool_record_end(gs_pool* pool, uint32_t slot, uint64_t stream, int32_t* cu_result) {
  return gs::Record(pool, slot, stream, cu_result, true);
}

gs_status gs_pool_harvest(gs_pool* pool, gs_harvest_item* items, size_t n, int32_t* cu_result) {
  gs::SetCu(cu_result, 0);
  if (!pool || (n && !items) || n > pool->nslots) return GS_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < n; ++i) {
    if (items[i].slot >= pool->nslots) return GS_ERR_INVALID_ARGUMENT;
  }
  if (n == 0) return GS_OK;
  if (!pool->dead.load(std::memory_order_relaxed)) {
    CUresult r = gs::HarvestRelaxed(pool, items, n);
    if (r == CUDA_SUCCESS) return GS_OK;
    if (!gs::IsSticky(r)) {
      // The capture-mode exchange or the context push failed: nothing was
      // queried (outside RELAXED mode a query could break a capture).
      for (size_t i = 0; i < n; ++i) gs::SetItem(&items[i], GS_SPAN_IN_FLIGHT, 0);
      return gs::Fail(pool, r, cu_result);
    }
    gs::Fail(pool, r, nullptr);
  }
  const int32_t dead = pool->dead.load(std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i) gs::SetItem(&items[i], GS_SPAN_ERROR, dead);
  return gs::Dead(pool, cu_result);
}

int64_t gs_pool_event_offset_ns(const gs_pool* pool) {
  return pool ? pool->offset_ns.load(std::memory_order_acquire) : -1;
}

void gs_pool_set_anchor_interval(gs_pool* pool, int64_t interval_ns) {
  if (!pool) return;
  pool->anchor_interval_ns.store(interval_ns > 0 ? interval_ns : gs::kDefaultAnchorIntervalNs,
                                 std::memory_order_relaxed);
}

}  // extern "C"

uint64_t gs::PoolEventForTesting(const gs_pool* pool, uint32_t slot, bool end) {
  if (!pool || slot >= pool->nslots) return 0;
  const Slot& s = pool->slots[slot];
  return reinterpret_cast<uint64_t>(end ? s.end : s.begin);
}

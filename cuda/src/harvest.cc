// Batched harvest (gs_pool_harvest): which spans have landed, how long they
// took and when they began, in one pass that never waits for the GPU.
#include "pool_internal.h"

namespace gs {
namespace {

// Distinct end streams a harvest sorts and walks in end order; items on further
// streams are checked one by one. Serving engines use a handful of streams.
constexpr uint8_t kMaxGroups = 16;
// Scratch group values beyond the real groups.
constexpr uint8_t kDecided = 0xFD;      // the item's state is already known
constexpr uint8_t kElapsedOnly = 0xFE;  // nothing recorded since last seen complete
constexpr uint8_t kQueryEach = 0xFF;    // more streams than kMaxGroups

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

  // BeginOf is the event a span began at: its own begin event, or the end
  // event of the span before it (gs_pool_record_next), which the caller
  // keeps unrecorded until this span is harvested.
  CUevent BeginOf(const Slot& s) const {
    uint32_t from = s.begin_from.load(std::memory_order_relaxed);
    return from ? p_->slots[from - 1].end : s.begin;
  }

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
      CUresult r = d_->cuEventElapsedTime(&ms, BeginOf(s), s.end);
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
    CUresult r = d_->cuEventElapsedTime(&ms, BeginOf(s), s.end);
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
    CUresult r = d_->cuEventElapsedTime(&ms, a.event, BeginOf(s));
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

}  // namespace
}  // namespace gs

extern "C" {

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

}  // extern "C"

// Host-clock anchors: events on the pool's private stream paired with the
// host time they were recorded at, through which a harvest places a span's
// begin on the host clock (gs_harvest_item.start_ns).
#include "pool_internal.h"

namespace gs {

// The stream is idle, so the GPU stamps the event about when the host reads
// its clock.
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

// Once promoted, record_begin tags slots with the anchor. Errors other than
// sticky ones just delay re-anchoring.
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

}  // namespace gs

extern "C" void gs_pool_set_anchor_interval(gs_pool* pool, int64_t interval_ns) {
  if (!pool) return;
  pool->anchor_interval_ns.store(interval_ns > 0 ? interval_ns : gs::kDefaultAnchorIntervalNs,
                                 std::memory_order_relaxed);
}

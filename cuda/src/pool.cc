// The event pool: N (begin, end) CUDA event pairs on a device's primary
// context, recorded on caller streams and harvested in batches without ever
// waiting for the GPU. This file: create and destroy, slots, records and
// capture checks; anchor.cc, calibration.cc and harvest.cc hold the rest
// (pool_internal.h says what each holds).
#include <new>

#include "pool_internal.h"

namespace gs {
namespace {

constexpr uint32_t kMaxSlots = 1u << 20;

}  // namespace

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

namespace {

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

// CreateGuard owns a pool while gs_pool_create builds it. Unless dismissed
// (the create succeeded), it releases whatever the pool holds by then and
// frees it, so that no failure path, present or future, leaks an event, the
// stream, the module or the context retain. Every handle starts null and a
// failed create call leaves its handle null, so ReleaseAll knows what was
// made.
class CreateGuard {
 public:
  explicit CreateGuard(gs_pool* p) : p_(p) {}
  // Copies would release the pool twice.
  CreateGuard(const CreateGuard&) = delete;
  CreateGuard& operator=(const CreateGuard&) = delete;
  // Not movable either: a guard stays in the scope it guards.
  CreateGuard(CreateGuard&&) = delete;
  CreateGuard& operator=(CreateGuard&&) = delete;
  ~CreateGuard() {
    if (!p_) return;
    ReleaseAll(p_);
    delete p_;
  }

  gs_pool* get() const { return p_; }
  gs_pool* operator->() const { return p_; }
  // Dismiss hands the pool to the caller; the guard then releases nothing.
  gs_pool* Dismiss() {
    gs_pool* p = p_;
    p_ = nullptr;
    return p;
  }

 private:
  gs_pool* p_;
};

// Which events a Record call records: a begin, an end, or an end that the
// next span also begins at.
enum class RecordKind { kBegin, kEnd, kNext };

gs_status Record(gs_pool* p, uint32_t slot, uint32_t next, uint64_t stream, int32_t* cu,
                 RecordKind kind) {
  SetCu(cu, 0);
  if (!p || slot >= p->nslots) return GS_ERR_INVALID_ARGUMENT;
  if (kind == RecordKind::kNext && (next >= p->nslots || next == slot)) return GS_ERR_INVALID_ARGUMENT;
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
  r = d->cuEventRecord(kind == RecordKind::kBegin ? sl.begin : sl.end, s);
  if (r != CUDA_SUCCESS) return Fail(p, r, cu);
  if (kind == RecordKind::kBegin) {
    sl.begin_from.store(0, std::memory_order_relaxed);
    sl.begin_stream.store(stream, std::memory_order_relaxed);
    sl.anchor_gen.store(p->current_gen.load(std::memory_order_acquire), std::memory_order_relaxed);
    sl.state.fetch_or(kBeginPending | kOpen, std::memory_order_release);
    return GS_OK;
  }
  if (kind == RecordKind::kNext) {
    // Before the end is published, so a harvest that sees this span closed
    // also sees the next one open.
    Slot& nx = p->slots[next];
    nx.begin_from.store(slot + 1, std::memory_order_relaxed);
    nx.begin_stream.store(stream, std::memory_order_relaxed);
    nx.anchor_gen.store(p->current_gen.load(std::memory_order_acquire), std::memory_order_relaxed);
    nx.state.fetch_or(kOpen, std::memory_order_release);
  }
  sl.end_stream.store(stream, std::memory_order_relaxed);
  sl.end_seq.store(p->next_end_seq.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
  sl.state.fetch_or(kEndPending, std::memory_order_relaxed);
  sl.state.fetch_and(~kOpen, std::memory_order_release);
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
  // From here on every return but the last leaves the guard to release
  // whatever the pool holds by then.
  gs::CreateGuard p(new (std::nothrow) gs_pool);
  try {
    if (!p.get()) throw std::bad_alloc();
    p->slots.reset(new gs::Slot[slots]);
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
      return gs::SetError(err, GS_ERR_DRIVER, r, "making the context of device %d current", device);
    }
    const uint32_t total = 2 * slots + gs::kAnchors;
    for (uint32_t k = 0; k < total; ++k) {
      CUevent* e = k < 2 * slots ? (k % 2 ? &p->slots[k / 2].end : &p->slots[k / 2].begin)
                                 : &p->anchors[k - 2 * slots].event;
      r = d->cuEventCreate(e, CU_EVENT_DEFAULT);
      if (r != CUDA_SUCCESS) {
        *e = nullptr;
        return gs::SetError(err, GS_ERR_DRIVER, r, "cuEventCreate (event %u of %u, device %d)",
                            k + 1, total, device);
      }
    }
    r = d->cuStreamCreate(&p->anchor_stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
      p->anchor_stream = nullptr;
      return gs::SetError(err, GS_ERR_DRIVER, r, "cuStreamCreate (anchor stream, device %d)", device);
    }
    // The first anchor, so the first harvest can promote it.
    r = gs::RecordAnchor(p.get());
    if (r != CUDA_SUCCESS) {
      return gs::SetError(err, GS_ERR_DRIVER, r, "cuEventRecord (anchor, device %d)", device);
    }
    gs::StartCalibration(p.get());
  }
  if (err) *err = gs_error{};
  *out = p.Dismiss();
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
  return gs::Record(pool, slot, 0, stream, cu_result, gs::RecordKind::kBegin);
}

gs_status gs_pool_record_end(gs_pool* pool, uint32_t slot, uint64_t stream, int32_t* cu_result) {
  return gs::Record(pool, slot, 0, stream, cu_result, gs::RecordKind::kEnd);
}

gs_status gs_pool_record_next(gs_pool* pool, uint32_t slot, uint32_t next, uint64_t stream,
                              int32_t* cu_result) {
  return gs::Record(pool, slot, next, stream, cu_result, gs::RecordKind::kNext);
}

}  // extern "C"

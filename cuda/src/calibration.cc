// The event-offset calibration (gs_pool_event_offset_ns): event pairs around
// a %globaltimer spin kernel, queued at create on the pool's private stream
// and read by the first harvest that finds them done.
#include <algorithm>

#include "pool_internal.h"
#include "spin_ptx.h"

namespace gs {
namespace {

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
const char kCalibrationPtx[] = GS_PTX_MODULE_HEAD R"(
.visible .entry gs_calibrate_wait(
    .param .u64 gs_calibrate_wait_ns
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [gs_calibrate_wait_ns];
)" GS_PTX_SPIN("$L_wait", "%rd1", "%rd2", "%rd3", "%rd4", "%p1") R"(    ret;
}
)";

}  // namespace

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

}  // namespace gs

extern "C" int64_t gs_pool_event_offset_ns(const gs_pool* pool) {
  return pool ? pool->offset_ns.load(std::memory_order_acquire) : -1;
}

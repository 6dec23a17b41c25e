// The launch watch: launch_watch.h.
#include "launch_watch.h"

#include "cupti_subset.h"

namespace gs {

LaunchWatch& Watch() {
  static LaunchWatch* w = new LaunchWatch;  // leaked: CUPTI's threads may outlive static destructors
  return *w;
}

LaunchWatch::Launch LaunchWatch::KindOf(bool runtime, uint32_t cbid) {
  if (!runtime) {
    switch (cbid) {
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
      case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz:
        return Launch::kGraph;
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
      case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        return Launch::kKernel;
    }
    return Launch::kOther;
  }
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
      return Launch::kGraph;
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
      return Launch::kKernel;
  }
  return Launch::kOther;
}

void LaunchWatch::Begin(uint32_t own_tid, uint32_t own_pthread) {
  own_tid_ = own_tid;
  own_pthread_ = own_pthread;
  on_ = true;
}

uint32_t LaunchWatch::Own(uint32_t tid) const {
  return tid == own_pthread_.load() && own_tid_.load() != 0 ? own_tid_.load() : tid;
}

LaunchWatch::Launcher* LaunchWatch::Of(uint32_t tid, uint32_t pthread) {
  for (size_t i = 0; i < n_; i++) {
    Launcher& l = launchers_[i];
    if (l.tid == tid || l.pthread == pthread || l.tid == pthread || l.pthread == tid) return &l;
  }
  if (n_ == kMaxWatched) {
    overflow_ = true;
    return nullptr;
  }
  Launcher& l = launchers_[n_++];
  l = Launcher{tid, pthread, 0, 0, 0};
  return &l;
}

void LaunchWatch::Count(uint32_t tid, bool runtime, Launch launch) {
  if (!on_.load() || tid == own_tid_.load() || tid == own_pthread_.load()) return;
  switch (launch) {
    case Launch::kGraph: {
      std::lock_guard<gs::RankedMutex> l(mu_);
      if (Launcher* x = Of(tid, tid)) (runtime ? x->runtime : x->driver)++;
      break;
    }
    case Launch::kKernel:
      foreign_launches_++;
      break;
    case Launch::kOther:
      break;
  }
}

void LaunchWatch::Guarded(uint32_t tid, uint32_t pthread) {
  if (!on_.load()) return;
  std::lock_guard<gs::RankedMutex> l(mu_);
  if (Launcher* x = Of(tid, pthread)) x->guarded++;
}

void LaunchWatch::Settle() {
  std::lock_guard<gs::RankedMutex> l(mu_);
  uint64_t n = overflow_ ? 1 : 0;
  uint32_t first = 0;
  for (size_t i = 0; i < n_; i++) {
    const Launcher& x = launchers_[i];
    uint64_t seen = x.runtime > x.driver ? x.runtime : x.driver;
    if (seen > x.guarded) {
      n += seen - x.guarded;
      if (first == 0) first = x.tid;
    }
  }
  foreign_graph_launches_ = n;
  foreign_thread_ = first;
}

void LaunchWatch::Reset() {
  foreign_launches_ = 0;
  foreign_graph_launches_ = 0;
  foreign_thread_ = 0;
  std::lock_guard<gs::RankedMutex> l(mu_);
  n_ = 0;
  overflow_ = false;
}

}  // namespace gs

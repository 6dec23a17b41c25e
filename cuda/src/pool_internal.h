// Internal: the event pool's state (struct gs_pool) and the helpers its
// files share: pool.cc (create, destroy, slots, records, capture checks),
// anchor.cc (host-clock anchors), calibration.cc (the event-offset
// calibration) and harvest.cc (batched harvest). Not a public header.
#ifndef GPUSPANS_CUDA_SRC_POOL_INTERNAL_H_
#define GPUSPANS_CUDA_SRC_POOL_INTERNAL_H_

#include <math.h>
#include <stdint.h>

#include <atomic>
#include <memory>

#include "driver.h"
#include "gpuspans/gpuspans.h"

namespace gs {

constexpr int kAnchors = 4;  // a slot's anchor stays usable for 3 re-anchors
constexpr int64_t kDefaultAnchorIntervalNs = 500 * 1000 * 1000;
// Event pairs around an empty kernel that measure the event-to-kernel
// offset; the median is taken, so a few preempted pairs do not matter.
constexpr int kCalibrationPairs = 31;

// Slot::state bits. kBeginPending / kEndPending: the event was recorded and
// not yet seen complete (destroy must query it). kOpen: begin recorded, end
// not yet, so a harvest reports the span in flight whatever the events say.
constexpr uint32_t kBeginPending = 1, kEndPending = 2, kOpen = 4;

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
  // The slot (plus one) whose end event is this span's begin
  // (gs_pool_record_next); 0: this slot's own begin event.
  std::atomic<uint32_t> begin_from{0};
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

inline void SetCu(int32_t* cu, CUresult r) {
  if (cu) *cu = r;
}

inline int64_t MsToNs(float ms) { return llround(static_cast<double>(ms) * 1e6); }

// pool.cc.
//
// Fail turns a failed driver call into a status, killing the pool on a sticky
// error so no later call touches the driver.
gs_status Fail(gs_pool* p, CUresult r, int32_t* cu);
// Dead reports the error that killed the pool.
gs_status Dead(gs_pool* p, int32_t* cu);

// anchor.cc. The harvester's (create's, before the pool is shared).
//
// RecordAnchor records the next anchor on the private stream and notes the
// host time once the record returns.
CUresult RecordAnchor(gs_pool* p);
// MaintainAnchor promotes a pending anchor once complete and records a new
// one when the current is too old. Only a sticky error is returned.
CUresult MaintainAnchor(gs_pool* p);

// calibration.cc. The harvester's (create's, before the pool is shared).
//
// StartCalibration enqueues the calibration pairs on the pool's private
// stream; any failure leaves the offset unknown (-1).
void StartCalibration(gs_pool* p);
// MaintainCalibration reads the pairs once the last is done and publishes
// their median. Only a sticky error is returned.
CUresult MaintainCalibration(gs_pool* p);

}  // namespace gs

#endif  // GPUSPANS_CUDA_SRC_POOL_INTERNAL_H_

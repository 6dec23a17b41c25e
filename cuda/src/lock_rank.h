// Internal: the kernel tracer's locks and their order, said once. A thread
// takes a lock only while every lock it holds ranks lower; the ranks:
//
//   kRankTracer   Tracer::mu: open, close, enable (tracer.cc)
//   kRankFlush    Tracer::flush_mu: the attached tracer's flush thread
//   kRankBuffers  Tracer::buf_mu: the activity buffers lent to CUPTI
//   kRankRing     Tracer::ring_mu: the records awaiting gs_tracer_read
//   kRankNames    Tracer::name_mu: the kernel name table
//   kRankWatch    LaunchWatch::mu_: a window's launches by thread
//   kRankGuard    the launch guard's waiters (launch_guard.cc)
//
// The window's close holds Tracer::mu while CUPTI delivers its last
// records on the same thread (buffers, ring, names, watch) and while it
// lets guarded launches go on (guard); nothing else nests. RankedMutex
// keeps each thread's held ranks and counts a lock taken out of order
// (LockRankViolations, with the first one named): the tests fail on any,
// as Go's runtime checks its lockrank.go order in its own builds. It never
// aborts: a serving binary's telemetry must not take it down.
#ifndef GPUSPANS_CUDA_SRC_LOCK_RANK_H_
#define GPUSPANS_CUDA_SRC_LOCK_RANK_H_

#include <stdint.h>

#include <mutex>

namespace gs {

enum LockRank : uint8_t {
  kRankTracer = 1,
  kRankFlush,
  kRankBuffers,
  kRankRing,
  kRankNames,
  kRankWatch,
  kRankGuard,
};

// RankedMutex is a std::mutex of a rank (BasicLockable, for
// std::lock_guard, std::unique_lock and std::condition_variable_any).
class RankedMutex {
 public:
  explicit RankedMutex(LockRank rank) : rank_(rank) {}
  RankedMutex(const RankedMutex&) = delete;
  RankedMutex& operator=(const RankedMutex&) = delete;
  void lock();
  void unlock();

 private:
  std::mutex mu_;
  const LockRank rank_;
};

// LockRankViolations counts the locks taken out of order in the process,
// and writes the first into why (cap bytes, NUL-terminated).
uint64_t LockRankViolations(char* why, size_t cap);

}  // namespace gs

#endif  // GPUSPANS_CUDA_SRC_LOCK_RANK_H_

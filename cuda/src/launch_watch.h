// Internal: the launch watch of a kernel window. A window's detach beside
// another thread's CUDA graph replay lost the process's CUDA context on an
// H200, so a window counts, by thread, the graph replays of other threads
// it saw (CUPTI's records or callbacks of the launch calls) against those
// that passed the launch guard (launch_guard.h); any surplus is unguarded,
// and the window is then not detached (tracer.cc, CloseWindow).
#ifndef GPUSPANS_CUDA_SRC_LAUNCH_WATCH_H_
#define GPUSPANS_CUDA_SRC_LAUNCH_WATCH_H_

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include "lock_rank.h"

namespace gs {

// LaunchWatch is the process's one watch (Watch()). Begin and End are the
// window's, on its thread; Count comes from CUPTI's threads and the
// launching threads' callbacks, Guarded from the guard's enter. mu_ is
// kRankWatch (lock_rank.h).
class LaunchWatch {
 public:
  // Launch sorts an API call.
  enum class Launch { kOther, kKernel, kGraph };
  // KindOf sorts a call of the runtime (runtime) or the driver by its
  // CUPTI callback id.
  static Launch KindOf(bool runtime, uint32_t cbid);

  // Begin starts watching for the window of the thread named own_tid
  // (gettid) or own_pthread (pthread_self cut to 32 bits, where CUPTI kept
  // its default thread id type); End stops.
  void Begin(uint32_t own_tid, uint32_t own_pthread);
  void End() { on_.store(false); }
  bool On() const { return on_.load(); }
  // Own maps a thread id of a record to gettid's when it names the
  // window's thread by its pthread.
  uint32_t Own(uint32_t tid) const;
  // Count notes a launch of thread tid, of the runtime's or the driver's.
  void Count(uint32_t tid, bool runtime, Launch launch);
  // Guarded notes a launch of the calling thread through the guard.
  void Guarded(uint32_t tid, uint32_t pthread);
  // Settle sets ForeignGraphLaunches and ForeignThread, once every record
  // of the window is in.
  void Settle();
  // Reset forgets the last window's counts, for a new open.
  void Reset();

  uint64_t ForeignLaunches() const { return foreign_launches_.load(); }
  uint64_t ForeignGraphLaunches() const { return foreign_graph_launches_.load(); }
  uint32_t ForeignThread() const { return foreign_thread_.load(); }

 private:
  // Graph launches of one other thread in this window: those the records
  // show, by the runtime's and the driver's calls (one replay may show as
  // both), and those passed through the launch guard.
  struct Launcher {
    uint32_t tid, pthread;
    uint64_t runtime, driver, guarded;
  };
  // Past kMaxWatched threads nothing is told apart (overflow_).
  static constexpr size_t kMaxWatched = 64;
  Launcher* Of(uint32_t tid, uint32_t pthread);  // caller holds mu_

  std::atomic<bool> on_{false};
  std::atomic<uint32_t> own_tid_{0}, own_pthread_{0};
  std::atomic<uint64_t> foreign_launches_{0}, foreign_graph_launches_{0};
  std::atomic<uint32_t> foreign_thread_{0};
  RankedMutex mu_{kRankWatch};
  Launcher launchers_[kMaxWatched];
  size_t n_ = 0;
  bool overflow_ = false;
};

// Watch is the process's launch watch (never destroyed).
LaunchWatch& Watch();

}  // namespace gs

#endif  // GPUSPANS_CUDA_SRC_LAUNCH_WATCH_H_

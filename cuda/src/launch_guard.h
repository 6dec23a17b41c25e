// Internal: the launch guard (gpuspans/tracer.h, gs_launch_guard_enter,
// whose functions launch_guard.cc defines):
// threads other than the stepping thread pass their CUDA graph launches
// through it, and a kernel window's attach and detach hold new ones off
// and wait for those in flight (Quiesce), so none overlaps them.
#ifndef GPUSPANS_CUDA_SRC_LAUNCH_GUARD_H_
#define GPUSPANS_CUDA_SRC_LAUNCH_GUARD_H_

#include <stdint.h>

#include "gpuspans/gpuspans.h"

namespace gs {

// Quiesce holds new guarded launches off and waits for those in flight;
// false (nothing held) when some are still in flight after 20 ms, or at
// once when one has been for longer. Unquiesce lets them go on; call it
// after each Quiesce that returned true.
bool Quiesce();
void Unquiesce();

// GuardHeld is a Quiesce's refusal for op (then: what the window does),
// GS_ERR_BUSY naming the thread inside the guard longest. go/cuda tells
// it from other GS_ERR_BUSY by "the launch guard is held".
gs_status GuardHeld(gs_error* err, const char* op, const char* then);

// GuardState is the guard now, as gs_tracer_stats' guard_* fields say.
struct GuardState {
  uint64_t launches, waits, unmatched_exits, backoffs;
  int64_t inflight, held_ns;
  uint32_t holder, unmatched_thread;
};
GuardState GuardNow();

// InLaunchGuard reports whether the calling thread is between
// gs_launch_guard_enter and gs_launch_guard_exit: the fake CUPTI tells
// guarded replays from others by it.
bool InLaunchGuard();

}  // namespace gs

#endif  // GPUSPANS_CUDA_SRC_LAUNCH_GUARD_H_

// The launch guard: launch_guard.h, and gpuspans/tracer.h's contract of
// gs_launch_guard_enter and gs_launch_guard_exit.
#include "launch_guard.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "driver.h"
#include "launch_watch.h"
#include "lock_rank.h"

namespace gs {
namespace {

pid_t GuardThread() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Each thread's depth is its own (g_guard_depth), so an exit without its
// enter is refused and can never drive inflight below zero; the holders
// are kept in a small table so that a guard left held can be named.
struct Guard {
  std::atomic<int64_t> inflight{0};
  std::atomic<bool> closing{false};
  std::atomic<uint64_t> launches{0}, waits{0};
  std::atomic<uint64_t> unmatched{0};        // exits refused: no enter on that thread
  std::atomic<uint32_t> unmatched_thread{0}; // the latest thread refused
  std::atomic<uint64_t> backoffs{0};         // quiesces refused at once, without a wait
  // The outermost enter of each thread inside the guard: its thread id and
  // since when (CLOCK_MONOTONIC ns); tid 0 is a free slot. A holder past
  // the table is counted in inflight but not named.
  static constexpr int kHolders = 64;
  struct Holder {
    std::atomic<uint32_t> tid{0};
    std::atomic<int64_t> since{0};
  } holders[kHolders];
  RankedMutex mu{kRankGuard};  // closing's waiters
  std::condition_variable_any cv;
};

thread_local int g_guard_depth = 0;
thread_local int g_guard_slot = -1;  // this thread's Guard::holders entry, -1: none

// The forking thread, alone in its child, is inside no guard there.
void ForgetGuardDepth() {
  g_guard_depth = 0;
  g_guard_slot = -1;
}

Guard& G() {
  static Guard* g = new Guard;  // leaked: guarded launches may outlive static destructors
  return *g;
}

int64_t MonoNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A child forked while a window's attach or detach held the guard has no
// thread left to release it, nor any of the holders.
__attribute__((constructor)) void ResetGuardInForks() {
  pthread_atfork(nullptr, nullptr, [] {
    Guard& g = G();
    g.closing.store(false);
    g.inflight.store(0);
    for (Guard::Holder& h : g.holders) h.tid.store(0);
    ForgetGuardDepth();
  });
}

// kQuiesceWait bounds how long a detach waits for guarded launches in
// flight (a graph launch takes microseconds on the host) before it gives
// up for this step. A thread inside the guard for longer than that holds
// it past any launch (an exit lost to an exception, or a hung call): then
// quiesces refuse at once, without a wait, until it leaves, so that a
// guard left held costs the stepping thread one bounded wait, not one
// every step.
constexpr auto kQuiesceWait = std::chrono::milliseconds(20);

// LongestHolder names the thread inside the guard longest, and for how
// long; 0 and 0 when none is.
void LongestHolder(uint32_t* tid, int64_t* held) {
  *tid = 0;
  *held = 0;
  int64_t now = MonoNs();
  for (Guard::Holder& h : G().holders) {
    uint32_t id = h.tid.load();
    int64_t since = h.since.load();
    if (id != 0 && since != 0 && now - since > *held) {
      *held = now - since;
      *tid = id;
    }
  }
}

}  // namespace

// Quiesce holds new guarded launches off and waits for those in flight;
// false (nothing held) when some are still in flight after kQuiesceWait,
// or at once when one has been for longer.
bool Quiesce() {
  Guard& g = G();
  g.closing.store(true);
  if (g.inflight.load() > 0) {
    uint32_t tid;
    int64_t held;
    LongestHolder(&tid, &held);
    if (held > std::chrono::nanoseconds(kQuiesceWait).count()) {
      g.backoffs++;
      Unquiesce();
      return false;
    }
  }
  auto deadline = std::chrono::steady_clock::now() + kQuiesceWait;
  while (g.inflight.load() > 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      Unquiesce();
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}


// GuardHeld is a quiesce's refusal, naming the thread inside the guard
// longest. go/cuda tells it from other GS_ERR_BUSY by "the launch guard is
// held".
gs_status GuardHeld(gs_error* err, const char* op, const char* then) {
  Guard& g = G();
  uint32_t holder = 0;
  int64_t held = 0;
  LongestHolder(&holder, &held);
  return SetError(err, GS_ERR_BUSY, 0,
                  "%s: the launch guard is held by thread %u for %.1f ms (%lld launches inside it; a window waits "
                  "%lld ms for them, and not at all while one stays longer): the window %s at a later step",
                  op, holder, static_cast<double>(held) / 1e6, static_cast<long long>(g.inflight.load()),
                  static_cast<long long>(kQuiesceWait.count()), then);
}

// Unquiesce lets guarded launches go on.
void Unquiesce() {
  Guard& g = G();
  {
    std::lock_guard<gs::RankedMutex> l(g.mu);
    g.closing.store(false);
  }
  g.cv.notify_all();
}


GuardState GuardNow() {
  Guard& g = G();
  GuardState s{g.launches.load(), g.waits.load(), g.unmatched.load(), g.backoffs.load(), g.inflight.load(), 0, 0,
               g.unmatched_thread.load()};
  LongestHolder(&s.holder, &s.held_ns);
  return s;
}

bool InLaunchGuard() { return g_guard_depth > 0; }

}  // namespace gs

extern "C" void gs_launch_guard_enter(void) {
  gs::Guard& g = gs::G();
  if (gs::g_guard_depth++ == 0) {
    uint32_t me = static_cast<uint32_t>(gs::GuardThread());
    for (int i = 0; i < gs::Guard::kHolders; i++) {
      uint32_t free = 0;
      if (g.holders[i].tid.compare_exchange_strong(free, me)) {
        g.holders[i].since.store(gs::MonoNs());
        gs::g_guard_slot = i;
        break;
      }
    }
  }
  g.launches++;
  for (bool waited = false;;) {
    g.inflight.fetch_add(1);
    if (!g.closing.load()) {
      // A window's open and close quiesce the guard, so a launch that
      // enters while it watches is all inside its collection.
      if (gs::Watch().On()) {
        static thread_local uint32_t tid = static_cast<uint32_t>(gs::GuardThread());
        gs::Watch().Guarded(tid, static_cast<uint32_t>(reinterpret_cast<uintptr_t>(pthread_self())));
      }
      return;
    }
    g.inflight.fetch_sub(1);  // a detach is under way: wait for its end
    if (!waited) {
      waited = true;
      g.waits++;
    }
    std::unique_lock<gs::RankedMutex> l(g.mu);
    g.cv.wait_for(l, std::chrono::milliseconds(1), [&] { return !g.closing.load(); });
  }
}

extern "C" int32_t gs_launch_guard_depth(void) { return gs::g_guard_depth; }

extern "C" void gs_launch_guard_exit(void) {
  gs::Guard& g = gs::G();
  if (gs::g_guard_depth <= 0) {
    // An exit this thread never entered: dropping inflight for it would let
    // a detach run during another thread's guarded replay.
    g.unmatched++;
    g.unmatched_thread.store(static_cast<uint32_t>(gs::GuardThread()));
    return;
  }
  if (--gs::g_guard_depth == 0 && gs::g_guard_slot >= 0) {
    g.holders[gs::g_guard_slot].since.store(0);
    g.holders[gs::g_guard_slot].tid.store(0);
    gs::g_guard_slot = -1;
  }
  g.inflight.fetch_sub(1);
}

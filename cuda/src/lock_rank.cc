// The locks' order: lock_rank.h.
#include "lock_rank.h"

#include <stdio.h>
#include <string.h>

#include <atomic>

namespace gs {
namespace {

thread_local uint32_t g_held = 0;  // bit r: a lock of rank r is held
std::atomic<uint64_t> g_violations{0};
char g_first[160];
std::atomic<bool> g_first_set{false};

}  // namespace

void RankedMutex::lock() {
  uint32_t above = g_held & ~((2u << rank_) - 1);  // held ranks >= rank_
  if ((g_held >> rank_) & 1 || above) {
    if (g_violations.fetch_add(1) == 0 && !g_first_set.exchange(true)) {
      int held = 31 - __builtin_clz(g_held);
      snprintf(g_first, sizeof g_first, "took a lock of rank %d while holding one of rank %d", rank_, held);
    }
  }
  mu_.lock();
  g_held |= 1u << rank_;
}

void RankedMutex::unlock() {
  g_held &= ~(1u << rank_);
  mu_.unlock();
}

uint64_t LockRankViolations(char* why, size_t cap) {
  uint64_t n = g_violations.load();
  if (why && cap > 0) {
    const char* s = n && g_first_set.load() ? g_first : "";
    strncpy(why, s, cap - 1);
    why[cap - 1] = 0;
  }
  return n;
}

}  // namespace gs

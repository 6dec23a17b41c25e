// The gs_testing_* hooks that read a pool's internals, for tests only
// (//cuda:core_testing and go/cuda/cudatest's testing amalgamation, never
// the core): they need struct gs_pool, which only the pool's own files and
// this one see. See gpuspans_testing.h.
#include "gpuspans/gpuspans_testing.h"
#include "pool_internal.h"

extern "C" uint64_t gs_testing_pool_event(const gs_pool* pool, uint32_t slot, int32_t end) {
  if (!pool || slot >= pool->nslots) return 0;
  const gs::Slot& s = pool->slots[slot];
  return reinterpret_cast<uint64_t>(end ? s.end : s.begin);
}

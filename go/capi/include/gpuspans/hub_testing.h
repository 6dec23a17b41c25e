/*
 * The C ABI's test hooks: only in a library built for tests (go build
 * -tags gpuspans_testing; the shipped library has neither), declared apart
 * from gpuspans/hub.h so that nothing built against the shipped header can
 * name them. The fake CUDA driver's and CUPTI's hooks, which the same build
 * exports, are the core's (cuda/include/gpuspans/gpuspans_testing.h,
 * tracer_testing.h).
 */
#ifndef GPUSPANS_HUB_TESTING_H_
#define GPUSPANS_HUB_TESTING_H_

#include "gpuspans/hub.h"

#ifdef __cplusplus
extern "C" {
#endif

/* gs_hub_testing_count_crossings(1) makes every exported function count
 * its calls, and gs_hub_testing_crossings returns the count (since the
 * library loaded); so a test can prove that a disabled path made no call.
 * Thread-safe. */
void gs_hub_testing_count_crossings(int32_t on);
uint64_t gs_hub_testing_crossings(void);

/* gs_hub_testing_ring_diff drives hub through ops random operations from
 * seed (steps, next steps and lane operations, each through the C span
 * path or Go's at random, some with a failing record; kernel spans,
 * harvests, levels and periods, a captured stream, installs and
 * uninstalls, through Go) and compares every word of its
 * rings with the protocol's model (go/internal/spanring/spanringtest)
 * after each. The hub needs one recorder open on the fake driver at level
 * kernel on device 0's stream 0x7e570000, and nothing else calling it
 * meanwhile. 0: every word as the model says (buf says what ran); 1:
 * "diverged after op N", the difference and the operations before it in
 * buf; 2: a hub it cannot drive so. buf is a C string cut to cap. */
int32_t gs_hub_testing_ring_diff(gs_hub hub, uint64_t ops, int64_t seed, char* buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* GPUSPANS_HUB_TESTING_H_ */

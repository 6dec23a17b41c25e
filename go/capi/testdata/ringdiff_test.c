// One ring, two writers, one protocol: gs_hub_testing_ring_diff sends
// random step and lane operations to the C span path (spanpath.c) or Go's
// at random, among harvests, levels, captures, failing records and
// re-installs, and compares every word of the rings with
// go/internal/spanring/spanringtest's model after each. go/capi's
// TestRingDifferential runs this against the tests' library:
//   ringdiff_test OPS SEED...
// with a ring of 8 slots and 3 lanes, so that slots run out, shared
// boundaries lend their end events, and lane begins find lanes open.
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "gpuspans/gpuspans_testing.h"
#include "gpuspans/hub.h"
#include "gpuspans/hub_testing.h"

static char msg[1 << 16];

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s OPS SEED...\n", argv[0]);
    return 2;
  }
  unsigned long long ops = strtoull(argv[1], NULL, 10);
  gs_testing_use_fake_driver();
  for (int i = 2; i < argc; i++) {
    const char* names[] = {"prefill", "decode", "sample"};
    gs_hub_options o = gs_hub_options_init();
    o.lanes = names;
    o.num_lanes = 3;
    o.level = GS_HUB_LEVEL_KERNEL;
    o.kernel_timing = GS_HUB_KERNEL_TIMING_EVENTS;  // so that steps may be taken in C
    o.kernel_span_every = 3;
    o.slots = 8;
    o.quiet = 1;
    gs_hub hub = 0;
    gs_hub_status st = gs_hub_create(&o, &hub);
    CHECK(st == GS_HUB_OK, "gs_hub_create: %s", gs_hub_status_name(st));
    if (st != GS_HUB_OK) break;
    // A stream far from those the fake driver makes (from 0x5000, one a
    // pool): a made one of the same value would end the pretend capture.
    st = gs_hub_install_cuda(hub, 0, 0x7e570000);
    CHECK(st == GS_HUB_OK, "install: %s", last_error(hub));
    st = gs_hub_begin_step(hub);  // opens the pool on the fake driver
    CHECK(st == GS_HUB_OK, "step: %s", last_error(hub));
    long long seed = strtoll(argv[i], NULL, 10);
    int32_t r = gs_hub_testing_ring_diff(hub, ops, seed, msg, sizeof msg);
    CHECK(r == 0, "seed %lld: %s", seed, msg);
    if (r == 0) printf("seed %lld: %s\n", seed, msg);
    gs_hub_close(hub);
  }
  if (failures) return 1;
  printf("PASS\n");
  return 0;
}

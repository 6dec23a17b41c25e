// Kernel windows beside the C span path, on the fake driver and the fake
// CUPTI: steps go through hub.h's inline calls, so spanpath.c takes them
// while Go's c_step word allows and sends them to Go otherwise, with a
// background harvester running and a second thread switching kernel
// timing between auto and events and the level between Step and Kernel.
// docs/gpu-facts.md's CUPTI rules must hold: every CUPTI call on the
// stepping thread (the one that replays the graph), no finalize after a
// replay made while attached with collection off. And the word must be right: once kernel
// timing is events a step detaches CUPTI (a step taken in C while a
// window is open would leave it attached) and later steps stay in C; once
// auto is back, windows open again (steps taken in C would open none).
// go/capi's TestKernelWindowsBesideTheCSpanPath runs it against the tests'
// library.
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "check.h"
#include "gpuspans/gpuspans_testing.h"
#include "gpuspans/hub.h"
#include "gpuspans/hub_testing.h"
#include "gpuspans/tracer_testing.h"

#define CHECK_OK(call)                                                                         \
  do {                                                                                         \
    gs_hub_status st_ = (call);                                                                \
    CHECK(st_ == GS_HUB_OK, "%s = %s: %s", #call, gs_hub_status_name(st_), last_error(hub)); \
  } while (0)

static gs_hub hub;
static atomic_int stop;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// step is one engine step on this thread: a lane around a graph replay,
// then 30 us of host work, so that a 1 ms window period passes in 33 steps.
static void step(int i) {
  CHECK_OK(gs_hub_begin_step(hub));
  CHECK_OK(gs_hub_lane_begin(hub, 0));
  int32_t rc = gs_testing_cupti_graph_launch();
  CHECK(rc == 0, "step %d: the graph replay failed with %d: a detach broke it", i, rc);
  CHECK_OK(gs_hub_lane_end(hub, 0));
  for (int64_t end = now_ns() + 30000; now_ns() < end;) {
  }
}

// steps_until steps until CUPTI is attached (1) or not (0), at most 50
// times: a window opens or closes at the first step that finds the harvest
// lock free, which the harvester holds now and then.
static void steps_until(int attached, const char* what) {
  int i = 0;
  while (i < 50 && gs_testing_cupti_attached() != attached) step(-1 - i++);
  CHECK(gs_testing_cupti_attached() == attached, "%s: not after %d steps", what, i);
}

static void* toggle(void* arg) {
  (void)arg;
  for (int i = 0; !atomic_load(&stop); i++) {
    switch (i % 4) {
      case 0: gs_hub_set_level(hub, GS_HUB_LEVEL_STEP); break;
      case 1: gs_hub_set_level(hub, GS_HUB_LEVEL_KERNEL); break;
      case 2: gs_hub_set_kernel_timing(hub, GS_HUB_KERNEL_TIMING_EVENTS); break;
      default: gs_hub_set_kernel_timing(hub, GS_HUB_KERNEL_TIMING_AUTO); break;
    }
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

int main(void) {
  gs_testing_use_fake_driver();
  gs_testing_use_fake_cupti();
  const char* names[] = {"decode"};
  gs_hub_options o = gs_hub_options_init();
  o.lanes = names;
  o.num_lanes = 1;
  o.level = GS_HUB_LEVEL_KERNEL;
  o.kernel_timing = GS_HUB_KERNEL_TIMING_AUTO;
  o.kernel_window_every_ns = 1000000;
  o.kernel_window_steps = 3;
  o.quiet = 1;
  gs_hub_status st = gs_hub_create(&o, &hub);
  CHECK(st == GS_HUB_OK, "gs_hub_create: %s", gs_hub_status_name(st));
  if (st != GS_HUB_OK) return 1;
  CHECK_OK(gs_hub_install_cuda(hub, 0, 0x5100));
  CHECK_OK(gs_hub_begin_step(hub));  // opens the pool
  gs_testing_cupti_expect_thread(gs_testing_thread_id());
  CHECK_OK(gs_hub_start_harvester(hub, 100));

  // Everything at once.
  pthread_t t;
  pthread_create(&t, NULL, toggle, NULL);
  for (int i = 0; i < 3000; i++) step(i);
  atomic_store(&stop, 1);
  pthread_join(t, NULL);

  // A window open now, then events: a step detaches CUPTI, here (the
  // first that finds the harvest lock free: a few at most); the steps
  // after it stay in C.
  CHECK_OK(gs_hub_set_level(hub, GS_HUB_LEVEL_KERNEL));
  CHECK_OK(gs_hub_set_kernel_timing(hub, GS_HUB_KERNEL_TIMING_AUTO));
  CHECK_OK(gs_hub_request_kernel_window(hub));
  steps_until(1, "a window opens after a request");
  CHECK_OK(gs_hub_set_kernel_timing(hub, GS_HUB_KERNEL_TIMING_EVENTS));
  steps_until(0, "CUPTI detaches at events");
  gs_hub_testing_count_crossings(1);
  uint64_t before = gs_hub_testing_crossings();
  for (int i = 0; i < 100; i++) step(i);
  uint64_t crossed = gs_hub_testing_crossings() - before;
  CHECK(crossed == 0, "100 steps at events with a harvester entered Go %llu times", (unsigned long long)crossed);

  // Auto again: windows open (a step in C would never open one).
  int64_t enables0, disables0, enables, disables;
  gs_testing_cupti_calls(&enables0, &disables0);
  CHECK_OK(gs_hub_set_kernel_timing(hub, GS_HUB_KERNEL_TIMING_AUTO));
  for (int i = 0; i < 300; i++) step(i);
  gs_testing_cupti_calls(&enables, &disables);
  CHECK(enables > enables0, "no window opened in 300 steps (9 ms) at auto");

  // Events again, and the rules over the whole run.
  CHECK_OK(gs_hub_set_kernel_timing(hub, GS_HUB_KERNEL_TIMING_EVENTS));
  steps_until(0, "CUPTI detaches at the end");
  gs_testing_cupti_calls(&enables, &disables);
  long long stray = gs_testing_cupti_stray_calls(), bad = gs_testing_cupti_bad_finalizes();
  CHECK(stray == 0, "%lld CUPTI calls off the stepping thread", stray);
  CHECK(bad == 0, "%lld finalizes after a replay made with collection off", bad);
  CHECK_OK(gs_hub_stop_harvester(hub));
  CHECK_OK(gs_hub_close(hub));
  printf("collection switched on %lld times, off %lld; %llu crossings in 100 steps at events\n",
         (long long)enables, (long long)disables, (unsigned long long)crossed);
  if (failures) return 1;
  printf("PASS\n");
  return 0;
}

// The C span path (spanpath.c) on the fake CUDA driver: lane spans
// recorded in C land as the Go path's do, every outcome counted alike.
// go/capi's TestSpanPath runs it against the tests' library twice, with
// GPUSPANS_SPAN_PATH unset (C) and =go, and compares the "summary" lines:
// the two paths must agree span for span. With the C path, lane calls make
// no crossing into Go.
#include <pthread.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "gpuspans/gpuspans_testing.h"
#include "gpuspans/hub.h"
#include "gpuspans/hub_testing.h"

#define CHECK_OK(call)                                                                         \
  do {                                                                                         \
    gs_hub_status st_ = (call);                                                                \
    CHECK(st_ == GS_HUB_OK, "%s = %s: %s", #call, gs_hub_status_name(st_), last_error(hub)); \
  } while (0)

static const uint64_t kStream = 0x5100;
static const int64_t kUs = 1000;
static int c_path;

static char json[1 << 20];

static const char* snap(gs_hub hub) {
  size_t len = 0;
  CHECK_OK(gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_JSON, json, sizeof json, &len));
  return json;
}

static long num(const char* j, const char* name) {
  char key[128];
  snprintf(key, sizeof key, "\"%s\": ", name);
  const char* p = strstr(j, key);
  return p == NULL ? -1 : strtol(p + strlen(key), NULL, 10);
}

// lane returns field ("count", "p50_ns", ...) of lane name's aggregate.
static long lane(const char* j, const char* name, const char* field) {
  char key[128];
  const char* p = strstr(j, "\"lanes\"");
  if (p == NULL) return -1;
  snprintf(key, sizeof key, "\"name\": \"%s\"", name);
  if ((p = strstr(p, key)) == NULL) return -1;
  return num(p, field);
}

// outcomes checks the accounting identity and prints the counters as a
// summary line that the two paths must print alike.
static void outcomes(gs_hub hub, const char* what) {
  const char* j = snap(hub);
  long begun = num(j, "begun"), landed = num(j, "landed"), errored = num(j, "errored");
  long busy = num(j, "dropped_slot_busy"), capt = num(j, "dropped_capturing");
  long retired = num(j, "dropped_retired"), leaked = num(j, "dropped_leaked");
  long in_flight = num(j, "in_flight");
  CHECK(begun == landed + busy + capt + retired + leaked + errored + in_flight,
        "%s: begun %ld != landed %ld + dropped %ld+%ld+%ld+%ld + errored %ld + in flight %ld", what,
        begun, landed, busy, capt, retired, leaked, errored, in_flight);
  printf("summary %s: begun %ld landed %ld slot_busy %ld capturing %ld retired %ld leaked %ld errored %ld in_flight %ld already_open %ld unknown %ld\n",
         what, begun, landed, busy, capt, retired, leaked, errored, in_flight,
         num(j, "lane_already_open_calls"), num(j, "unknown_lane_calls"));
}

static uint64_t crossings(void) { return gs_hub_testing_crossings(); }

// lanes_crossed checks that the lane calls since before made no crossing
// into Go on the C path, and one each on the Go path.
static void lanes_crossed(uint64_t before, long calls, const char* what) {
  uint64_t n = crossings() - before;
  if (c_path) {
    CHECK(n == 0, "%s: %llu crossings into Go, want 0", what, (unsigned long long)n);
  } else {
    CHECK(n == (uint64_t)calls, "%s: %llu crossings, want %ld", what, (unsigned long long)n, calls);
  }
}

static gs_hub make_hub(uint32_t slots) {
  const char* names[] = {"prefill", "decode", "sample"};
  gs_hub_options o = gs_hub_options_init();
  o.lanes = names;
  o.num_lanes = 3;
  o.level = GS_HUB_LEVEL_KERNEL;
  o.slots = slots;
  o.quiet = 1;
  gs_hub hub = 0;
  CHECK_OK(gs_hub_create(&o, &hub));
  CHECK_OK(gs_hub_install_cuda(hub, 0, kStream));
  CHECK_OK(gs_hub_begin_step(hub)); // opens the pool on the fake driver
  return hub;
}

static void drain(gs_hub hub) {
  gs_testing_fake_advance(1000 * 1000 * kUs);
  uint64_t in_flight = 1;
  CHECK_OK(gs_hub_drain(hub, 5000, &in_flight));
  CHECK(in_flight == 0, "%llu in flight after drain", (unsigned long long)in_flight);
}

enum { PREFILL = 0, DECODE = 1, SAMPLE = 2 };

// Shared boundaries and separate ones, 40 steps each: every span lands
// with the work queued between its events.
static void steady(void) {
  gs_hub hub = make_hub(0);
  uint64_t c0 = crossings();
  long calls = 0;
  for (int step = 0; step < 40; step++) {
    uint64_t c1 = crossings();
    CHECK_OK(gs_hub_next_step(hub, SAMPLE, PREFILL)); // one crossing: the step begin
    CHECK(crossings() - c1 == 1, "next_step: %llu crossings, want 1", (unsigned long long)(crossings() - c1));
    calls--; // counted below as a lane call
    gs_testing_fake_stream_work(kStream, 30 * kUs);
    CHECK_OK(gs_hub_next_lane(hub, PREFILL, DECODE));
    gs_testing_fake_stream_work(kStream, 40 * kUs);
    CHECK_OK(gs_hub_next_lane(hub, DECODE, SAMPLE));
    gs_testing_fake_stream_work(kStream, 10 * kUs);
    calls += 3;
    gs_testing_fake_advance(200 * kUs);
  }
  CHECK_OK(gs_hub_lane_end(hub, SAMPLE));
  calls++;
  lanes_crossed(c0 + 40, calls, "shared boundaries");
  drain(hub);
  const char* j = snap(hub);
  CHECK(lane(j, "prefill", "count") == 40 && lane(j, "decode", "count") == 40 && lane(j, "sample", "count") == 40,
        "shared: counts %ld %ld %ld", lane(j, "prefill", "count"), lane(j, "decode", "count"), lane(j, "sample", "count"));
  CHECK(lane(j, "prefill", "max_ns") == 30 * kUs && lane(j, "prefill", "min_ns") == 30 * kUs,
        "prefill %ld..%ld ns, want 30 us", lane(j, "prefill", "min_ns"), lane(j, "prefill", "max_ns"));
  CHECK(lane(j, "decode", "max_ns") == 40 * kUs && lane(j, "decode", "min_ns") == 40 * kUs,
        "decode %ld..%ld ns, want 40 us", lane(j, "decode", "min_ns"), lane(j, "decode", "max_ns"));
  outcomes(hub, "shared");

  c0 = crossings();
  for (int step = 0; step < 40; step++) {
    CHECK_OK(gs_hub_begin_step(hub));
    for (int l = 0; l < 3; l++) {
      CHECK_OK(gs_hub_lane_begin(hub, l));
      gs_testing_fake_stream_work(kStream, (20 + 10 * l) * kUs);
      CHECK_OK(gs_hub_lane_end(hub, l));
    }
    gs_testing_fake_advance(200 * kUs);
  }
  lanes_crossed(c0 + 40, 40 * 6, "separate lanes");
  drain(hub);
  j = snap(hub);
  // decode: 40 us shared, 30 us separate (sample's shared spans run on to
  // the next step's boundary, idle time included).
  CHECK(lane(j, "decode", "count") == 80 && lane(j, "decode", "min_ns") == 30 * kUs &&
            lane(j, "decode", "max_ns") == 40 * kUs,
        "decode: %ld spans, %ld..%ld ns", lane(j, "decode", "count"), lane(j, "decode", "min_ns"),
        lane(j, "decode", "max_ns"));
  outcomes(hub, "separate");
  CHECK_OK(gs_hub_close(hub));
  printf("ok: 240 lane spans recorded %s, each its work\n", c_path ? "in C" : "through Go");
}

// With a background harvester and kernel timing events, the steps stay in
// C too: counted and armed as Go arms them, so a whole engine step makes
// no crossing; a level change, a kernel span, a kernel timing other than
// events send steps to Go again.
static void steps_in_c(void) {
  gs_hub hub = make_hub(0);
  CHECK_OK(gs_hub_set_kernel_span_every(hub, 4));
  CHECK_OK(gs_hub_start_harvester(hub, 1000));
  // Steps stay in C once the harvester's goroutine runs (a step or two).
  for (int i = 0; c_path && i < 2000; i++) {
    uint64_t c = crossings();
    CHECK_OK(gs_hub_begin_step(hub));
    if (crossings() == c) break;
    usleep(1000);
  }
  const long step0 = num(snap(hub), "step");
  uint64_t c0 = crossings();
  int armed = 0;
  for (int step = 0; step < 40; step++) {
    CHECK_OK(gs_hub_next_step(hub, SAMPLE, DECODE));
    armed += (gs_hub_word(hub) & GS_HUB_WORD_ARMED) != 0;
    gs_testing_fake_stream_work(kStream, 40 * kUs);
    CHECK_OK(gs_hub_next_lane(hub, DECODE, SAMPLE));
    gs_testing_fake_stream_work(kStream, 10 * kUs);
    gs_testing_fake_advance(100 * kUs);
  }
  CHECK_OK(gs_hub_lane_end(hub, SAMPLE));
  lanes_crossed(c0, 81, "steps and lanes");
  CHECK(armed == 10, "%d armed steps of 40, want 10 (1 in 4)", armed);
  CHECK(num(snap(hub), "armed_steps") >= 10, "armed_steps %ld, want at least 10", num(json, "armed_steps"));
  uint64_t c1 = crossings();
  CHECK_OK(gs_hub_set_kernel_timing(hub, GS_HUB_KERNEL_TIMING_ATTACHED)); // windows are Go's: steps go there
  uint64_t c2 = crossings();
  CHECK_OK(gs_hub_begin_step(hub));
  CHECK(crossings() - c2 == 1, "a step with kernel timing attached made %llu crossings, want 1",
        (unsigned long long)(crossings() - c2));
  CHECK_OK(gs_hub_set_kernel_timing(hub, GS_HUB_KERNEL_TIMING_EVENTS));
  CHECK_OK(gs_hub_set_level(hub, GS_HUB_LEVEL_STEP));
  for (int i = 0; i < 5; i++) CHECK_OK(gs_hub_begin_step(hub));
  CHECK_OK(gs_hub_set_level(hub, GS_HUB_LEVEL_KERNEL));
  (void)c1;
  CHECK_OK(gs_hub_stop_harvester(hub));
  drain(hub);
  const char* j = snap(hub);
  CHECK(num(j, "step") == step0 + 40 + 1 + 5, "step %ld, want %ld", num(j, "step"), step0 + 46);
  CHECK(lane(j, "decode", "count") == 40 && lane(j, "decode", "min_ns") == 40 * kUs,
        "decode: %ld spans, min %ld ns", lane(j, "decode", "count"), lane(j, "decode", "min_ns"));
  outcomes(hub, "steps");
  CHECK_OK(gs_hub_close(hub));
  printf("ok: 40 steps with a harvester: stepped and armed %s\n", c_path ? "in C" : "through Go");
}

// Misuse and refusals are counted as on the Go path.
static void refusals(void) {
  gs_hub hub = make_hub(0);
  uint64_t c0 = crossings();
  CHECK_OK(gs_hub_lane_begin(hub, PREFILL));
  CHECK_OK(gs_hub_lane_begin(hub, PREFILL)); // already open: counted
  CHECK_OK(gs_hub_lane_end(hub, DECODE));    // not open: nothing
  CHECK_OK(gs_hub_next_lane(hub, DECODE, SAMPLE)); // decode not open: begins sample
  CHECK_OK(gs_hub_next_lane(hub, PREFILL, SAMPLE)); // sample open: ends prefill, counted
  CHECK_OK(gs_hub_next_lane(hub, SAMPLE, -1)); // ends sample
  lanes_crossed(c0, 6, "misuse");
  CHECK_OK(gs_hub_lane_begin(hub, 7));  // out of range: Go counts it
  CHECK_OK(gs_hub_lane_end(hub, -3));
  CHECK_OK(gs_hub_next_lane(hub, -1, 9));

  // Extreme arguments, on every call behind the inline functions: nothing
  // crashes, nothing is recorded, out-of-range lanes are counted by Go.
  const int32_t bad[] = {INT32_MIN, -2, 3, INT32_MAX};
  for (int i = 0; i < 4; i++) {
    CHECK_OK(gs_hub_lane_begin_call(hub, bad[i]));
    CHECK_OK(gs_hub_lane_end_call(hub, bad[i]));
    CHECK_OK(gs_hub_next_lane_call(hub, bad[i], bad[3 - i]));
  }
  const gs_hub made_up[] = {0, hub + 1, hub ^ 0x8000000000000000ull, ~0ull};
  for (int i = 0; i < 4; i++) {
    CHECK(gs_hub_begin_step_call(made_up[i]) == GS_HUB_ERR_BAD_HANDLE, "begin_step on a bad handle");
    CHECK(gs_hub_lane_begin_call(made_up[i], 0) == GS_HUB_ERR_BAD_HANDLE, "lane_begin on a bad handle");
    CHECK(gs_hub_lane_end_call(made_up[i], 0) == GS_HUB_ERR_BAD_HANDLE, "lane_end on a bad handle");
    CHECK(gs_hub_next_lane_call(made_up[i], 0, 1) == GS_HUB_ERR_BAD_HANDLE, "next_lane on a bad handle");
    CHECK(gs_hub_next_step_call(made_up[i], 0, 1) == GS_HUB_ERR_BAD_HANDLE, "next_step on a bad handle");
  }

  // A capturing stream: nothing recorded, a drop, no crossing.
  gs_testing_fake_set_capturing(kStream, 0);
  c0 = crossings();
  CHECK_OK(gs_hub_lane_begin(hub, DECODE));
  CHECK_OK(gs_hub_next_lane(hub, DECODE, SAMPLE));
  lanes_crossed(c0, 2, "capturing");
  gs_testing_fake_set_capturing(kStream, -1);

  // A record the driver refuses: errored, through Go's error path.
  gs_testing_fake_record_result(1 /* CUDA_ERROR_INVALID_VALUE */, 1);
  CHECK_OK(gs_hub_lane_begin(hub, DECODE));
  CHECK_OK(gs_hub_lane_begin(hub, DECODE)); // recorded
  gs_testing_fake_record_result(1, 1);
  CHECK_OK(gs_hub_next_lane(hub, DECODE, SAMPLE)); // both spans fail alike
  CHECK_OK(gs_hub_lane_end(hub, SAMPLE));
  drain(hub);
  outcomes(hub, "refusals");
  const char* j = snap(hub);
  // unknown: lane 7, next_lane(-1, 9), and of the extremes the 4 begins
  // and the 2 next_lanes to a lane past the last (a negative to names none).
  CHECK(num(j, "lane_already_open_calls") == 2 && num(j, "unknown_lane_calls") == 2 + 6,
        "already open %ld, unknown %ld; want 2 and 8", num(j, "lane_already_open_calls"), num(j, "unknown_lane_calls"));
  CHECK(num(j, "dropped_capturing") == 2 && num(j, "errored") == 3, "capturing %ld, errored %ld; want 2 and 3",
        num(j, "dropped_capturing"), num(j, "errored"));
  CHECK_OK(gs_hub_close(hub));
  printf("ok: misuse, a capturing stream and refused records counted as in Go\n");
}

// A full ring drops; a retired recorder's open lanes are dropped; a new
// install records again.
static void ring_and_retire(void) {
  gs_hub hub = make_hub(4);
  for (int i = 0; i < 6; i++) { // spans stay in flight: the clock stands still
    CHECK_OK(gs_hub_lane_begin(hub, PREFILL));
    gs_testing_fake_stream_work(kStream, 10 * kUs);
    CHECK_OK(gs_hub_lane_end(hub, PREFILL));
  }
  outcomes(hub, "full ring");
  const char* j = snap(hub);
  CHECK(num(j, "dropped_slot_busy") == 2 && num(j, "in_flight") == 4, "slot busy %ld, in flight %ld",
        num(j, "dropped_slot_busy"), num(j, "in_flight"));
  drain(hub);
  CHECK_OK(gs_hub_lane_begin(hub, DECODE));
  CHECK_OK(gs_hub_next_lane(hub, DECODE, SAMPLE));
  CHECK_OK(gs_hub_uninstall(hub, 0)); // sample's span is open: dropped, retired
  CHECK_OK(gs_hub_lane_end(hub, SAMPLE));
  CHECK_OK(gs_hub_lane_begin(hub, SAMPLE)); // no device: nothing
  CHECK_OK(gs_hub_install_cuda(hub, 0, kStream));
  CHECK_OK(gs_hub_begin_step(hub));
  CHECK_OK(gs_hub_lane_begin(hub, SAMPLE));
  gs_testing_fake_stream_work(kStream, 10 * kUs);
  CHECK_OK(gs_hub_lane_end(hub, SAMPLE));
  drain(hub);
  outcomes(hub, "retired");
  j = snap(hub);
  CHECK(num(j, "dropped_retired") == 1, "retired %ld, want 1", num(j, "dropped_retired"));
  CHECK_OK(gs_hub_close(hub));
  printf("ok: a full ring drops, a retired device's open lane is dropped, a new install records\n");
}

// Threads hammer lane calls while the stepping thread steps, installs
// the device again (a new set for the C path, the old one freed once no
// call holds it) and harvests: nothing is lost or counted twice, and no
// lane is left stuck. Calls that find a new install not yet open record
// nothing, on either path.
static gs_hub hammered;
static int stop_hammer;
static long hammer_calls;
static int hammers_started;

static void* hammer(void* arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  long n = 0;
  while (!__atomic_load_n(&stop_hammer, __ATOMIC_SEQ_CST)) {
    int a = rand_r(&seed) % 3, b = rand_r(&seed) % 3;
    switch (rand_r(&seed) % 3) {
      case 0: gs_hub_lane_begin(hammered, a); break;
      case 1: gs_hub_lane_end(hammered, a); break;
      default: gs_hub_next_lane(hammered, a, b); break;
    }
    if (++n == 1000) __atomic_add_fetch(&hammers_started, 1, __ATOMIC_SEQ_CST);
  }
  __atomic_add_fetch(&hammer_calls, n, __ATOMIC_SEQ_CST);
  return NULL;
}

static void threads(void) {
  gs_hub hub = hammered = make_hub(64);
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, hammer, (void*)(uintptr_t)(i + 1));
  while (__atomic_load_n(&hammers_started, __ATOMIC_SEQ_CST) < 4) sched_yield();
  for (int step = 1; step <= 4000; step++) {
    CHECK_OK(gs_hub_begin_step(hub));
    gs_testing_fake_advance(50 * kUs);
    if (step % 500 == 0) CHECK_OK(gs_hub_install_cuda(hub, 0, kStream)); // retires the old recorder
    sched_yield(); // the threads' calls overlap every phase
  }
  __atomic_store_n(&stop_hammer, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  CHECK_OK(gs_hub_begin_step(hub)); // opens the last install
  for (int l = 0; l < 3; l++) CHECK_OK(gs_hub_lane_end(hub, l));
  drain(hub);
  outcomes(hub, "threads (not compared)");
  // No lane is stuck open or reserving: each begins and ends.
  long already = num(snap(hub), "lane_already_open_calls"), begun = num(json, "begun");
  for (int l = 0; l < 3; l++) {
    CHECK_OK(gs_hub_lane_begin(hub, l));
    CHECK_OK(gs_hub_lane_end(hub, l));
  }
  const char* j = snap(hub);
  CHECK(num(j, "lane_already_open_calls") == already && num(j, "begun") == begun + 3,
        "after the threads: %ld more already-open calls, %ld more begun; want 0 and 3",
        num(j, "lane_already_open_calls") - already, num(j, "begun") - begun);
  CHECK_OK(gs_hub_close(hub));
  printf("ok: 4 threads made %ld lane calls beside 4000 steps and 8 installs: every span accounted for\n",
         hammer_calls);
}

// Close races lane calls: those after it are refused by name, none
// crashes, and the slot's next hub starts clean.
static gs_hub closing;
static long refused;

static void* racer(void* arg) {
  (void)arg;
  for (int i = 0; i < 200000; i++) {
    gs_hub_status st = gs_hub_next_lane_call(closing, i % 3, (i + 1) % 3);
    if (st == GS_HUB_ERR_BAD_HANDLE) {
      __atomic_add_fetch(&refused, 1, __ATOMIC_RELAXED);
      break;
    }
  }
  return NULL;
}

static void close_race(void) {
  gs_hub hub = closing = make_hub(0);
  pthread_t t[3];
  for (int i = 0; i < 3; i++) pthread_create(&t[i], NULL, racer, NULL);
  for (volatile int spin = 0; spin < 200000; spin++) {
  }
  CHECK_OK(gs_hub_close(hub));
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  CHECK(gs_hub_lane_begin_call(hub, 0) == GS_HUB_ERR_BAD_HANDLE, "a call after close was not refused");
  CHECK(strstr(last_error(0), "not an open hub") != NULL, "after close: %s", last_error(0));
  printf("ok: close raced lane calls on 3 threads (%ld saw the hub closed)\n", refused);
}

// A sticky error turns the device dead, through Go, once.
static void sticky(void) {
  gs_hub hub = make_hub(0);
  CHECK_OK(gs_hub_lane_begin(hub, PREFILL));
  gs_testing_fake_set_sticky(700 /* CUDA_ERROR_ILLEGAL_ADDRESS */);
  CHECK_OK(gs_hub_next_lane(hub, PREFILL, DECODE));
  CHECK_OK(gs_hub_lane_begin(hub, SAMPLE)); // the device is dead: nothing
  CHECK_OK(gs_hub_lane_end(hub, DECODE));
  const char* j = snap(hub);
  CHECK(strstr(j, "\"state\": \"dead\"") != NULL && num(j, "sticky_disables") == 1,
        "sticky: not dead, or sticky_disables %ld", num(j, "sticky_disables"));
  outcomes(hub, "sticky");
  CHECK_OK(gs_hub_close(hub));
  printf("ok: a sticky error turned the device dead\n");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* path = getenv("GPUSPANS_SPAN_PATH");
  c_path = path == NULL || strcmp(path, "go") != 0;
  gs_testing_use_fake_driver();
  gs_hub_testing_count_crossings(1);
  steady();
  steps_in_c();
  refusals();
  ring_and_retire();
  threads();
  close_race();
  sticky();
  if (failures) {
    printf("FAIL: %d checks failed\n", failures);
    return 1;
  }
  printf("PASS (%s)\n", c_path ? "C span path" : "Go span path");
  return 0;
}

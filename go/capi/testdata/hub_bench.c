// Benchmarks of the C ABI, printed as numbers (nothing is asserted):
//   - the disabled path: each span call of a hub at Off (no call into Go),
//   - one crossing into Go (gs_hub_get_level),
//   - an enabled lane span and kernel span on the simulated GPU at Kernel,
//     harvest included (every step armed).
// Usage: hub_bench [iterations]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuspans/hub.h"

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(gs_hub hub, const char* what, gs_hub_status st) {
  char buf[1024];
  gs_hub_last_error(hub, buf, sizeof buf);
  fprintf(stderr, "%s: %s: %s\n", what, gs_hub_status_name(st), buf);
  exit(1);
}

static gs_hub make(int32_t level) {
  gs_hub_options o = gs_hub_options_init();
  o.level = level;
  o.kernel_span_every = 1;
  o.quiet = 1;
  o.slots = 1 << 16;
  gs_hub h;
  gs_hub_status st = gs_hub_create(&o, &h);
  if (st != GS_HUB_OK) die(0, "gs_hub_create", st);
  if ((st = gs_hub_install_sim(h, 0, 1, 0)) != GS_HUB_OK) die(h, "gs_hub_install_sim", st);
  return h;
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 10000000;
  if (n < 10) n = 10;
  volatile uint64_t sink = 0;

  gs_hub off = make(GS_HUB_LEVEL_OFF);
  double t0 = now_ns();
  for (long i = 0; i < n; i++) {
    gs_hub_lane_begin(off, 0);
    uint64_t tok = gs_hub_kernel_begin(off, 1, 1);
    sink += tok;
    gs_hub_kernel_end(off, tok);
    gs_hub_lane_end(off, 0);
  }
  double t1 = now_ns();
  printf("disabled path (level Off), per span call:      %8.2f ns\n", (t1 - t0) / (4.0 * n));
  t0 = now_ns();
  for (long i = 0; i < n; i++) gs_hub_begin_step(off);
  t1 = now_ns();
  printf("disabled path (level Off), gs_hub_begin_step:  %8.2f ns\n", (t1 - t0) / n);

  long m = n / 20 > 10 ? n / 20 : 10;
  int32_t level;
  t0 = now_ns();
  for (long i = 0; i < m; i++) gs_hub_get_level(off, &level);
  t1 = now_ns();
  printf("one call into Go (gs_hub_get_level):           %8.2f ns\n", (t1 - t0) / m);
  gs_hub_close(off);

  // Enabled, on the simulated GPU: each step one lane span and one kernel
  // span; the harvest runs in gs_hub_begin_step.
  gs_hub on = make(GS_HUB_LEVEL_KERNEL);
  gs_hub_begin_step(on); // opens the pool
  long steps = n / 100 > 10 ? n / 100 : 10;
  double lane = 0, kernel = 0, step = 0;
  for (long i = 0; i < steps; i++) {
    double a = now_ns();
    gs_hub_begin_step(on);
    double b = now_ns();
    gs_hub_lane_begin(on, 0);
    gs_hub_lane_end(on, 0);
    double c = now_ns();
    uint64_t tok = gs_hub_kernel_begin(on, 1, 1);
    gs_hub_kernel_end(on, tok);
    double d = now_ns();
    step += b - a;
    lane += c - b;
    kernel += d - c;
  }
  printf("enabled (Kernel, simulated GPU), lane span:     %8.2f ns (begin + end)\n", lane / steps);
  printf("enabled (Kernel, simulated GPU), kernel span:   %8.2f ns (begin + end)\n", kernel / steps);
  printf("enabled (Kernel, simulated GPU), step+harvest:  %8.2f ns (2 spans landed)\n", step / steps);
  uint64_t in_flight = 0;
  gs_hub_drain(on, 1000, &in_flight);
  gs_hub_close(on);
  return sink == 12345 ? 2 : 0;
}

// Measures the cost of one call from a C thread into an exported Go function
// through the Bazel-built c-archive (//bench/cgocall/cgocall_go). Each thread
// is created by C, as an engine's threads are: Go must bind an M to it on
// every call from outside. Prints one line per thread kind and checks every
// result, so the test run (few calls) proves the archive links and works.
//
//   bazel run -c opt //bench/cgocall:cgocall_bench -- [calls] [rounds]
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench/cgocall/cgocall_go/cgocall_go.h"

struct run {
  long long calls;
  double best_ns;  // best round, ns per call
  int ok;
};

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int rounds = 5;

static void measure(struct run* r) {
  r->ok = 1;
  r->best_ns = -1;
  if (gsBenchAdd(41) != 42) r->ok = 0;  // warm-up: the first call binds an M
  for (int k = 0; k < rounds; k++) {
    long long acc = 0;
    double t0 = now_ns();
    for (long long i = 0; i < r->calls; i++) acc = gsBenchAdd(acc);
    double ns = (now_ns() - t0) / (double)r->calls;
    if (acc != r->calls) r->ok = 0;
    if (r->best_ns < 0 || ns < r->best_ns) r->best_ns = ns;
  }
}

static void* thread_main(void* arg) {
  measure((struct run*)arg);
  return NULL;
}

int main(int argc, char** argv) {
  long long calls = argc > 1 ? atoll(argv[1]) : 200000;
  if (argc > 2) rounds = atoi(argv[2]);
  if (calls <= 0 || rounds <= 0) {
    fprintf(stderr, "usage: %s [calls > 0] [rounds > 0]\n", argv[0]);
    return 2;
  }
  struct run main_run = {calls, 0, 0}, thread_run = {calls, 0, 0};
  measure(&main_run);
  pthread_t t;
  if (pthread_create(&t, NULL, thread_main, &thread_run) != 0) {
    perror("pthread_create");
    return 1;
  }
  pthread_join(t, NULL);
  printf("cgocall: main thread: %.1f ns per call (best of %d rounds of %lld)\n", main_run.best_ns, rounds,
         calls);
  printf("cgocall: C pthread:   %.1f ns per call (best of %d rounds of %lld)\n", thread_run.best_ns, rounds,
         calls);
  if (!main_run.ok || !thread_run.ok) {
    fprintf(stderr, "cgocall: FAIL: an exported call returned a wrong result\n");
    return 1;
  }
  return 0;
}

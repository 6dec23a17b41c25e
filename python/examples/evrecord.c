/* The driver's own cuEventRecord, timed in C: what a lane boundary cannot
 * cost less than. torch_lane_costs.py loads it with ctypes and calls
 * evrecord_timed where the engine's lane boundaries are; the ctypes call
 * is outside the timed part. Build: gcc -O2 -shared -fPIC evrecord.c -o evrecord.so -ldl */
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

typedef int (*create_fn)(void**, unsigned);
typedef int (*record_fn)(void*, void*);

static record_fn record;
static void* event;

/* evrecord_init makes the event on the calling thread's current context
 * (torch's, once it has run work): 0, or the CUresult, or -1 without a
 * driver. */
int evrecord_init(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return -1;
  create_fn create = (create_fn)dlsym(lib, "cuEventCreate");
  record = (record_fn)dlsym(lib, "cuEventRecord");
  if (!create || !record) return -1;
  return create(&event, 0); /* CU_EVENT_DEFAULT: timing on, as the pool's */
}

/* evrecord_timed records the event on stream and returns the nanoseconds
 * the call took, or -(CUresult) on failure. */
int64_t evrecord_timed(uint64_t stream) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int r = record(event, (void*)(uintptr_t)stream);
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (r) return -r;
  return (int64_t)(b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec);
}

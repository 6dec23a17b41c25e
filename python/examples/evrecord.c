/* The driver's own cuEventRecord, timed in C: what a lane boundary cannot
 * cost less than. torch_lane_costs.py loads it with ctypes and calls
 * evrecord_timed where the engine's lane boundaries are; the ctypes call
 * is outside the timed part. Build: gcc -O2 -shared -fPIC evrecord.c -o evrecord.so -ldl */
#include <dlfcn.h>
#include <stdint.h>
#include <time.h>

typedef int (*create_fn)(void**, unsigned);
typedef int (*record_fn)(void*, void*);
typedef int (*ctx_fn)(void**);
typedef int (*capturing_fn)(void*, int*);

static record_fn record;
static ctx_fn ctx_current;
static capturing_fn is_capturing;
static void* event;

/* evrecord_init makes the event on the calling thread's current context
 * (torch's, once it has run work): 0, or the CUresult, or -1 without a
 * driver. */
int evrecord_init(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return -1;
  create_fn create = (create_fn)dlsym(lib, "cuEventCreate");
  record = (record_fn)dlsym(lib, "cuEventRecord");
  ctx_current = (ctx_fn)dlsym(lib, "cuCtxGetCurrent");
  is_capturing = (capturing_fn)dlsym(lib, "cuStreamIsCapturing");
  if (!create || !record || !ctx_current || !is_capturing) return -1;
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

/* evrecord_checked_timed is evrecord_timed with the calls the core makes
 * before each record (gs_pool_record_*): the current context, then whether
 * the stream is being captured. What a lane boundary recorded in C cannot
 * cost less than. */
int64_t evrecord_checked_timed(uint64_t stream) {
  struct timespec a, b;
  void* ctx = 0;
  int capturing = 0;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int r = ctx_current(&ctx);
  if (!r) r = is_capturing((void*)(uintptr_t)stream, &capturing);
  if (!r) r = record(event, (void*)(uintptr_t)stream);
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (r) return -r;
  return (int64_t)(b.tv_sec - a.tv_sec) * 1000000000 + (b.tv_nsec - a.tv_nsec);
}

// What the CUPTI probes of bench/cupti share: checks that exit on a failed
// driver or CUPTI call, a stream and a kernel on device 0's primary context,
// and CUPTI's buffer request. Header only, so each probe still builds with
// the one g++ line in its comment, from the repository root.
#ifndef GPUSPANS_BENCH_CUPTI_PROBE_H_
#define GPUSPANS_BENCH_CUPTI_PROBE_H_

#include <cuda.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                  \
  do {                                                         \
    CUresult r_ = (x);                                         \
    if (r_ != CUDA_SUCCESS) {                                  \
      fprintf(stderr, "%s failed: %d\n", #x, r_);              \
      exit(1);                                                 \
    }                                                          \
  } while (0)
#define CP(x)                                                  \
  do {                                                         \
    CUptiResult r_ = (x);                                      \
    if (r_ != CUPTI_SUCCESS) {                                 \
      fprintf(stderr, "%s failed: %d\n", #x, r_);              \
      exit(1);                                                 \
    }                                                          \
  } while (0)

// Probe is a non-blocking stream on device 0's primary context, made
// current, and the kernel a probe launches on it.
struct Probe {
  CUstream stream;
  CUfunction fn;
};

// OpenProbe loads ptx and finds entry in it; any failure exits.
static Probe OpenProbe(const char* ptx, const char* entry) {
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  Probe p{};
  CK(cuStreamCreate(&p.stream, CU_STREAM_NON_BLOCKING));
  CUmodule m;
  CK(cuModuleLoadData(&m, ptx));
  CK(cuModuleGetFunction(&p.fn, m, entry));
  return p;
}

// Requested gives CUPTI a 1 MiB activity buffer, as many as it asks for;
// each probe's Completed frees them.
static void Requested(uint8_t** b, size_t* size, size_t* max) {
  *size = 1 << 20;
  *b = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max = 0;
}

#endif  // GPUSPANS_BENCH_CUPTI_PROBE_H_

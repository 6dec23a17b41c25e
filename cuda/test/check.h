// The CPU tests' checks: no test framework; each failed CHECK is counted in
// g_failures (one per test binary) and printed with its line.
#ifndef GPUSPANS_CUDA_TEST_CHECK_H_
#define GPUSPANS_CUDA_TEST_CHECK_H_

#include <stdio.h>

static int g_failures = 0;  // each test binary is one translation unit

#define CHECK(cond)                                                             \
  do {                                                                          \
    if (!(cond)) {                                                              \
      ++g_failures;                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                           \
  } while (0)

#define CHECK_EQ(a, b)                                                                          \
  do {                                                                                          \
    long long va_ = static_cast<long long>(a), vb_ = static_cast<long long>(b);                 \
    if (va_ != vb_) {                                                                           \
      ++g_failures;                                                                             \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, \
              #a, #b, va_, vb_);                                                                \
    }                                                                                           \
  } while (0)

#endif  // GPUSPANS_CUDA_TEST_CHECK_H_

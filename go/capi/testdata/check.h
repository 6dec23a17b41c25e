// The C tests' checks: each failed CHECK is printed with its line and
// counted in failures; last_error reads a hub's message for them.
#ifndef GPUSPANS_CAPI_TESTDATA_CHECK_H_
#define GPUSPANS_CAPI_TESTDATA_CHECK_H_

#include <stdio.h>

#include "gpuspans/hub.h"

static int failures;

#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
      failures++;                                          \
    }                                                      \
  } while (0)

static char errbuf[4096];

static const char* last_error(gs_hub h) {
  gs_hub_last_error(h, errbuf, sizeof errbuf);
  return errbuf;
}

#endif  // GPUSPANS_CAPI_TESTDATA_CHECK_H_

// CPU tests of the kernel tracer against the fake CUPTI (//cuda:core_testing):
// record parsing through the real buffer callbacks, names, the bounded ring,
// drops, refusals. CI runs them under ASan and UBSan too. No test framework:
// the last line reads "N passed, N failed".
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "check.h"
#include "gpuspans/tracer.h"
#include "gpuspans/tracer_testing.h"

namespace {

void Open() {
  gs_error err;
  gs_status st = gs_tracer_open(nullptr, 1000, &err);
  if (st != GS_OK) fprintf(stderr, "gs_tracer_open: %s\n", err.message);
  CHECK_EQ(st, GS_OK);
}

std::string Name(uint32_t id) {
  char buf[128];
  gs_tracer_name(id, buf, sizeof buf);
  return buf;
}

void RecordsKeepTheirFields() {
  gs_testing_use_fake_cupti();
  Open();
  CHECK_EQ(gs_tracer_enable(1, nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_kernel(2, 7, 1000, 4000, "_Z6decodePfi", 9), 1);
  CHECK_EQ(gs_testing_cupti_kernel(0, 3, 5000, 5500, "plain", 0), 1);
  CHECK_EQ(gs_testing_cupti_deliver(1), 2);
  gs_kernel_record r[4];
  CHECK_EQ(gs_tracer_read(r, 4), 2);
  CHECK_EQ(r[0].start_ns, 1000);
  CHECK_EQ(r[0].end_ns, 4000);
  CHECK_EQ(r[0].device, 2);
  CHECK_EQ(r[0].stream, 7);
  CHECK_EQ(r[0].graph, 9);
  CHECK(Name(r[0].name) == "decode");
  CHECK(Name(r[1].name) == "plain");
  CHECK_EQ(gs_tracer_read(r, 4), 0);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
}

void OffRecordsNothing() {
  gs_testing_use_fake_cupti();
  Open();
  CHECK_EQ(gs_testing_cupti_kernel(0, 1, 0, 1, "k", 0), 0);
  CHECK_EQ(gs_tracer_enable(1, nullptr), GS_OK);
  CHECK_EQ(gs_tracer_enable(0, nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_kernel(0, 1, 0, 1, "k", 0), 0);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
}

// More records than the ring holds: the rest are counted, by device, and
// nothing is written past the ring (ASan would say).
void FullRingDropsAndCounts() {
  gs_testing_use_fake_cupti();
  Open();
  CHECK_EQ(gs_tracer_enable(1, nullptr), GS_OK);
  const int n = (1 << 16) + 10;
  for (int i = 0; i < n; i++) gs_testing_cupti_kernel(1, 1, i, i + 1, "k", 0);
  CHECK_EQ(gs_testing_cupti_deliver(2500), n);
  gs_tracer_stats st;
  gs_tracer_get_stats(&st);
  CHECK_EQ(st.records, 1 << 16);
  CHECK_EQ(st.ring_dropped, 10);
  CHECK_EQ(st.dropped_by_device[1], 10);
  std::vector<gs_kernel_record> out(1 << 17);
  CHECK_EQ(gs_tracer_read(out.data(), out.size()), 1 << 16);
  CHECK_EQ(out[0].start_ns, 0);
  CHECK_EQ(out[(1 << 16) - 1].start_ns, (1 << 16) - 1);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
}

void CuptiDropsCountByDevice() {
  gs_testing_use_fake_cupti();
  Open();
  gs_testing_cupti_drop(3, 7);
  gs_testing_cupti_deliver(10);
  gs_tracer_stats st;
  gs_tracer_get_stats(&st);
  CHECK_EQ(st.cupti_dropped, 7);
  CHECK_EQ(st.dropped_by_device[3], 7);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  // Counters are per open.
  Open();
  gs_tracer_get_stats(&st);
  CHECK_EQ(st.cupti_dropped, 0);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
}

void Refusals() {
  gs_error err;
  gs_testing_use_fake_cupti();
  gs_testing_cupti_version(99);
  CHECK_EQ(gs_tracer_open(nullptr, 100, &err), GS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "version 99") != nullptr);
  gs_testing_use_fake_cupti();
  gs_testing_cupti_fail_open(1);
  CHECK_EQ(gs_tracer_open(nullptr, 100, &err), GS_ERR_NO_DRIVER);
  gs_testing_use_fake_cupti();
  gs_testing_cupti_other_subscriber(1);
  CHECK_EQ(gs_tracer_open(nullptr, 100, &err), GS_ERR_BUSY);
  CHECK(strstr(err.message, "another client") != nullptr);
  gs_testing_use_fake_cupti();
  CHECK_EQ(gs_tracer_open(nullptr, 0, &err), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_tracer_open(nullptr, 60001, &err), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_tracer_enable(1, &err), GS_ERR_INVALID_ARGUMENT);  // not open
  Open();
  CHECK_EQ(gs_tracer_open(nullptr, 100, &err), GS_ERR_BUSY);  // open already
  gs_testing_cupti_fail_enable(27);
  CHECK_EQ(gs_tracer_enable(1, &err), GS_ERR_DRIVER);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);  // closed already
  CHECK_EQ(gs_tracer_read(nullptr, 5), 0);
  CHECK_EQ(gs_tracer_name(0, nullptr, 0), 0);
}

void NamesAreShortAndBounded() {
  gs_testing_use_fake_cupti();
  Open();
  CHECK_EQ(gs_tracer_enable(1, nullptr), GS_OK);
  std::string longest(400, 'y');
  gs_testing_cupti_kernel(0, 1, 0, 1, longest.c_str(), 0);
  gs_testing_cupti_kernel(0, 1, 0, 1, "void f<int (*)(int)>(int, float) const", 0);
  gs_testing_cupti_kernel(0, 1, 0, 1, "with\x01" "control", 0);
  gs_testing_cupti_deliver(10);
  gs_kernel_record r[3];
  CHECK_EQ(gs_tracer_read(r, 3), 3);
  CHECK_EQ(Name(r[0].name).size(), 127);
  CHECK(Name(r[0].name).compare(124, 3, "...") == 0);
  CHECK(Name(r[1].name) == "f<int (*)(int)>");
  CHECK(Name(r[2].name) == "with?control");
  char tiny[4];
  CHECK_EQ(gs_tracer_name(r[1].name, tiny, sizeof tiny), 15);  // the length, buf cut and terminated
  CHECK(strcmp(tiny, "f<i") == 0);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
}

}  // namespace

int main() {
  struct {
    const char* name;
    void (*fn)();
  } tests[] = {
      {"RecordsKeepTheirFields", RecordsKeepTheirFields},
      {"OffRecordsNothing", OffRecordsNothing},
      {"FullRingDropsAndCounts", FullRingDropsAndCounts},
      {"CuptiDropsCountByDevice", CuptiDropsCountByDevice},
      {"Refusals", Refusals},
      {"NamesAreShortAndBounded", NamesAreShortAndBounded},
  };
  int passed = 0, failed = 0;
  for (auto& t : tests) {
    int before = g_failures;
    t.fn();
    if (g_failures == before) {
      passed++;
    } else {
      failed++;
      fprintf(stderr, "FAIL %s\n", t.name);
    }
  }
  gs_testing_use_real_cupti();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

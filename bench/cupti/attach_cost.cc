// What CUPTI costs an eager launch, by phase of its life in the process:
// never touched, buffer callbacks registered, collection on, collection off
// again, after cuptiFinalize, and after a second attach. Answers whether the
// tracer's unarmed steps cost what level Off costs (issue 21). A probe for
// the GPU machine, built there against the toolkit (it links -lcuda and
// -lcupti, which the library itself never does):
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include bench/cupti/attach_cost.cc \
//     -L/usr/local/cuda/lib64 -lcuda -lcupti -o /tmp/attach_cost && /tmp/attach_cost
// Prints one line per phase: median ns per launch over 9 rounds of 4,096
// empty launches, each round synced, and the rounds' spread.
#include <algorithm>
#include <chrono>
#include <vector>

#include "probe.h"

static const char kPtx[] = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry e()\n{\nret;\n}\n";
static size_t g_records = 0;

static void Completed(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) g_records++;
  free(b);
}

int main() {
  const Probe p = OpenProbe(kPtx, "e");
  CUstream s = p.stream;
  CUfunction f = p.fn;
  auto phase = [&](const char* name) {
    std::vector<double> xs;
    for (int round = 0; round < 9; round++) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 4096; i++) CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr));
      auto t1 = std::chrono::steady_clock::now();
      CK(cuStreamSynchronize(s));
      xs.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / 4096);
    }
    std::sort(xs.begin(), xs.end());
    printf("%-34s %7.0f ns per launch (rounds %.0f..%.0f)\n", name, xs[4], xs[0], xs[8]);
  };
  phase("warm-up");
  phase("1 never touched");
  CP(cuptiActivityRegisterCallbacks(Requested, Completed));
  phase("2 callbacks registered");
  CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  phase("3 collection on");
  CP(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  phase("4 collection off again");
  CP(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  CP(cuptiFinalize());
  phase("5 after cuptiFinalize");
  auto t0 = std::chrono::steady_clock::now();
  CP(cuptiActivityRegisterCallbacks(Requested, Completed));
  CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  auto t1 = std::chrono::steady_clock::now();
  printf("re-attach (register + enable): %.2f ms\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
  phase("6 re-attached, collection on");
  CP(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  phase("7 off again");
  t0 = std::chrono::steady_clock::now();
  CP(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  CP(cuptiFinalize());
  t1 = std::chrono::steady_clock::now();
  printf("flush + finalize: %.2f ms\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
  phase("8 after the second cuptiFinalize");
  printf("records: %zu (want %d: the launches of phases 3 and 6)\n", g_records, 2 * 9 * 4096);
  return 0;
}

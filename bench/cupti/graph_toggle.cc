// CUPTI and CUDA graphs when collection is switched per step: are the
// kernel records of a replayed graph right, and what does a replay cost,
// with collection never on, always on, toggled every other replay, and
// after a detach? A probe for the GPU machine (issue 21), built there:
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include bench/cupti/graph_toggle.cc \
//     -L/usr/local/cuda/targets/x86_64-linux/lib -lcuda -lcupti -o /tmp/gt && /tmp/gt
#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "probe.h"

static const char kPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry spin(.param .u64 ns)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [ns];
  mov.u64 %rd2, %globaltimer;
  add.u64 %rd3, %rd2, %rd1;
L:
  mov.u64 %rd4, %globaltimer;
  setp.lt.u64 %p1, %rd4, %rd3;
  @%p1 bra L;
  ret;
}
)";

struct Rec {
  uint64_t start, end, node;
  uint32_t graph;
};
static std::vector<Rec> g_recs;
static void Completed(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(r);
    g_recs.push_back({k->start, k->end, k->graphNodeId, k->graphId});
  }
  free(b);
}

int main() {
  const Probe p = OpenProbe(kPtx, "spin");
  CUstream s = p.stream;
  CUfunction f = p.fn;
  auto spin = [&](uint64_t ns) {
    void* args[] = {&ns};
    CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr));
  };
  // A graph of 20 spins of 2 us, captured before CUPTI is touched.
  CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < 20; i++) spin(2000);
  CUgraph g;
  CK(cuStreamEndCapture(s, &g));
  CUgraphExec x;
  CK(cuGraphInstantiate(&x, g, 0));
  auto step = [&](bool lead) {  // one engine step: optional 1 ms ahead, the replay, a sync
    if (lead) spin(1000000);
    auto t0 = std::chrono::steady_clock::now();
    CK(cuGraphLaunch(x, s));
    auto t1 = std::chrono::steady_clock::now();
    CK(cuStreamSynchronize(s));
    auto t2 = std::chrono::steady_clock::now();
    return std::make_pair(std::chrono::duration<double, std::micro>(t1 - t0).count(),
                          std::chrono::duration<double, std::micro>(t2 - t0).count());
  };
  auto phase = [&](const char* name, int toggle, bool lead) {
    // toggle: 0 never on, 1 always on, 2 on every other step (off between)
    std::vector<double> launch, total;
    g_recs.clear();
    if (toggle == 1) CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    for (int i = 0; i < 40; i++) {
      bool on = toggle == 2 && i % 2 == 1;
      if (on) CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
      auto t = step(lead);
      if (on) CP(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
      launch.push_back(t.first);
      total.push_back(t.second);
    }
    if (toggle == 1) CP(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CP(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::sort(launch.begin(), launch.end());
    std::sort(total.begin(), total.end());
    std::vector<double> durs;
    size_t bad = 0;
    for (auto& r : g_recs) {
      if (r.graph == 0) continue;  // the lead
      double d = (r.end - r.start) / 1e3;
      durs.push_back(d);
      if (d > 4) bad++;
    }
    std::sort(durs.begin(), durs.end());
    printf("%-44s launch p50 %6.1f us, step p50 %7.1f us; graph kernel records %3zu, us min %.2f p50 %.2f max %.2f, >4 us: %zu\n",
           name, launch[20], total[20], durs.size(), durs.empty() ? 0 : durs[0],
           durs.empty() ? 0 : durs[durs.size() / 2], durs.empty() ? 0 : durs.back(), bad);
  };
  // Collection on for two replays in a row, off for two: are the second
  // replay's records right when the first's are stale?
  auto primed = [&](const char* name, bool lead, uint32_t flag) {
    std::vector<double> first, second;
    for (int i = 0; i < 10; i++) {
      step(lead);  // off
      for (int k = 0; k < 2; k++) {
        g_recs.clear();
        CP(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        step(lead);
        CP(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
        CP(cuptiActivityFlushAll(flag));  // the window's records, before the next replay
        CP(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));  // whatever is left, for counting
        for (auto& r : g_recs) {
          if (r.graph) (k == 0 ? first : second).push_back((r.end - r.start) / 1e3);
        }
      }
    }
    auto show = [](std::vector<double>& v) {
      std::sort(v.begin(), v.end());
      size_t bad = std::count_if(v.begin(), v.end(), [](double d) { return d > 4; });
      printf("n %zu p50 %.2f max %.2f >4us %zu", v.size(), v.empty() ? 0 : v[v.size() / 2], v.empty() ? 0 : v.back(), bad);
    };
    printf("%-44s first on-replay: ", name);
    show(first);
    printf("; second: ");
    show(second);
    printf("\n");
  };
  phase("never touched", 0, false);
  CP(cuptiActivityRegisterCallbacks(Requested, Completed));
  phase("callbacks registered", 0, false);
  phase("always on", 1, false);
  phase("always on, 1 ms queued ahead", 1, true);
  phase("toggled every other step", 2, false);
  phase("toggled every other step, 1 ms ahead", 2, true);
  phase("off again (attached)", 0, false);
  primed("two on, two off, forced flush", false, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  primed("two on, two off, forced flush, 1 ms ahead", true, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  primed("two on, two off, default flush", false, 0);
  primed("two on, two off, default flush, 1 ms ahead", true, 0);
  // A graph instantiated after CUPTI attached, toggled.
  CUgraphExec x2;
  CK(cuGraphInstantiate(&x2, g, 0));
  std::swap(x, x2);
  phase("graph made while attached, toggled", 2, false);
  // cuptiFinalize here, outside a driver call's exit callback, is what CUPTI
  // warns against: an instrumented graph's next replay failed with 719
  // (CUDA_ERROR_LAUNCH_FAILED, sticky) on an H200, so it comes last.
  CP(cuptiFinalize());
  phase("after cuptiFinalize (outside a callback)", 0, false);
  return 0;
}

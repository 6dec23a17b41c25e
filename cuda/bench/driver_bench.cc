// driver_bench: the raw CUDA driver floor against gpuspans, per span, in the
// same run on the same stream (GPU needed). The project's overhead is judged
// as the ratio of the two columns.
#include <stdio.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "cuda/src/driver.h"
#include "gpuspans/gpuspans.h"
#include "gpuspans/gpuspans_testkit.h"

namespace {

constexpr uint32_t kSpans = 4096;
constexpr int kRepeats = 3;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// PerSpan runs setup (untimed), then body (timed), kRepeats times, and
// returns the best time per span for n spans: the floor, as noise only adds.
double PerSpan(const std::function<void()>& setup, const std::function<void()>& body,
               const std::function<void()>& teardown, uint32_t n = kSpans) {
  double best = 1e30;
  for (int r = 0; r < kRepeats; ++r) {
    setup();
    int64_t t0 = SteadyNs();
    body();
    best = std::min(best, static_cast<double>(SteadyNs() - t0) / n);
    teardown();
  }
  return best;
}

void Row(const char* what, double raw, double lib) {
  printf("| %-44s | %9.0f | %9.0f | %5.2f |\n", what, raw, lib, lib / raw);
}

int Fail(const char* what, const gs_error& err) {
  fprintf(stderr, "driver_bench: %s: %s\n", what, err.message);
  return 1;
}

}  // namespace

int main() {
  gs_error err{};
  if (gs_driver_load(&err) != GS_OK) return Fail("load", err);
  const gs::Driver* d = gs::LoadedDriver();
  gs_kit* kit = nullptr;
  gs_pool* pool = nullptr;
  uint64_t stream = 0;
  if (gs_kit_create(0, &kit, &err) != GS_OK) return Fail("kit", err);
  if (gs_pool_create(0, kSpans, &pool, &err) != GS_OK) return Fail("pool", err);
  if (gs_kit_stream_create(kit, &stream, &err) != GS_OK) return Fail("stream", err);
  CUstream s = reinterpret_cast<CUstream>(stream);

  // The raw side's events, on the primary context, which stays current on
  // this thread as it would in a serving engine's launch thread.
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  d->cuDeviceGet(&dev, 0);
  d->cuDevicePrimaryCtxRetain(&ctx, dev);
  d->cuCtxPushCurrent(ctx);
  std::vector<CUevent> begin(kSpans), end(kSpans);
  for (uint32_t i = 0; i < kSpans; ++i) {
    d->cuEventCreate(&begin[i], CU_EVENT_DEFAULT);
    d->cuEventCreate(&end[i], CU_EVENT_DEFAULT);
  }
  std::vector<gs_harvest_item> items(kSpans);
  for (uint32_t i = 0; i < kSpans; ++i) items[i].slot = i;
  auto nothing = [] {};
  auto sync = [&] { gs_kit_sync(kit, stream, nullptr); };
  auto raw_records_n = [&](uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      d->cuEventRecord(begin[i], s);
      d->cuEventRecord(end[i], s);
    }
  };
  auto lib_records_n = [&](uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      gs_pool_record_begin(pool, i, stream, nullptr);
      gs_pool_record_end(pool, i, stream, nullptr);
    }
  };
  auto raw_records = [&] { raw_records_n(kSpans); };
  auto lib_records = [&] { lib_records_n(kSpans); };
  auto raw_done = [&] { raw_records(); sync(); };
  auto lib_done = [&] { lib_records(); sync(); };
  // Spans queued behind a long kernel, so every one is in flight when
  // harvested. Few of them: past a few thousand commands the stream's queue
  // is full and cuEventRecord blocks until the kernel ends.
  constexpr uint32_t kBlocked = 256;
  auto raw_blocked = [&] { gs_kit_spin(kit, stream, 50000000, 0, nullptr); raw_records_n(kBlocked); };
  auto lib_blocked = [&] { gs_kit_spin(kit, stream, 50000000, 0, nullptr); lib_records_n(kBlocked); };
  float ms = 0;
  CUstreamCaptureStatus cs;
  int32_t capturing = 0;
  lib_done();  // warm up: JIT, first records, anchor
  gs_pool_harvest(pool, items.data(), kSpans, nullptr);

  printf("driver_bench: %u spans per measurement, best of %d, ns per span on the host\n", kSpans, kRepeats);
  printf("| %-44s | %9s | %9s | %5s |\n", "operation", "driver", "gpuspans", "ratio");
  printf("|%s|%s|%s|%s|\n", std::string(46, '-').c_str(), std::string(11, '-').c_str(),
         std::string(11, '-').c_str(), std::string(7, '-').c_str());
  Row("capture check",
      PerSpan(nothing, [&] { for (uint32_t i = 0; i < kSpans; ++i) d->cuStreamIsCapturing(s, &cs); }, nothing),
      PerSpan(nothing, [&] { for (uint32_t i = 0; i < kSpans; ++i) gs_pool_is_capturing(pool, stream, &capturing, nullptr); }, nothing));
  Row("record begin + end", PerSpan(nothing, raw_records, sync), PerSpan(nothing, lib_records, sync));
  Row("launch empty kernel inside a span",
      PerSpan(nothing, [&] {
        for (uint32_t i = 0; i < kSpans; ++i) {
          d->cuEventRecord(begin[i], s);
          gs_kit_empty(kit, stream, nullptr);
          d->cuEventRecord(end[i], s);
        }
      }, sync),
      PerSpan(nothing, [&] {
        for (uint32_t i = 0; i < kSpans; ++i) {
          gs_pool_record_begin(pool, i, stream, nullptr);
          gs_kit_empty(kit, stream, nullptr);
          gs_pool_record_end(pool, i, stream, nullptr);
        }
      }, sync));
  const double raw_harvest = PerSpan(raw_done, [&] {
    for (uint32_t i = 0; i < kSpans; ++i) {
      if (d->cuEventQuery(end[i]) == CUDA_SUCCESS) d->cuEventElapsedTime(&ms, begin[i], end[i]);
    }
  }, nothing);
  Row("harvest done spans: one batch", raw_harvest,
      PerSpan(lib_done, [&] { gs_pool_harvest(pool, items.data(), kSpans, nullptr); }, nothing));
  Row("harvest done spans: one call per span", raw_harvest,
      PerSpan(lib_done, [&] { for (uint32_t i = 0; i < kSpans; ++i) gs_pool_harvest(pool, &items[i], 1, nullptr); }, nothing));
  Row("harvest in-flight spans: one batch of 256",
      PerSpan(raw_blocked, [&] { for (uint32_t i = 0; i < kBlocked; ++i) d->cuEventQuery(end[i]); }, sync,
              kBlocked),
      PerSpan(lib_blocked, [&] { gs_pool_harvest(pool, items.data(), kBlocked, nullptr); }, [&] {
        sync();
        gs_pool_harvest(pool, items.data(), kBlocked, nullptr);
      }, kBlocked));
  // A thread whose current context is not the pool's pays a push and a pop.
  d->cuCtxPopCurrent(&ctx);
  Row("record begin + end, context not current", PerSpan(nothing, [&] {
        d->cuCtxPushCurrent(ctx);
        raw_records();
        d->cuCtxPopCurrent(&ctx);
      }, sync), PerSpan(nothing, lib_records, sync));
  d->cuCtxPushCurrent(ctx);

  for (uint32_t i = 0; i < kSpans; ++i) {
    d->cuEventDestroy(begin[i]);
    d->cuEventDestroy(end[i]);
  }
  d->cuCtxPopCurrent(&ctx);
  d->cuDevicePrimaryCtxRelease(dev);
  sync();
  gs_pool_harvest(pool, items.data(), kSpans, nullptr);
  if (gs_pool_destroy(pool, &err) != GS_OK) return Fail("destroy", err);
  gs_kit_stream_destroy(kit, stream, nullptr);
  gs_kit_destroy(kit, nullptr);
  return 0;
}

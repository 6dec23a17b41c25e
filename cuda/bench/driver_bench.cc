// driver_bench: the raw CUDA driver floor against gpuspans, per span, in the
// same run on the same stream (GPU needed). The project's overhead is judged
// as the ratio of the two columns.
//
// Prints a markdown table. With --json PATH it also writes the rows, and the
// floor they imply, as JSON for bench/run.sh: the floor of one span is two
// cuEventRecord plus one cuEventQuery and one cuEventElapsedTime.
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cuda/src/driver.h"
#include "gpuspans/gpuspans.h"
#include "gpuspans/gpuspans_kit.h"

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

// A measured row: ns per span on the host, raw driver and gpuspans.
struct Result {
  const char* id;  // stable key for the JSON
  const char* what;
  double raw;
  double lib;
};

std::vector<Result> g_rows;

// The free-running serving loop's raw reference, which gpubench's freerun
// rows compare with: per step a lane event pair on the lane stream around
// kFreeKernels empty kernels in event pairs on the kernel stream, no sync,
// so the CPU runs ahead of the GPU as in a busy engine; each step then reads
// the spans that completed (query and elapsed time, oldest first, stopping
// at the first not done). "none" launches the kernels alone.
constexpr int kFreeSteps = 3000;
constexpr int kFreeKernels = 16;
constexpr int kFreeRing = 256 * (kFreeKernels + 1);  // event pairs: 256 steps in flight at most

struct FreeRun {
  double none_ns = 0, raw_ns = 0;  // host ns per step, median of kRepeats
  double landed_per_step = 0;
};

FreeRun g_free;

void Row(const char* id, const char* what, double raw, double lib) {
  printf("| %-44s | %9.0f | %9.0f | %5.2f |\n", what, raw, lib, raw > 0 ? lib / raw : 0.0);
  g_rows.push_back({id, what, raw, lib});
}

double Find(const char* id, bool lib) {
  for (const Result& r : g_rows) {
    if (strcmp(r.id, id) == 0) return lib ? r.lib : r.raw;
  }
  return 0;
}

// WriteJSON writes the rows and the derived floor; the ids and what-strings
// are ASCII literals without quotes or backslashes, so they need no escaping.
bool WriteJSON(const char* path, double launch_only) {
  FILE* f = fopen(path, "w");
  if (f == nullptr) return false;
  const double record = Find("record", false), harvest = Find("harvest_batch", false);
  fprintf(f, "{\n  \"tool\": \"driver_bench\",\n  \"spans\": %u,\n  \"repeats\": %d,\n", kSpans, kRepeats);
  fprintf(f, "  \"unit\": \"ns per span on the host, best of repeats\",\n  \"rows\": [\n");
  for (size_t i = 0; i < g_rows.size(); ++i) {
    const Result& r = g_rows[i];
    fprintf(f, "    {\"id\": \"%s\", \"what\": \"%s\", \"raw_ns\": %.1f, \"lib_ns\": %.1f, \"ratio\": %.4f}%s\n",
            r.id, r.what, r.raw, r.lib, r.raw > 0 ? r.lib / r.raw : 0.0, i + 1 < g_rows.size() ? "," : "");
  }
  fprintf(f, "  ],\n");
  fprintf(f, "  \"launch_only_ns\": %.1f,\n", launch_only);
  fprintf(f, "  \"freerun\": {\"steps\": %d, \"kernel_spans_per_step\": %d, \"none_step_ns\": %.1f, \"raw_step_ns\": %.1f, \"landed_per_step\": %.2f},\n",
          kFreeSteps, kFreeKernels, g_free.none_ns, g_free.raw_ns, g_free.landed_per_step);
  fprintf(f, "  \"floor\": {\"span_ns\": %.1f, \"record_ns\": %.1f, \"harvest_ns\": %.1f, \"launch_in_span_ns\": %.1f},\n",
          record + harvest, record, harvest, Find("launch_in_span", false));
  fprintf(f, "  \"lib\": {\"span_ns\": %.1f, \"record_ns\": %.1f, \"harvest_ns\": %.1f, \"launch_in_span_ns\": %.1f}\n}\n",
          Find("record", true) + Find("harvest_batch", true), Find("record", true), Find("harvest_batch", true),
          Find("launch_in_span", true));
  return fclose(f) == 0;
}

int Fail(const char* what, const gs_error& err) {
  fprintf(stderr, "driver_bench: %s: %s\n", what, err.message);
  return 1;
}

FreeRun MeasureFreeRun(const gs::Driver* d, gs_kit* kit, uint64_t kstream, uint64_t lstream) {
  CUstream ks = reinterpret_cast<CUstream>(kstream), ls = reinterpret_cast<CUstream>(lstream);
  std::vector<CUevent> b(kFreeRing), e(kFreeRing);
  for (int i = 0; i < kFreeRing; ++i) {
    d->cuEventCreate(&b[i], CU_EVENT_DEFAULT);
    d->cuEventCreate(&e[i], CU_EVENT_DEFAULT);
  }
  auto sync = [&] {
    gs_kit_sync(kit, kstream, nullptr);
    gs_kit_sync(kit, lstream, nullptr);
  };
  auto none = [&] {
    for (int st = 0; st < kFreeSteps; ++st) {
      for (int k = 0; k < kFreeKernels; ++k) gs_kit_empty(kit, kstream, nullptr);
    }
  };
  uint64_t landed = 0;
  auto raw = [&] {
    uint64_t head = 0, tail = 0;  // pairs recorded / read
    float ms = 0;
    for (int st = 0; st < kFreeSteps; ++st) {
      // Read what completed, oldest first; the ring never fills: 256 steps
      // of spans cannot all be in flight behind empty kernels.
      while (tail < head) {
        const int i = static_cast<int>(tail % kFreeRing);
        if (d->cuEventQuery(e[i]) != CUDA_SUCCESS) break;
        d->cuEventElapsedTime(&ms, b[i], e[i]);
        ++tail;
        ++landed;
      }
      if (head - tail + kFreeKernels + 1 > kFreeRing) {
        fprintf(stderr, "driver_bench: freerun ring full\n");
        break;
      }
      const int lane = static_cast<int>(head++ % kFreeRing);
      d->cuEventRecord(b[lane], ls);
      for (int k = 0; k < kFreeKernels; ++k) {
        const int i = static_cast<int>(head++ % kFreeRing);
        d->cuEventRecord(b[i], ks);
        gs_kit_empty(kit, kstream, nullptr);
        d->cuEventRecord(e[i], ks);
      }
      d->cuEventRecord(e[lane], ls);
    }
  };
  auto timed = [&](const std::function<void()>& f) {
    int64_t t0 = SteadyNs();
    f();
    double v = static_cast<double>(SteadyNs() - t0) / kFreeSteps;
    sync();
    return v;
  };
  FreeRun out;
  timed(none);  // warm up
  timed(raw);
  landed = 0;
  std::vector<double> n, r;
  for (int rep = 0; rep < kRepeats; ++rep) {  // interleaved, as noise drifts
    n.push_back(timed(none));
    r.push_back(timed(raw));
  }
  std::sort(n.begin(), n.end());
  std::sort(r.begin(), r.end());
  out.none_ns = n[n.size() / 2];
  out.raw_ns = r[r.size() / 2];
  out.landed_per_step = static_cast<double>(landed) / (kRepeats * kFreeSteps);
  for (int i = 0; i < kFreeRing; ++i) {
    d->cuEventDestroy(b[i]);
    d->cuEventDestroy(e[i]);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const char* json = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json = argv[++i];
    } else {
      fprintf(stderr, "usage: driver_bench [--json PATH]\n");
      return 2;
    }
  }
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
  // The raw side must really work, or its floor would be the cost of failing.
  raw_done();
  if (d->cuEventQuery(end[kSpans - 1]) != CUDA_SUCCESS ||
      d->cuEventElapsedTime(&ms, begin[kSpans - 1], end[kSpans - 1]) != CUDA_SUCCESS) {
    fprintf(stderr, "driver_bench: raw events did not complete\n");
    return 1;
  }

  printf("driver_bench: %u spans per measurement, best of %d, ns per span on the host\n", kSpans, kRepeats);
  printf("| %-44s | %9s | %9s | %5s |\n", "operation", "driver", "gpuspans", "ratio");
  printf("|%s|%s|%s|%s|\n", std::string(46, '-').c_str(), std::string(11, '-').c_str(),
         std::string(11, '-').c_str(), std::string(7, '-').c_str());
  Row("capture_check", "capture check",
      PerSpan(nothing, [&] { for (uint32_t i = 0; i < kSpans; ++i) d->cuStreamIsCapturing(s, &cs); }, nothing),
      PerSpan(nothing, [&] { for (uint32_t i = 0; i < kSpans; ++i) gs_pool_is_capturing(pool, stream, &capturing, nullptr); }, nothing));
  Row("record", "record begin + end", PerSpan(nothing, raw_records, sync), PerSpan(nothing, lib_records, sync));
  Row("launch_in_span", "launch empty kernel inside a span",
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
  Row("harvest_batch", "harvest done spans: one batch", raw_harvest,
      PerSpan(lib_done, [&] { gs_pool_harvest(pool, items.data(), kSpans, nullptr); }, nothing));
  Row("harvest_per_call", "harvest done spans: one call per span", raw_harvest,
      PerSpan(lib_done, [&] { for (uint32_t i = 0; i < kSpans; ++i) gs_pool_harvest(pool, &items[i], 1, nullptr); }, nothing));
  Row("harvest_inflight", "harvest in-flight spans: one batch of 256",
      PerSpan(raw_blocked, [&] { for (uint32_t i = 0; i < kBlocked; ++i) d->cuEventQuery(end[i]); }, sync,
              kBlocked),
      PerSpan(lib_blocked, [&] { gs_pool_harvest(pool, items.data(), kBlocked, nullptr); }, [&] {
        sync();
        gs_pool_harvest(pool, items.data(), kBlocked, nullptr);
      }, kBlocked));
  // A thread whose current context is not the pool's pays a push and a pop.
  d->cuCtxPopCurrent(&ctx);
  Row("record_ctx_not_current", "record begin + end, context not current", PerSpan(nothing, [&] {
        d->cuCtxPushCurrent(ctx);
        raw_records();
        d->cuCtxPopCurrent(&ctx);
      }, sync), PerSpan(nothing, lib_records, sync));
  d->cuCtxPushCurrent(ctx);
  const double launch_only = PerSpan(nothing, [&] {
    for (uint32_t i = 0; i < kSpans; ++i) gs_kit_empty(kit, stream, nullptr);
  }, sync);
  printf("launch empty kernel alone: %.0f ns\n", launch_only);

  // The same spans recorded from kThreads threads at once, each on its own
  // stream with its own share of the slots, harvested by one thread: the
  // shape of a serving engine with several launch threads. Host time is
  // summed over the threads, so running them in parallel hides no cost.
  constexpr int kThreads = 4;
  constexpr uint32_t kShare = kSpans / kThreads;
  uint64_t mt_streams[kThreads];
  for (uint64_t& st : mt_streams) {
    if (gs_kit_stream_create(kit, &st, &err) != GS_OK) return Fail("stream", err);
  }
  auto mt_sync = [&] {
    for (uint64_t st : mt_streams) gs_kit_sync(kit, st, nullptr);
  };
  // Runs body(t) on kThreads threads started together; returns the summed
  // host time per span.
  auto threads = [&](const std::function<void(int)>& body) {
    int64_t ns[kThreads] = {};
    std::atomic<int> ready{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
      ts.emplace_back([&, t] {
        d->cuCtxSetCurrent(ctx);
        ready.fetch_add(1);
        while (ready.load() < kThreads) {
        }
        int64_t t0 = SteadyNs();
        body(t);
        ns[t] = SteadyNs() - t0;
      });
    }
    for (std::thread& th : ts) th.join();
    int64_t sum = 0;
    for (int64_t v : ns) sum += v;
    return static_cast<double>(sum) / kSpans;
  };
  auto best_threads = [&](const std::function<void(int)>& body) {
    double best = 1e30;
    for (int r = 0; r < kRepeats; ++r) {
      best = std::min(best, threads(body));
      mt_sync();
    }
    return best;
  };
  Row("record_4threads", "record begin + end, 4 threads (host summed)",
      best_threads([&](int t) {
        CUstream ts = reinterpret_cast<CUstream>(mt_streams[t]);
        for (uint32_t i = t * kShare; i < (t + 1) * kShare; ++i) {
          d->cuEventRecord(begin[i], ts);
          d->cuEventRecord(end[i], ts);
        }
      }),
      best_threads([&](int t) {
        for (uint32_t i = t * kShare; i < (t + 1) * kShare; ++i) {
          gs_pool_record_begin(pool, i, mt_streams[t], nullptr);
          gs_pool_record_end(pool, i, mt_streams[t], nullptr);
        }
      }));
  mt_sync();
  gs_pool_harvest(pool, items.data(), kSpans, nullptr);
  g_free = MeasureFreeRun(d, kit, mt_streams[0], mt_streams[1]);
  printf("free-running loop, %d empty kernels in spans + a lane span per step, no sync: launches alone %.0f ns/step, "
         "raw records + raw harvest of landed spans %.0f ns/step (+%.0f), %.1f spans landed per step\n",
         kFreeKernels, g_free.none_ns, g_free.raw_ns, g_free.raw_ns - g_free.none_ns, g_free.landed_per_step);
  printf("floor per span with 4 recording threads (records + one-thread query and elapsed): %.0f ns\n",
         Find("record_4threads", false) + raw_harvest);
  for (uint64_t st : mt_streams) gs_kit_stream_destroy(kit, st, nullptr);
  if (json != nullptr && !WriteJSON(json, launch_only)) {
    fprintf(stderr, "driver_bench: cannot write %s\n", json);
    return 1;
  }

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

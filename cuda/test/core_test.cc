// CPU tests of the gpuspans core against the fake driver (//cuda:core_testing).
// No GPU, no test framework: each test is a function, CHECK counts
// failures, and the last line reads "N passed, N failed". Over 600 lines:
// one binary, so that CI builds and runs the core's CPU tests once under
// each configuration (plain, and the sanitizers' --config=asan), the
// tests sharing the fake driver's helpers at the top.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "gpuspans/gpuspans.h"
#include "gpuspans/gpuspans_testing.h"

namespace {

// Streams are plain integers to the fake.
constexpr uint64_t kStreamA = 0x1000, kStreamB = 0x2000;
constexpr int64_t kMs = 1000000;

gs_fake_counters Counters() {
  gs_fake_counters c;
  gs_testing_fake_counters(&c);
  return c;
}

gs_pool* NewPool(uint32_t slots, int32_t device = 0) {
  gs_pool* p = nullptr;
  gs_error err;
  gs_status st = gs_pool_create(device, slots, &p, &err);
  if (st != GS_OK) fprintf(stderr, "gs_pool_create: %s: %s\n", gs_status_name(st), err.message);
  CHECK_EQ(st, GS_OK);
  return p;
}

void Destroy(gs_pool* p) {
  gs_error err;
  CHECK_EQ(gs_pool_destroy(p, &err), GS_OK);
}

void Span(gs_pool* p, uint32_t slot, uint64_t stream, int64_t work_ns) {
  CHECK_EQ(gs_pool_record_begin(p, slot, stream, nullptr), GS_OK);
  gs_testing_fake_stream_work(stream, work_ns);
  CHECK_EQ(gs_pool_record_end(p, slot, stream, nullptr), GS_OK);
}

gs_harvest_item Item(uint32_t slot, uint32_t want_start = 0) {
  gs_harvest_item it{};
  it.slot = slot;
  it.want_start = want_start;
  it.state = -1;
  return it;
}

void ExpectNoLeaks() {
  gs_fake_counters c = Counters();
  CHECK_EQ(c.live_events, 0);
  CHECK_EQ(c.retained_contexts, 0);
  CHECK_EQ(c.live_streams, 0);
  CHECK_EQ(c.ctx_pushes, c.ctx_pops);
  CHECK_EQ(c.destroys_in_flight, 0);
  CHECK_EQ(c.live_modules, 0);
}

// FakePool is a test's pool on a fresh fake driver; at the test's end it
// destroys the pool and checks that nothing leaked.
struct FakePool {
  explicit FakePool(uint32_t slots) {
    gs_testing_use_fake_driver();
    p = NewPool(slots);
  }
  ~FakePool() {
    Destroy(p);
    ExpectNoLeaks();
  }
  gs_pool* p;
};

void TestNoLibrary() {
  gs_testing_use_fake_driver();
  gs_testing_fake_fail_open(1);
  gs_error err;
  CHECK_EQ(gs_driver_load(&err), GS_ERR_NO_DRIVER);
  CHECK(strstr(err.message, "libcuda.so.1") != nullptr);
  gs_testing_fake_fail_open(0);
  CHECK_EQ(gs_driver_load(nullptr), GS_ERR_NO_DRIVER);  // the first outcome sticks
  gs_pool* p = nullptr;
  CHECK_EQ(gs_pool_create(0, 8, &p, &err), GS_ERR_NO_DRIVER);
  CHECK(p == nullptr);
  int32_t n = -1;
  CHECK_EQ(gs_driver_device_count(&n, nullptr), GS_ERR_NO_DRIVER);
  CHECK_EQ(n, 0);
}

void TestRealLoaderWithoutGpu() {
  // On a machine without libcuda.so.1 the real loader reports it; on a GPU
  // machine it loads.
  gs_testing_use_real_driver();
  gs_error err;
  gs_status st = gs_driver_load(&err);
  CHECK(st == GS_OK || st == GS_ERR_NO_DRIVER || st == GS_ERR_INIT);
  if (st == GS_ERR_NO_DRIVER) CHECK(strstr(err.message, "dlopen libcuda.so.1") != nullptr);
}

void TestMissingSymbol() {
  gs_testing_use_fake_driver();
  gs_testing_fake_drop_symbol("cuCtxPushCurrent_v2");
  gs_error err;
  CHECK_EQ(gs_driver_load(&err), GS_ERR_MISSING_SYMBOL);
  CHECK(strstr(err.message, "cuCtxPushCurrent_v2") != nullptr);
  CHECK_EQ(Counters().inits, 0);
}

void TestOptionalSymbolMissing() {
  gs_testing_use_fake_driver();
  gs_testing_fake_drop_symbol("cuThreadExchangeStreamCaptureMode");
  gs_testing_fake_drop_symbol("cuGetErrorName");
  gs_testing_fake_drop_symbol("cuGetErrorString");
  CHECK_EQ(gs_driver_load(nullptr), GS_OK);
  gs_pool* p = NewPool(4);
  Span(p, 0, kStreamA, kMs);
  gs_testing_fake_advance(2 * kMs);
  gs_harvest_item it = Item(0);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK_EQ(Counters().mode_exchanges, 0);
  char buf[64];
  gs_driver_error_string(600, buf, sizeof(buf));
  CHECK(strcmp(buf, "CUDA error 600") == 0);
  Destroy(p);
  ExpectNoLeaks();
}

void TestDeviceIdentity() {
  gs_testing_use_fake_driver();
  gs_testing_fake_set_device_count(2);
  gs_device_identity id;
  gs_error err;
  CHECK_EQ(gs_driver_device_identity(1, &id, &err), GS_OK);
  CHECK(strcmp(id.uuid, "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadae01") == 0);
  CHECK(strcmp(id.pci_bus_id, "00000000:1A:00.0") == 0);  // the driver's "0000:1a:00.0", as NVML writes it
  CHECK(strcmp(id.name, "gpuspans fake GPU") == 0);
  CHECK(strcmp(id.driver, "12.9") == 0);  // the fake's cuDriverGetVersion, 12090
  CHECK_EQ(gs_driver_device_identity(2, &id, &err), GS_ERR_DRIVER);
  CHECK(strstr(err.message, "cuDeviceGet(2)") != nullptr);
  CHECK_EQ(gs_driver_device_identity(0, nullptr, &err), GS_ERR_INVALID_ARGUMENT);
  // A failing cuDriverGetVersion (the 5th call: device, UUID, bus id, name,
  // version) is an error naming it, and leaves the field empty.
  constexpr int32_t kInvalidValue = 1;  // CUDA_ERROR_INVALID_VALUE
  gs_testing_fake_fail_call(5, kInvalidValue);
  CHECK_EQ(gs_driver_device_identity(0, &id, &err), GS_ERR_DRIVER);
  CHECK(strstr(err.message, "cuDriverGetVersion") != nullptr);
  CHECK_EQ(err.cu_result, kInvalidValue);
  CHECK_EQ(id.driver[0], 0);
  CHECK_EQ(gs_driver_device_identity(0, &id, &err), GS_OK);
  CHECK(strcmp(id.driver, "12.9") == 0);

  // A driver without the calls: empty fields, not an error.
  gs_testing_use_fake_driver();
  gs_testing_fake_drop_symbol("cuDeviceGetUuid_v2");
  gs_testing_fake_drop_symbol("cuDeviceGetPCIBusId");
  CHECK_EQ(gs_driver_device_identity(0, &id, &err), GS_OK);
  CHECK(strcmp(id.uuid, "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadae00") == 0);  // unversioned fallback
  CHECK_EQ(id.pci_bus_id[0], 0);
  CHECK(strcmp(id.driver, "12.9") == 0);
  gs_testing_fake_drop_symbol("cuDeviceGetUuid");
  gs_testing_use_fake_driver();
  gs_testing_fake_drop_symbol("cuDeviceGetUuid_v2");
  gs_testing_fake_drop_symbol("cuDeviceGetUuid");
  gs_testing_fake_drop_symbol("cuDeviceGetName");
  gs_testing_fake_drop_symbol("cuDriverGetVersion");
  CHECK_EQ(gs_driver_device_identity(0, &id, &err), GS_OK);
  CHECK_EQ(id.uuid[0], 0);
  CHECK_EQ(id.name[0], 0);
  CHECK_EQ(id.driver[0], 0);
  CHECK(strcmp(id.pci_bus_id, "00000000:19:00.0") == 0);
}

void TestEventOffsetCalibration() {
  // A span lands; the offset stays unknown; the pool goes without a leak.
  auto lands_offset_unknown = [](gs_pool* p) {
    gs_harvest_item it = Item(0);
    Span(p, 0, kStreamA, kMs);
    gs_testing_fake_advance(2 * kMs);
    CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
    CHECK_EQ(gs_pool_event_offset_ns(p), -1);
    Destroy(p);
    ExpectNoLeaks();
  };

  // Without kernels (an old driver): the offset stays unknown, nothing else changes.
  gs_testing_use_fake_driver();
  gs_pool* p = NewPool(4);
  gs_testing_fake_advance(kMs);
  lands_offset_unknown(p);

  // With kernels: unknown until a harvest finds the pairs done, never waited for.
  gs_testing_use_fake_driver();
  gs_testing_fake_kernels(3000);
  p = NewPool(4);
  CHECK_EQ(gs_pool_event_offset_ns(p), -1);
  Span(p, 0, kStreamA, kMs);
  gs_harvest_item it = Item(0);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);  // fake clock at 0: nothing done yet
  CHECK_EQ(it.state, GS_SPAN_IN_FLIGHT);
  CHECK_EQ(gs_pool_event_offset_ns(p), -1);
  gs_error err;
  CHECK_EQ(gs_pool_destroy(p, &err), GS_ERR_BUSY);  // calibration pairs still in flight
  gs_testing_fake_advance(2 * kMs);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK_EQ(gs_pool_event_offset_ns(p), 3000);
  CHECK_EQ(gs_pool_event_offset_ns(nullptr), -1);
  Destroy(p);
  ExpectNoLeaks();

  // A calibration event that cannot be made: the pool works, the offset
  // stays unknown, and nothing leaks.
  gs_testing_use_fake_driver();
  gs_testing_fake_kernels(3000);
  gs_testing_fake_fail_event_create(2 * 4 + 4 + 2 * 31, 2);  // the last calibration event
  lands_offset_unknown(NewPool(4));
}

void TestInitError() {
  gs_testing_use_fake_driver();
  gs_testing_fake_init_result(100);
  gs_error err;
  CHECK_EQ(gs_driver_load(&err), GS_ERR_INIT);
  CHECK_EQ(err.cu_result, 100);
  CHECK(strstr(err.message, "cuInit") != nullptr);
  CHECK(strstr(err.message, "CUDA_ERROR_NO_DEVICE") != nullptr);
}

void TestErrorStrings() {
  gs_testing_use_fake_driver();
  CHECK_EQ(gs_driver_load(nullptr), GS_OK);
  char buf[128];
  gs_driver_error_string(600, buf, sizeof(buf));
  CHECK(strcmp(buf, "CUDA_ERROR_NOT_READY: fake driver error") == 0);
  gs_driver_error_string(12345, buf, sizeof(buf));
  CHECK(strcmp(buf, "CUDA error 12345") == 0);
  gs_driver_error_string(600, buf, 5);
  CHECK(strlen(buf) == 4);
  CHECK(strcmp(gs_status_name(GS_ERR_CAPTURING), "GS_ERR_CAPTURING") == 0);
  CHECK(strcmp(gs_status_name(42), "GS_STATUS_UNKNOWN") == 0);
  int32_t n = 0;
  CHECK_EQ(gs_driver_device_count(&n, nullptr), GS_OK);
  CHECK_EQ(n, 1);
}

void TestCreateFailsPartWay() {
  const uint32_t slots = 16;
  const uint32_t total = 2 * slots + 4;
  for (int32_t k : {1, 2, 17, 32, 33, 36}) {
    gs_testing_use_fake_driver();
    gs_testing_fake_fail_event_create(k, 2);
    gs_pool* p = nullptr;
    gs_error err;
    CHECK_EQ(gs_pool_create(0, slots, &p, &err), GS_ERR_DRIVER);
    CHECK(p == nullptr);
    CHECK_EQ(err.cu_result, 2);
    char want[64];
    snprintf(want, sizeof(want), "event %d of %u", k, total);
    CHECK(strstr(err.message, want) != nullptr);
    CHECK(strstr(err.message, "CUDA_ERROR_OUT_OF_MEMORY") != nullptr);
    CHECK_EQ(Counters().event_creates, k - 1);
    ExpectNoLeaks();
  }
}

void TestCreateArguments() {
  gs_testing_use_fake_driver();
  gs_pool* p = nullptr;
  gs_error err;
  CHECK_EQ(gs_pool_create(0, 0, &p, &err), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_pool_create(0, 1u << 30, &p, &err), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_pool_create(0, 8, nullptr, &err), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_pool_create(3, 8, &p, &err), GS_ERR_DRIVER);
  CHECK_EQ(err.cu_result, 101);
  CHECK_EQ(gs_pool_destroy(nullptr, nullptr), GS_OK);
  CHECK_EQ(gs_pool_slots(nullptr), 0);
  CHECK_EQ(gs_pool_device(nullptr), -1);
  ExpectNoLeaks();
}

void TestRecordError() {
  FakePool fp(4);
  gs_pool* p = fp.p;
  gs_testing_fake_record_result(1, 1);
  int32_t cu = 0;
  CHECK_EQ(gs_pool_record_begin(p, 0, kStreamA, &cu), GS_ERR_DRIVER);
  CHECK_EQ(cu, 1);
  CHECK_EQ(gs_pool_record_begin(p, 0, kStreamA, &cu), GS_OK);
  CHECK_EQ(cu, 0);
  CHECK_EQ(gs_pool_record_end(p, 0, kStreamA, &cu), GS_OK);
  CHECK_EQ(gs_pool_record_begin(p, 4, kStreamA, &cu), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_pool_record_begin(nullptr, 0, kStreamA, &cu), GS_ERR_INVALID_ARGUMENT);
}

void TestNotReadyThenDone() {
  FakePool fp(4);
  gs_pool* p = fp.p;
  CHECK_EQ(gs_pool_slots(p), 4);
  CHECK_EQ(gs_pool_device(p), 0);
  gs_testing_fake_stream_work(kStreamA, 3 * kMs);  // earlier work: the span starts at 3 ms
  Span(p, 1, kStreamA, 2 * kMs);
  gs_harvest_item it = Item(1);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_IN_FLIGHT);
  gs_error err;
  CHECK_EQ(gs_pool_destroy(p, &err), GS_ERR_BUSY);
  CHECK(strstr(err.message, "in flight") != nullptr);
  gs_testing_fake_advance(4 * kMs);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_IN_FLIGHT);  // begin done, end at 5 ms
  gs_testing_fake_advance(kMs);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK_EQ(it.duration_ns, 2 * kMs);
  CHECK_EQ(it.cu_result, 0);
  CHECK_EQ(it.start_ns, 0);  // not asked for
  // Harvesting a done slot again reports the same span.
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK_EQ(it.duration_ns, 2 * kMs);
}

void TestForcedResults() {
  FakePool fp(4);
  gs_pool* p = fp.p;
  Span(p, 0, kStreamA, kMs);
  gs_testing_fake_advance(2 * kMs);
  // Elapsed says not ready (on either event): still in flight.
  gs_testing_fake_force(gs_testing_pool_event(p, 0, 1), GS_FAKE_ELAPSED, 600, 1);
  gs_harvest_item it = Item(0);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_IN_FLIGHT);
  gs_testing_fake_force(gs_testing_pool_event(p, 0, 0), GS_FAKE_ELAPSED, 600, 1);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_IN_FLIGHT);
  gs_testing_fake_force(gs_testing_pool_event(p, 0, 1), GS_FAKE_ELAPSED, 400, 1);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_ERROR);
  CHECK_EQ(it.cu_result, 400);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK_EQ(it.duration_ns, kMs);
}

void TestStickyError() {
  gs_testing_use_fake_driver();
  gs_pool* p = NewPool(8);
  Span(p, 0, kStreamA, kMs);
  Span(p, 1, kStreamA, kMs);
  gs_testing_fake_set_sticky(700);
  int32_t cu = 0;
  CHECK_EQ(gs_pool_record_begin(p, 2, kStreamA, &cu), GS_ERR_POOL_DEAD);
  CHECK_EQ(cu, 700);
  const int64_t calls = Counters().driver_calls;
  CHECK_EQ(gs_pool_record_begin(p, 3, kStreamA, &cu), GS_ERR_POOL_DEAD);
  CHECK_EQ(cu, 700);
  CHECK_EQ(gs_pool_record_end(p, 3, kStreamA, &cu), GS_ERR_POOL_DEAD);
  int32_t capturing = 1;
  CHECK_EQ(gs_pool_is_capturing(p, kStreamA, &capturing, &cu), GS_ERR_POOL_DEAD);
  CHECK_EQ(capturing, 0);
  gs_harvest_item items[2] = {Item(0), Item(1)};
  CHECK_EQ(gs_pool_harvest(p, items, 2, &cu), GS_ERR_POOL_DEAD);
  CHECK_EQ(cu, 700);
  for (const gs_harvest_item& it : items) {
    CHECK_EQ(it.state, GS_SPAN_ERROR);
    CHECK_EQ(it.cu_result, 700);
  }
  CHECK_EQ(Counters().driver_calls, calls);  // the dead pool called nothing
  // Destroy of a dead pool queries nothing and releases everything.
  gs_testing_fake_set_sticky(0);
  const int64_t queries = Counters().event_queries;
  Destroy(p);
  CHECK_EQ(Counters().event_queries, queries);
  // Three of its spans' events (all but the first begin, at time 0) were
  // still in flight by the fake clock: a dead context runs nothing more, so
  // they are released without asking.
  CHECK_EQ(Counters().destroys_in_flight, 3);
  gs_testing_fake_reset_counters();
  ExpectNoLeaks();
}

void TestStickyDuringHarvest() {
  FakePool fp(8);
  gs_pool* p = fp.p;
  for (uint32_t s = 0; s < 4; ++s) Span(p, s, kStreamA, kMs);
  gs_testing_fake_advance(10 * kMs);
  gs_testing_fake_force(gs_testing_pool_event(p, 2, 1), GS_FAKE_ELAPSED, 719, 1);
  gs_harvest_item items[4] = {Item(0), Item(1), Item(2), Item(3)};
  int32_t cu = 0;
  CHECK_EQ(gs_pool_harvest(p, items, 4, &cu), GS_ERR_POOL_DEAD);
  CHECK_EQ(cu, 719);
  for (const gs_harvest_item& it : items) CHECK_EQ(it.state, GS_SPAN_ERROR);
  CHECK_EQ(Counters().mode_exchanges % 2, 0);  // the mode was restored
  CHECK_EQ(gs_testing_fake_thread_capture_mode(), 0);
  CHECK_EQ(gs_pool_record_begin(p, 5, kStreamA, &cu), GS_ERR_POOL_DEAD);
}

// A record that fails between a span's begin and its end leaves the pool
// usable: the slot reports in flight (its begin is open) until the caller
// records it again, which the backend contract allows after a failed record.
void TestRecordEndFailsMidSpan() {
  FakePool fp(4);
  gs_pool* p = fp.p;
  CHECK_EQ(gs_pool_record_begin(p, 0, kStreamA, nullptr), GS_OK);
  gs_testing_fake_stream_work(kStreamA, kMs);
  gs_testing_fake_record_result(1, 1);  // CUDA_ERROR_INVALID_VALUE, once
  int32_t cu = 0;
  CHECK_EQ(gs_pool_record_end(p, 0, kStreamA, &cu), GS_ERR_DRIVER);
  CHECK_EQ(cu, 1);
  gs_testing_fake_advance(5 * kMs);
  gs_harvest_item it = Item(0);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, &cu), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_IN_FLIGHT);
  // The slot records again from the start and lands.
  Span(p, 0, kStreamA, 2 * kMs);
  gs_testing_fake_advance(5 * kMs);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, &cu), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK_EQ(it.duration_ns, 2 * kMs);
  // A sticky code from the end record kills the pool, though the driver
  // itself would answer later calls: the pool makes none.
  CHECK_EQ(gs_pool_record_begin(p, 1, kStreamA, nullptr), GS_OK);
  gs_testing_fake_record_result(700, 1);
  CHECK_EQ(gs_pool_record_end(p, 1, kStreamA, &cu), GS_ERR_POOL_DEAD);
  CHECK_EQ(cu, 700);
  const int64_t calls = Counters().driver_calls;
  CHECK_EQ(gs_pool_record_begin(p, 2, kStreamA, &cu), GS_ERR_POOL_DEAD);
  CHECK_EQ(cu, 700);
  it = Item(1);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, &cu), GS_ERR_POOL_DEAD);
  CHECK_EQ(it.state, GS_SPAN_ERROR);
  CHECK_EQ(it.cu_result, 700);
  CHECK_EQ(Counters().driver_calls, calls);
}

// The first anchor's record failing fails the create, releasing everything.
void TestCreateFailsAtAnchor() {
  gs_testing_use_fake_driver();
  gs_testing_fake_record_result(2, 1);
  gs_pool* p = nullptr;
  gs_error err;
  CHECK_EQ(gs_pool_create(0, 8, &p, &err), GS_ERR_DRIVER);
  CHECK(p == nullptr);
  CHECK_EQ(err.cu_result, 2);
  CHECK(strstr(err.message, "anchor") != nullptr);
  ExpectNoLeaks();
}

// Every driver call gs_pool_create makes, the offset calibration's included,
// fails in turn (k = 1, 2, ...): a create that fails holds nothing (no event,
// stream, module or context retain is left), and one that survives (a
// calibration failure only leaves the offset unknown) destroys cleanly. Twice:
// on a thread with no current context (the pool's is adopted) and on one
// current on another device's (the pool's is pushed and popped).
void TestCreateFailsAtEveryCall() {
  constexpr int32_t kOutOfMemory = 2;
  for (int32_t current : {-1, 1}) {
    auto fresh = [current] {
      gs_testing_use_fake_driver();
      gs_testing_fake_set_device_count(2);
      gs_testing_fake_kernels(3000);
      CHECK_EQ(gs_driver_load(nullptr), GS_OK);
      gs_testing_fake_set_current_device(current);
      gs_testing_fake_reset_counters();
    };
    fresh();
    gs_pool* p = NewPool(4);
    const gs_fake_counters full = Counters();
    gs_testing_fake_advance(10 * kMs);
    Destroy(p);
    ExpectNoLeaks();
    // The calls of a create: 12 events, 62 calibration events, 63 launches,
    // 63 records, and the context, stream and module calls around them.
    CHECK(full.driver_calls > 2 * 4 + 4 + 2 * 31 + 63 + 63);
    CHECK_EQ(full.live_modules, 1);
    int failed = 0, survived = 0, unpopped = 0;
    const int failures_before = g_failures;
    for (int64_t k = 1; k <= full.driver_calls; ++k) {
      fresh();
      gs_testing_fake_fail_call(k, kOutOfMemory);
      gs_pool* q = nullptr;
      gs_error err;
      const gs_status st = gs_pool_create(0, 4, &q, &err);
      CHECK(Counters().driver_calls >= k);  // the failure was injected
      if (st == GS_OK) {
        ++survived;
        CHECK(q != nullptr);
        gs_testing_fake_advance(10 * kMs);
        CHECK_EQ(gs_pool_destroy(q, &err), GS_OK);
      } else {
        ++failed;
        CHECK_EQ(st, GS_ERR_DRIVER);
        CHECK(q == nullptr);
        CHECK_EQ(err.cu_result, kOutOfMemory);
      }
      const gs_fake_counters c = Counters();
      CHECK_EQ(c.live_events, 0);
      CHECK_EQ(c.live_streams, 0);
      CHECK_EQ(c.live_modules, 0);
      CHECK_EQ(c.retained_contexts, 0);
      CHECK_EQ(c.destroys_in_flight, 0);
      // A pop that fails leaves its push unpopped (nothing can undo it);
      // anything else balances.
      CHECK(c.ctx_pushes - c.ctx_pops == 0 || c.ctx_pushes - c.ctx_pops == 1);
      if (c.ctx_pushes != c.ctx_pops) ++unpopped;
      if (g_failures != failures_before) {
        fprintf(stderr, "  (failing driver call %lld of %lld, current device %d)\n",
                static_cast<long long>(k), static_cast<long long>(full.driver_calls), current);
        return;
      }
    }
    // Only failed pops left a push unpopped: as many as a create makes.
    CHECK_EQ(unpopped, full.ctx_pops);
    CHECK(failed > 0);
    CHECK(survived > 0);
  }
}

// Destroy refuses while any recorded event is in flight, and succeeds at the
// first attempt after the last one completes; a refused destroy releases
// nothing. Spans end at different times on several streams, some with open
// begins whose ends are never recorded.
void TestNoEventDestroyedInFlight() {
  gs_testing_use_fake_driver();
  gs_pool* p = NewPool(32);
  const int64_t live = Counters().live_events;
  std::mt19937 rng(3);
  int64_t last = 0;
  std::map<uint64_t, int64_t> busy;
  for (uint32_t s = 0; s < 24; ++s) {
    const uint64_t stream = 0x7000 + (rng() % 4) * 0x10;
    const int64_t work = (1 + rng() % 20) * kMs;
    if (s % 6 == 5) {
      // Begin only: its event completes when the work queued before it does.
      last = std::max(last, busy[stream]);
      CHECK_EQ(gs_pool_record_begin(p, s, stream, nullptr), GS_OK);
      gs_testing_fake_stream_work(stream, work);
    } else {
      Span(p, s, stream, work);
    }
    busy[stream] += work;
    if (s % 6 != 5) last = std::max(last, busy[stream]);
  }
  // The last event to complete is a begin whose end is never recorded,
  // queued behind work on a stream of its own.
  const uint64_t lone = 0x7F00;
  gs_testing_fake_stream_work(lone, last + 7 * kMs);
  CHECK_EQ(gs_pool_record_begin(p, 31, lone, nullptr), GS_OK);
  last += 7 * kMs;
  int attempts = 0;
  for (int64_t now = 0;; now += kMs / 2) {
    gs_error err;
    const gs_status st = gs_pool_destroy(p, &err);
    ++attempts;
    if (now < last) {
      CHECK_EQ(st, GS_ERR_BUSY);
      CHECK_EQ(Counters().live_events, live);
    } else {
      CHECK_EQ(st, GS_OK);
      break;
    }
    if (st != GS_ERR_BUSY) break;
    gs_testing_fake_advance(kMs / 2);
  }
  CHECK(attempts > 2);
  ExpectNoLeaks();
}

// A sticky error seen by destroy's own queries releases the pool at once.
void TestStickyDuringDestroy() {
  gs_testing_use_fake_driver();
  gs_pool* p = NewPool(4);
  Span(p, 0, kStreamA, kMs);
  gs_testing_fake_force(gs_testing_pool_event(p, 0, 0), GS_FAKE_QUERY, 700, -1);
  CHECK_EQ(gs_pool_destroy(p, nullptr), GS_OK);
  CHECK_EQ(Counters().destroys_in_flight, 1);  // the end; see TestStickyError
  gs_testing_fake_reset_counters();
  ExpectNoLeaks();
}

// After a sticky error, a new pool (the control plane's re-install) works:
// the old pool's death is its own.
void TestNewPoolAfterSticky() {
  gs_testing_use_fake_driver();
  gs_pool* p = NewPool(4);
  gs_testing_fake_set_sticky(719);
  CHECK_EQ(gs_pool_record_begin(p, 0, kStreamA, nullptr), GS_ERR_POOL_DEAD);
  gs_testing_fake_set_sticky(0);
  Destroy(p);
  p = NewPool(4);
  Span(p, 0, kStreamA, kMs);
  gs_testing_fake_advance(2 * kMs);
  gs_harvest_item it = Item(0);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  Destroy(p);
  ExpectNoLeaks();
}

void TestCaptureRefused() {
  FakePool fp(4);
  gs_pool* p = fp.p;
  gs_testing_fake_set_capturing(kStreamB, 0);
  const gs_fake_counters before = Counters();
  int32_t cu = -1;
  CHECK_EQ(gs_pool_record_begin(p, 0, kStreamB, &cu), GS_ERR_CAPTURING);
  CHECK_EQ(cu, 0);
  CHECK_EQ(gs_pool_record_end(p, 0, kStreamB, &cu), GS_ERR_CAPTURING);
  int32_t capturing = 0;
  CHECK_EQ(gs_pool_is_capturing(p, kStreamB, &capturing, &cu), GS_OK);
  CHECK_EQ(capturing, 1);
  CHECK_EQ(gs_pool_is_capturing(p, kStreamA, &capturing, &cu), GS_OK);
  CHECK_EQ(capturing, 0);
  const gs_fake_counters after = Counters();
  CHECK_EQ(after.event_records, before.event_records);
  CHECK_EQ(after.records_into_capture, 0);
  // Spans on other streams, harvested while the GLOBAL capture runs, leave
  // it intact.
  Span(p, 1, kStreamA, kMs);
  gs_testing_fake_advance(2 * kMs);
  gs_harvest_item it = Item(1, 1);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK_EQ(Counters().captures_invalidated, 0);
  gs_testing_fake_set_capturing(kStreamB, -1);
  // The slot refused during capture was never recorded.
  it = Item(0);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_ERROR);
  CHECK_EQ(it.cu_result, 400);
}

void TestCaptureModeExchange() {
  gs_testing_use_fake_driver();
  gs_pool* p = NewPool(16);
  gs_testing_fake_set_capturing(kStreamB, 0);  // a GLOBAL capture elsewhere
  for (int round = 0; round < 5; ++round) {
    for (uint32_t s = 0; s < 4; ++s) Span(p, s, kStreamA, kMs);
    gs_testing_fake_advance(3 * kMs);
    gs_harvest_item items[4] = {Item(0), Item(1), Item(2, 1), Item(3)};
    const int64_t ex = Counters().mode_exchanges;
    CHECK_EQ(gs_pool_harvest(p, items, 4, nullptr), GS_OK);
    CHECK_EQ(Counters().mode_exchanges, ex + 2);
    CHECK_EQ(gs_testing_fake_thread_capture_mode(), 0);  // GLOBAL again
  }
  gs_fake_counters c = Counters();
  CHECK(c.event_queries > 0);
  CHECK_EQ(c.unrelaxed_queries, 0);
  CHECK_EQ(c.captures_invalidated, 0);
  // Control: without the exchange the same harvest breaks the capture.
  gs_testing_set_capture_mode_exchange(0);
  Span(p, 5, kStreamA, kMs);
  gs_testing_fake_advance(3 * kMs);
  gs_harvest_item it = Item(5);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(Counters().captures_invalidated, 1);
  gs_testing_set_capture_mode_exchange(1);
  gs_testing_fake_set_capturing(kStreamB, -1);
  // Destroy queries in RELAXED mode too.
  gs_testing_fake_set_capturing(kStreamB, 0);
  Span(p, 6, kStreamA, kMs);
  const int64_t unrelaxed = Counters().unrelaxed_queries;
  CHECK_EQ(gs_pool_destroy(p, nullptr), GS_ERR_BUSY);
  gs_testing_fake_advance(100 * kMs);
  Destroy(p);
  CHECK_EQ(Counters().unrelaxed_queries, unrelaxed);
  CHECK_EQ(Counters().captures_invalidated, 1);
  ExpectNoLeaks();
}

void TestContextAdoptedOrPushed() {
  gs_testing_use_fake_driver();
  gs_testing_fake_set_current_device(-1);
  gs_testing_fake_reset_counters();
  // A thread with no current context adopts the pool's, once.
  gs_pool* p = NewPool(4);
  CHECK_EQ(Counters().ctx_sets, 1);
  Span(p, 0, kStreamA, kMs);
  CHECK_EQ(Counters().ctx_sets, 1);
  CHECK_EQ(Counters().ctx_pushes, 0);
  // A thread on another context gets a push, popped after each call.
  gs_testing_fake_set_current_device(1);
  gs_testing_fake_reset_counters();
  Span(p, 1, kStreamA, kMs);
  CHECK_EQ(Counters().ctx_pushes, 2);
  CHECK_EQ(Counters().ctx_pops, 2);
  CHECK_EQ(Counters().ctx_sets, 0);
  gs_testing_fake_set_current_device(-1);
  gs_testing_fake_advance(10 * kMs);
  Destroy(p);
  ExpectNoLeaks();
}

void TestHarvestMixed() {
  FakePool fp(16);
  gs_pool* p = fp.p;
  Span(p, 0, kStreamA, kMs);      // done at 1 ms
  Span(p, 1, kStreamA, 10 * kMs); // done at 11 ms
  Span(p, 2, kStreamB, kMs);      // done at 1 ms
  CHECK_EQ(gs_pool_record_begin(p, 3, kStreamB, nullptr), GS_OK);  // open: no end yet
  Span(p, 4, kStreamB, 2 * kMs);  // done at 3 ms, elapsed error forced
  // slot 5: never recorded
  gs_testing_fake_advance(5 * kMs);
  // An error of one span's own is that span's: the walk of its stream
  // goes on.
  gs_testing_fake_force(gs_testing_pool_event(p, 4, 1), GS_FAKE_ELAPSED, 400, -1);
  gs_harvest_item items[6] = {Item(4), Item(3), Item(2), Item(1), Item(0), Item(5)};
  CHECK_EQ(gs_pool_harvest(p, items, 6, nullptr), GS_OK);
  CHECK_EQ(items[0].state, GS_SPAN_ERROR);
  CHECK_EQ(items[0].cu_result, 400);
  CHECK_EQ(items[1].state, GS_SPAN_IN_FLIGHT);
  CHECK_EQ(items[2].state, GS_SPAN_DONE);
  CHECK_EQ(items[2].duration_ns, kMs);
  CHECK_EQ(items[3].state, GS_SPAN_IN_FLIGHT);
  CHECK_EQ(items[4].state, GS_SPAN_DONE);
  CHECK_EQ(items[4].duration_ns, kMs);
  CHECK_EQ(items[5].state, GS_SPAN_ERROR);
  CHECK_EQ(items[5].cu_result, 400);
  gs_testing_fake_force(gs_testing_pool_event(p, 4, 1), GS_FAKE_ELAPSED, 0, 0);
  CHECK_EQ(gs_pool_record_end(p, 3, kStreamB, nullptr), GS_OK);
  gs_testing_fake_advance(10 * kMs);
}

void TestHarvestArguments() {
  FakePool fp(4);
  gs_pool* p = fp.p;
  gs_harvest_item items[5] = {Item(0), Item(1), Item(2), Item(3), Item(0)};
  CHECK_EQ(gs_pool_harvest(p, items, 5, nullptr), GS_ERR_INVALID_ARGUMENT);
  items[1].slot = 4;
  CHECK_EQ(gs_pool_harvest(p, items, 2, nullptr), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(items[0].state, -1);  // untouched
  CHECK_EQ(gs_pool_harvest(p, nullptr, 1, nullptr), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_pool_harvest(nullptr, items, 1, nullptr), GS_ERR_INVALID_ARGUMENT);
  const int64_t calls = Counters().driver_calls;
  CHECK_EQ(gs_pool_harvest(p, nullptr, 0, nullptr), GS_OK);
  CHECK_EQ(Counters().driver_calls, calls);
}

// A model of the fake GPU, kept by the test, to check harvests against.
struct Expected {
  int64_t begin_ts = -1, end_ts = -1;
};

// Randomised spans, nested and interleaved on many streams (more than the
// harvest groups), some crossing streams, harvested at random times, checked
// against the test's own model of the fake GPU.
void TestPrefixSearchMatchesModel() {
  gs_testing_use_fake_driver();
  const uint32_t slots = 512;
  gs_pool* p = NewPool(slots);
  std::mt19937 rng(7);
  std::vector<uint64_t> streams;
  for (uint64_t s = 0; s < 20; ++s) streams.push_back(0x10000 + s * 0x100);
  std::map<uint64_t, int64_t> busy;  // the model's busy-until per stream
  int64_t now = 0;
  auto record_ts = [&](uint64_t stream) { return std::max(now, busy[stream]); };
  auto work = [&](uint64_t stream, int64_t ns) {
    gs_testing_fake_stream_work(stream, ns);
    busy[stream] = std::max(busy[stream], now) + ns;
  };
  for (int round = 0; round < 40; ++round) {
    std::vector<Expected> want(slots);
    std::vector<uint32_t> used;
    uint32_t next = 0;
    // Nested spans: an outer span per stream with inner ones inside it, so end
    // order differs from begin order.
    const int nstreams = 1 + static_cast<int>(rng() % streams.size());
    while (next + 8 < slots && static_cast<int>(used.size()) < 300) {
      uint64_t s = streams[rng() % nstreams];
      uint32_t outer = next++;
      want[outer].begin_ts = record_ts(s);
      CHECK_EQ(gs_pool_record_begin(p, outer, s, nullptr), GS_OK);
      const int inner = static_cast<int>(rng() % 4);
      for (int k = 0; k < inner; ++k) {
        uint32_t in = next++;
        want[in].begin_ts = record_ts(s);
        CHECK_EQ(gs_pool_record_begin(p, in, s, nullptr), GS_OK);
        work(s, 1000 + rng() % 100000);
        // Some inner spans end on another stream.
        uint64_t es = rng() % 8 == 0 ? streams[rng() % streams.size()] : s;
        want[in].end_ts = record_ts(es);
        CHECK_EQ(gs_pool_record_end(p, in, es, nullptr), GS_OK);
        used.push_back(in);
      }
      work(s, rng() % 50000);
      want[outer].end_ts = record_ts(s);
      CHECK_EQ(gs_pool_record_end(p, outer, s, nullptr), GS_OK);
      used.push_back(outer);
      if (rng() % 3 == 0) {
        int64_t dt = rng() % 200000;
        gs_testing_fake_advance(dt);
        now += dt;
      }
    }
    // Harvest several times as the clock moves, in a shuffled order.
    std::shuffle(used.begin(), used.end(), rng);
    std::vector<gs_harvest_item> items;
    for (uint32_t s : used) items.push_back(Item(s));
    for (int h = 0; h < 4; ++h) {
      const int64_t q0 = Counters().event_queries;
      CHECK_EQ(gs_pool_harvest(p, items.data(), items.size(), nullptr), GS_OK);
      const int64_t queries = Counters().event_queries - q0;
      size_t done = 0;
      for (const gs_harvest_item& it : items) {
        const Expected& e = want[it.slot];
        bool complete = e.begin_ts <= now && e.end_ts <= now;
        if (complete) {
          ++done;
          CHECK_EQ(it.state, GS_SPAN_DONE);
          const int64_t d = e.end_ts - e.begin_ts;
          // Spans ending on another stream may end "before" they begin.
          CHECK(llabs(it.duration_ns - d) <= llabs(d) / 1000000 + 1);
        } else {
          CHECK_EQ(it.state, GS_SPAN_IN_FLIGHT);
        }
      }
      // Queries only for spans that began on another stream (plus the
      // anchor's): a walk stops at the first end in flight.
      CHECK(queries <= static_cast<int64_t>(items.size() / 4) + 1);
      if (h == 3) CHECK_EQ(done, items.size());
      int64_t dt = h == 2 ? 100 * kMs : static_cast<int64_t>(rng() % (5 * kMs));
      gs_testing_fake_advance(dt);
      now += dt;
    }
  }
  Destroy(p);
  ExpectNoLeaks();
}

// A harvest costs what lands plus one call per stream, whether the GPU has
// finished everything or is far behind.
void TestHarvestCostFollowsWhatLands() {
  FakePool fp(4096);
  gs_pool* p = fp.p;
  std::vector<gs_harvest_item> items;
  for (uint32_t s = 0; s < 4096; ++s) {
    Span(p, s, s % 2 ? kStreamA : kStreamB, 1000);
    items.push_back(Item(s));
  }
  gs_harvest_item warm = Item(0);
  CHECK_EQ(gs_pool_harvest(p, &warm, 1, nullptr), GS_OK);  // promotes the anchor
  // Behind: 10 spans of each stream have completed, 4076 are in flight.
  gs_testing_fake_advance(10 * 1000);
  gs_fake_counters before = Counters();
  CHECK_EQ(gs_pool_harvest(p, items.data() + 1, items.size() - 1, nullptr), GS_OK);
  gs_fake_counters after = Counters();
  size_t done = 0;
  for (size_t i = 1; i < items.size(); ++i) done += items[i].state == GS_SPAN_DONE;
  CHECK_EQ(done, 19u);  // slot 0 landed in the warm-up harvest
  CHECK_EQ(after.event_elapsed - before.event_elapsed, 19 + 2);
  CHECK(after.event_queries - before.event_queries <= 1);  // the anchor's, at most
  // All done: one elapsed-time read per span, no query.
  gs_testing_fake_advance(100 * kMs);
  before = Counters();
  CHECK_EQ(gs_pool_harvest(p, items.data(), items.size(), nullptr), GS_OK);
  after = Counters();
  CHECK(after.event_queries - before.event_queries <= 1);
  CHECK_EQ(after.event_elapsed - before.event_elapsed, 4096);
  for (const gs_harvest_item& it : items) CHECK_EQ(it.state, GS_SPAN_DONE);
}

void TestAnchorStartTimes() {
  gs_testing_use_fake_driver();
  struct timespec ts;
  auto host = [&] {
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  };
  const int64_t h0 = host();
  gs_pool* p = NewPool(8);  // records anchor 1 at fake time 0
  const int64_t h1 = host();
  // Before any harvest promoted an anchor, spans get no start time.
  Span(p, 0, kStreamA, kMs);
  gs_testing_fake_advance(2 * kMs);
  gs_harvest_item it = Item(0, 1);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);  // promotes anchor 1
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK_EQ(it.start_ns, 0);
  // The default interval (500 ms) is far off: no new anchor per harvest.
  const int64_t records = Counters().event_records;
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(Counters().event_records, records);
  // A span beginning at fake 2 ms + 1 ms of backlog = 3 ms after anchor 1.
  gs_testing_fake_stream_work(kStreamA, kMs);
  Span(p, 1, kStreamA, kMs);
  gs_testing_fake_advance(5 * kMs);
  it = Item(1, 1);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK(it.start_ns >= h0 + 3 * kMs && it.start_ns <= h1 + 3 * kMs);
  // Re-anchor on every harvest: a span older than the ring loses its anchor.
  gs_pool_set_anchor_interval(p, 1);
  gs_testing_fake_stream_work(kStreamB, 50 * kMs);
  Span(p, 2, kStreamB, kMs);  // tagged with anchor 1, ends at 58 ms
  for (int h = 0; h < 6; ++h) {
    it = Item(2, 1);
    CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
    CHECK_EQ(it.state, GS_SPAN_IN_FLIGHT);
  }
  gs_testing_fake_advance(100 * kMs);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK_EQ(it.start_ns, 0);
  // A span begun after re-anchoring is placed again: the harvest between h2
  // and h3 records an anchor at the current fake time, the next promotes it,
  // and the span begins at that same fake time.
  const int64_t h2 = host();
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  const int64_t h3 = host();
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  Span(p, 3, kStreamA, kMs);
  gs_testing_fake_advance(2 * kMs);
  it = Item(3, 1);
  CHECK_EQ(gs_pool_harvest(p, &it, 1, nullptr), GS_OK);
  CHECK_EQ(it.state, GS_SPAN_DONE);
  CHECK(it.start_ns >= h2 && it.start_ns <= h3);
  gs_pool_set_anchor_interval(p, 0);  // back to the default
  Destroy(p);
  ExpectNoLeaks();
}

// Spans that follow each other share one event: the next span begins where
// the one before ended, including its start time and the stream's backlog.
void TestRecordNext() {
  FakePool fp(8);
  gs_pool* p = fp.p;
  gs_harvest_item first = Item(0, 1);
  CHECK_EQ(gs_pool_harvest(p, &first, 0, nullptr), GS_OK);
  gs_testing_fake_advance(kMs);
  gs_harvest_item warm = Item(7, 1);
  Span(p, 7, kStreamA, kMs);  // a harvest after it promotes the first anchor
  gs_testing_fake_advance(2 * kMs);
  CHECK_EQ(gs_pool_harvest(p, &warm, 1, nullptr), GS_OK);
  CHECK_EQ(warm.state, GS_SPAN_DONE);
  const int64_t records = Counters().event_records;
  CHECK_EQ(gs_pool_record_begin(p, 0, kStreamA, nullptr), GS_OK);
  gs_testing_fake_stream_work(kStreamA, 2 * kMs);
  CHECK_EQ(gs_pool_record_next(p, 0, 1, kStreamA, nullptr), GS_OK);
  gs_testing_fake_stream_work(kStreamA, 3 * kMs);
  CHECK_EQ(gs_pool_record_next(p, 1, 2, kStreamA, nullptr), GS_OK);
  gs_testing_fake_stream_work(kStreamA, 5 * kMs);
  CHECK_EQ(gs_pool_record_end(p, 2, kStreamA, nullptr), GS_OK);
  CHECK_EQ(Counters().event_records, records + 4);  // three spans, four events
  gs_harvest_item its[3] = {Item(0, 1), Item(1, 1), Item(2, 1)};
  CHECK_EQ(gs_pool_harvest(p, its, 3, nullptr), GS_OK);
  CHECK_EQ(its[2].state, GS_SPAN_IN_FLIGHT);
  gs_testing_fake_advance(20 * kMs);
  CHECK_EQ(gs_pool_harvest(p, its, 3, nullptr), GS_OK);
  const int64_t want[3] = {2 * kMs, 3 * kMs, 5 * kMs};
  for (int k = 0; k < 3; ++k) {
    CHECK_EQ(its[k].state, GS_SPAN_DONE);
    CHECK_EQ(its[k].duration_ns, want[k]);
    CHECK(its[k].start_ns > 0);
  }
  CHECK_EQ(its[1].start_ns - its[0].start_ns, 2 * kMs);
  CHECK_EQ(its[2].start_ns - its[1].start_ns, 3 * kMs);
  // A slot's own begin again replaces the borrowed one.
  Span(p, 1, kStreamB, kMs);
  gs_testing_fake_advance(2 * kMs);
  its[1] = Item(1);
  CHECK_EQ(gs_pool_harvest(p, &its[1], 1, nullptr), GS_OK);
  CHECK_EQ(its[1].state, GS_SPAN_DONE);
  CHECK_EQ(its[1].duration_ns, kMs);
  // Refused: out of range, the same slot, a capturing stream (nothing
  // recorded, neither span changed).
  int32_t cu = -1;
  CHECK_EQ(gs_pool_record_next(p, 0, 8, kStreamA, &cu), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_pool_record_next(p, 8, 0, kStreamA, &cu), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_pool_record_next(p, 3, 3, kStreamA, &cu), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_pool_record_next(nullptr, 0, 1, kStreamA, &cu), GS_ERR_INVALID_ARGUMENT);
  CHECK_EQ(gs_pool_record_begin(p, 4, kStreamB, nullptr), GS_OK);
  gs_testing_fake_set_capturing(kStreamB, 0);
  const int64_t before = Counters().event_records;
  CHECK_EQ(gs_pool_record_next(p, 4, 5, kStreamB, &cu), GS_ERR_CAPTURING);
  CHECK_EQ(Counters().event_records, before);
  gs_testing_fake_set_capturing(kStreamB, -1);
  gs_harvest_item open = Item(4);
  CHECK_EQ(gs_pool_harvest(p, &open, 1, nullptr), GS_OK);
  CHECK_EQ(open.state, GS_SPAN_IN_FLIGHT);  // still open: its end was refused
  CHECK_EQ(gs_pool_record_end(p, 4, kStreamB, nullptr), GS_OK);
  gs_testing_fake_advance(2 * kMs);
}

void TestTwoDevices() {
  gs_testing_use_fake_driver();
  gs_testing_fake_set_device_count(2);
  gs_pool* a = NewPool(8, 0);
  gs_pool* b = NewPool(8, 1);
  CHECK_EQ(gs_pool_device(b), 1);
  CHECK_EQ(Counters().retained_contexts, 2);
  Span(a, 0, kStreamA, kMs);
  Span(b, 0, kStreamB, 3 * kMs);
  gs_testing_fake_advance(5 * kMs);
  gs_harvest_item ia = Item(0), ib = Item(0);
  CHECK_EQ(gs_pool_harvest(a, &ia, 1, nullptr), GS_OK);
  CHECK_EQ(gs_pool_harvest(b, &ib, 1, nullptr), GS_OK);
  CHECK_EQ(ia.duration_ns, kMs);
  CHECK_EQ(ib.duration_ns, 3 * kMs);
  Destroy(a);
  CHECK_EQ(Counters().retained_contexts, 1);
  Destroy(b);
  ExpectNoLeaks();
}

void TestConcurrentRecordsAndHarvest() {
  gs_testing_use_fake_driver();
  const uint32_t threads = 4, per = 256;
  gs_pool* p = NewPool(threads * per);
  std::atomic<uint32_t> ended{0};
  std::vector<std::thread> workers;
  for (uint32_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (uint32_t k = 0; k < per; ++k) {
        uint32_t slot = t * per + k;
        uint64_t stream = 0x9000 + t;
        if (gs_pool_record_begin(p, slot, stream, nullptr) != GS_OK) continue;
        if (gs_pool_record_end(p, slot, stream, nullptr) == GS_OK) ended.fetch_add(1);
      }
    });
  }
  std::vector<gs_harvest_item> items;
  for (uint32_t s = 0; s < threads * per; ++s) items.push_back(Item(s));
  for (int h = 0; h < 50; ++h) {
    CHECK_EQ(gs_pool_harvest(p, items.data(), items.size(), nullptr), GS_OK);
  }
  for (std::thread& w : workers) w.join();
  CHECK_EQ(ended.load(), threads * per);
  CHECK_EQ(gs_pool_harvest(p, items.data(), items.size(), nullptr), GS_OK);
  for (const gs_harvest_item& it : items) CHECK_EQ(it.state, GS_SPAN_DONE);
  Destroy(p);
  ExpectNoLeaks();
}

struct Test {
  const char* name;
  void (*fn)();
};

const Test kTests[] = {
    {"NoLibrary", TestNoLibrary},
    {"RealLoaderWithoutGpu", TestRealLoaderWithoutGpu},
    {"MissingSymbol", TestMissingSymbol},
    {"OptionalSymbolMissing", TestOptionalSymbolMissing},
    {"DeviceIdentity", TestDeviceIdentity},
    {"EventOffsetCalibration", TestEventOffsetCalibration},
    {"InitError", TestInitError},
    {"ErrorStrings", TestErrorStrings},
    {"CreateFailsPartWay", TestCreateFailsPartWay},
    {"CreateArguments", TestCreateArguments},
    {"RecordError", TestRecordError},
    {"NotReadyThenDone", TestNotReadyThenDone},
    {"ForcedResults", TestForcedResults},
    {"StickyError", TestStickyError},
    {"StickyDuringHarvest", TestStickyDuringHarvest},
    {"RecordEndFailsMidSpan", TestRecordEndFailsMidSpan},
    {"CreateFailsAtAnchor", TestCreateFailsAtAnchor},
    {"CreateFailsAtEveryCall", TestCreateFailsAtEveryCall},
    {"NoEventDestroyedInFlight", TestNoEventDestroyedInFlight},
    {"StickyDuringDestroy", TestStickyDuringDestroy},
    {"NewPoolAfterSticky", TestNewPoolAfterSticky},
    {"CaptureRefused", TestCaptureRefused},
    {"CaptureModeExchange", TestCaptureModeExchange},
    {"ContextAdoptedOrPushed", TestContextAdoptedOrPushed},
    {"HarvestMixed", TestHarvestMixed},
    {"HarvestArguments", TestHarvestArguments},
    {"PrefixSearchMatchesModel", TestPrefixSearchMatchesModel},
    {"HarvestCostFollowsWhatLands", TestHarvestCostFollowsWhatLands},
    {"AnchorStartTimes", TestAnchorStartTimes},
    {"RecordNext", TestRecordNext},
    {"TwoDevices", TestTwoDevices},
    {"ConcurrentRecordsAndHarvest", TestConcurrentRecordsAndHarvest},
};

}  // namespace

int main() {
  int passed = 0, failed = 0;
  for (const Test& t : kTests) {
    const int before = g_failures;
    t.fn();
    const bool ok = g_failures == before;
    printf("%s %s\n", ok ? "PASS" : "FAIL", t.name);
    ok ? ++passed : ++failed;
  }
  gs_testing_use_real_driver();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

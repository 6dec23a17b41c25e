// CPU tests of the kernel tracer against the fake CUPTI (//cuda:core_testing):
// record parsing through the real buffer callbacks, names, the bounded ring,
// drops, refusals, windows, the launch guard and watch, the locks' order.
// CI runs them under ASan and UBSan too. No test framework: the last line
// reads "N passed, N failed". One file over 600 lines, as one binary: the
// tracer is one per process, and its tests share the fake CUPTI's state.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "gpuspans/tracer.h"
#include "gpuspans/tracer_testing.h"

namespace {

// Callback ids (cupti_runtime_cbid.h, cupti_driver_cbid.h): two launches,
// and two calls that launch nothing (cudaGetDevice, cuCtxGetCurrent).
constexpr uint32_t CUPTI_RUNTIME_LAUNCH_KERNEL = 211;
constexpr uint32_t CUPTI_DRIVER_GRAPH_LAUNCH = 514;
constexpr uint32_t CUPTI_RUNTIME_NOT_A_LAUNCH = 10;
constexpr uint32_t CUPTI_DRIVER_NOT_A_LAUNCH = 303;

void Open() {
  gs_error err;
  gs_status st = gs_tracer_open(nullptr, 1000, &err);
  if (st != GS_OK) fprintf(stderr, "gs_tracer_open: %s\n", err.message);
  CHECK_EQ(st, GS_OK);
}

// Drain empties the ring of what earlier tests left.
void Drain() {
  gs_kernel_record r[256];
  while (gs_tracer_read(r, 256) > 0) {
  }
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
  // CUDA 12 before 12.9 (API version 27): a refused buffer can crash it.
  gs_testing_use_fake_cupti();
  gs_testing_cupti_version(26);
  CHECK_EQ(gs_tracer_open(nullptr, 100, &err), GS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "version 26") != nullptr);
  CHECK_EQ(gs_tracer_window_open(nullptr, 0, &err), GS_ERR_INVALID_ARGUMENT);
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
  CHECK(Name(r[0].name).compare(115, 4, "...#") == 0);
  CHECK(Name(r[1].name) == "f<int (*)(int)>");
  CHECK(Name(r[2].name) == "with?control");
  char tiny[4];
  CHECK_EQ(gs_tracer_name(r[1].name, tiny, sizeof tiny), 15);  // the length, buf cut and terminated
  CHECK(strcmp(tiny, "f<i") == 0);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
}

// CUDA 12.9's CUPTI (API version 27) is the first admitted, 28 the last
// of CUDA 12 (Refusals has 26): records flow on both, windows included.
void Cuda12From129IsAdmitted() {
  for (uint32_t v : {27u, 28u}) {
    gs_testing_use_fake_cupti();
    gs_testing_cupti_version(v);
    Open();
    CHECK_EQ(gs_tracer_enable(1, nullptr), GS_OK);
    CHECK_EQ(gs_testing_cupti_kernel(0, 1, 1, 2, "k", 0), 1);
    CHECK_EQ(gs_testing_cupti_deliver(10), 1);
    gs_kernel_record r[2];
    CHECK_EQ(gs_tracer_read(r, 2), 1);
    CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
    gs_testing_use_fake_cupti();
    gs_testing_cupti_version(v);
    CHECK_EQ(gs_tracer_window_open(nullptr, 0, nullptr), GS_OK);
    CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  }
}

void WindowOpen() {
  gs_error err;
  gs_status st = gs_tracer_window_open(nullptr, 0, &err);
  if (st != GS_OK) fprintf(stderr, "gs_tracer_window_open: %s\n", err.message);
  CHECK_EQ(st, GS_OK);
}

// A window collects from its open to its close, delivers at the close, and
// leaves CUPTI detached; every CUPTI call of ours is on the window's thread.
void WindowCollectsAndDetaches() {
  gs_testing_use_fake_cupti();
  gs_testing_cupti_expect_thread(gs_testing_thread_id());
  CHECK_EQ(gs_testing_cupti_attached(), 0);
  WindowOpen();
  CHECK_EQ(gs_testing_cupti_attached(), 1);
  CHECK_EQ(gs_testing_cupti_enabled(), 1);
  CHECK_EQ(gs_testing_cupti_graph_launch(), 0);
  CHECK_EQ(gs_testing_cupti_kernel(0, 1, 10, 20, "_Z6decodePfi", 4), 1);
  CHECK_EQ(gs_testing_cupti_kernel(0, 1, 30, 40, "plain", 0), 1);
  gs_error err;
  CHECK_EQ(gs_tracer_enable(0, &err), GS_ERR_INVALID_ARGUMENT);  // a window collects until its close
  CHECK(strstr(err.message, "until gs_tracer_close") != nullptr);
  CHECK_EQ(gs_tracer_enable(1, nullptr), GS_OK);
  int64_t off = gs_tracer_clock_offset_ns();
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_attached(), 0);
  CHECK_EQ(gs_testing_cupti_finalizes(), 1);
  CHECK_EQ(gs_testing_cupti_bad_finalizes(), 0);
  gs_kernel_record r[4];
  CHECK_EQ(gs_tracer_read(r, 4), 3);  // the close's forced flush delivered them
  CHECK_EQ(r[0].kind, GS_RECORD_LAUNCH);  // the graph's launch
  CHECK_EQ(r[0].graph, GS_RECORD_LAUNCHED_GRAPH);
  CHECK_EQ(r[1].graph, 4);
  CHECK(gs_tracer_clock_offset_ns() != 0 || off == 0);
  gs_tracer_stats s;
  gs_tracer_get_stats(&s);
  CHECK_EQ(s.windows, 1);
  // Again: CUPTI attaches anew.
  WindowOpen();
  CHECK_EQ(gs_testing_cupti_attached(), 1);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_finalizes(), 2);
  CHECK_EQ(gs_testing_cupti_stray_calls(), 0);
  // The fake itself sees a rule broken: a replay while attached with
  // collection off, then a finalize.
  CHECK_EQ(gs_tracer_open(nullptr, 1000, nullptr), GS_OK);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_attached(), 1);
}

// A close from another thread is refused while the opener lives; once it
// has exited, any thread may close.
void WindowClosesOnlyOnItsThread() {
  gs_testing_use_fake_cupti();
  int64_t opener = 0;
  std::thread([&] {
    opener = gs_testing_thread_id();
    WindowOpen();
  }).join();
  CHECK(opener != gs_testing_thread_id());
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);  // the opener has exited
  CHECK_EQ(gs_testing_cupti_finalizes(), 1);

  gs_testing_use_fake_cupti();
  std::mutex mu;
  std::condition_variable cv;
  int phase = 0;
  std::thread owner([&] {
    WindowOpen();
    std::unique_lock<std::mutex> l(mu);
    phase = 1;
    cv.notify_all();
    cv.wait(l, [&] { return phase == 2; });
    CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  });
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return phase == 1; });
    gs_error err;
    CHECK_EQ(gs_tracer_close(&err), GS_ERR_WRONG_THREAD);
    CHECK(strstr(err.message, "launching thread") != nullptr);
    CHECK_EQ(gs_testing_cupti_attached(), 1);
    CHECK_EQ(gs_testing_cupti_enabled(), 1);
    phase = 2;
    cv.notify_all();
  }
  owner.join();
  CHECK_EQ(gs_testing_cupti_finalizes(), 1);
  CHECK_EQ(gs_testing_cupti_bad_finalizes(), 0);
}

// Windows from two threads that both live (two hubs, or one stepped from
// two threads) are refused for good: each thread launches while the other
// attaches or detaches.
void WindowsFromTwoThreadsRefused() {
  gs_testing_use_fake_cupti();
  WindowOpen();
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  gs_error err;
  gs_status st = GS_OK;
  std::thread([&] { st = gs_tracer_window_open(nullptr, 0, &err); }).join();
  CHECK_EQ(st, GS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "opened on two threads") != nullptr);
  CHECK_EQ(gs_tracer_window_open(nullptr, 0, &err), GS_ERR_INVALID_ARGUMENT);  // for good, this thread too
  CHECK_EQ(gs_testing_cupti_attached(), 0);
  // Also while the first thread's window is open: it still closes there.
  gs_testing_use_fake_cupti();
  WindowOpen();
  std::thread([&] { st = gs_tracer_window_open(nullptr, 0, &err); }).join();
  CHECK_EQ(st, GS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "opened on two threads") != nullptr);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_attached(), 0);
  CHECK_EQ(gs_tracer_window_open(nullptr, 0, &err), GS_ERR_INVALID_ARGUMENT);
  // A thread that took over from one that has exited is fine.
  gs_testing_use_fake_cupti();
  std::thread([] { WindowOpen(); CHECK_EQ(gs_tracer_close(nullptr), GS_OK); }).join();
  WindowOpen();
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
}

// Once CUPTI stays attached for good (an attached open, or an abandoned
// window), no window opens: its finalize could break a graph.
void NoWindowAfterAttached() {
  gs_testing_use_fake_cupti();
  WindowOpen();
  CHECK_EQ(gs_tracer_abandon(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_enabled(), 0);
  CHECK_EQ(gs_testing_cupti_attached(), 1);
  CHECK_EQ(gs_testing_cupti_graph_launch(), 0);
  gs_error err;
  CHECK_EQ(gs_tracer_window_open(nullptr, 0, &err), GS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "abandoned") != nullptr);
  CHECK_EQ(gs_testing_cupti_finalizes(), 0);
  CHECK_EQ(gs_testing_cupti_bad_finalizes(), 0);
}

// A window that cannot start leaves CUPTI as it found it.
void WindowRefusalsDetach() {
  gs_error err;
  gs_testing_use_fake_cupti();
  gs_testing_cupti_fail_enable(27);
  CHECK_EQ(gs_tracer_window_open(nullptr, 0, &err), GS_ERR_DRIVER);
  CHECK_EQ(gs_testing_cupti_attached(), 0);
  CHECK_EQ(gs_testing_cupti_finalizes(), 1);
  gs_testing_use_fake_cupti();
  gs_testing_cupti_other_subscriber(1);
  CHECK_EQ(gs_tracer_window_open(nullptr, 0, &err), GS_ERR_BUSY);
  CHECK_EQ(gs_testing_cupti_finalizes(), 0);
  CHECK_EQ(gs_tracer_window_open(nullptr, 0x2, &err), GS_ERR_INVALID_ARGUMENT);
  // Taken over: the other client is done (torch.profiler's lingering
  // subscriber); the detach clears it.
  CHECK_EQ(gs_tracer_window_open(nullptr, GS_TRACER_TAKE_OVER, &err), GS_OK);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_finalizes(), 1);
  gs_testing_use_fake_cupti();
  WindowOpen();
  CHECK_EQ(gs_tracer_window_open(nullptr, 0, &err), GS_ERR_BUSY);
  CHECK_EQ(gs_tracer_open(nullptr, 100, &err), GS_ERR_BUSY);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
}

// Another thread's CUDA graph replays during a window: the close delivers
// the records but does not detach (a detach beside such replays lost the
// CUDA context on an H200), names the thread, and keeps windows off; the
// window's own replays and another thread's eager launches are no reason.
void WindowBesideForeignGraphReplaysStaysAttached() {
  gs_testing_use_fake_cupti();
  WindowOpen();
  CHECK_EQ(gs_testing_cupti_graph_launch(), 0);  // the window's own thread
  gs_testing_cupti_kernel_launch();
  int64_t other = 0;
  std::thread([&] {
    other = gs_testing_thread_id();
    CHECK_EQ(gs_testing_cupti_graph_launch(), 0);
    gs_testing_cupti_kernel_launch();
  }).join();
  CHECK_EQ(gs_testing_cupti_kernel(0, 1, 10, 20, "k", 0), 1);
  gs_error err;
  CHECK_EQ(gs_tracer_close(&err), GS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(err.message, ("thread " + std::to_string(other) + " replayed 1 CUDA graphs").c_str()) != nullptr);
  CHECK_EQ(gs_testing_cupti_finalizes(), 0);
  CHECK_EQ(gs_testing_cupti_attached(), 1);
  CHECK_EQ(gs_testing_cupti_enabled(), 0);
  gs_kernel_record r[8];
  CHECK_EQ(gs_tracer_read(r, 8), 5);  // delivered all the same: 4 launches, 1 kernel
  gs_tracer_stats s;
  gs_tracer_get_stats(&s);
  CHECK_EQ(s.foreign_graph_launches, 1);
  CHECK_EQ(s.foreign_launches, 1);
  // The process goes on attached: replays keep working, on any thread.
  std::thread([] { CHECK_EQ(gs_testing_cupti_graph_launch(), 0); }).join();
  CHECK_EQ(gs_testing_cupti_graph_launch(), 0);
  CHECK_EQ(gs_tracer_window_open(nullptr, 0, &err), GS_ERR_INVALID_ARGUMENT);
  CHECK(strstr(err.message, "replayed 1 CUDA graphs") != nullptr);
  CHECK_EQ(gs_testing_cupti_bad_finalizes(), 0);

  // Eager launches from another thread alone: the window detaches.
  gs_testing_use_fake_cupti();
  WindowOpen();
  std::thread([] { gs_testing_cupti_kernel_launch(); }).join();
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_finalizes(), 1);
  CHECK_EQ(gs_testing_cupti_bad_finalizes(), 0);
  gs_tracer_get_stats(&s);
  CHECK_EQ(s.foreign_launches, 1);
  CHECK_EQ(s.foreign_graph_launches, 0);
  // A replay by another thread outside windows is not seen, and not a
  // reason: only a replay during a detach breaks it (tracer.h).
  std::thread([] { CHECK_EQ(gs_testing_cupti_graph_launch(), 0); }).join();
  WindowOpen();
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_bad_finalizes(), 0);
}

// Another thread replaying graphs through the launch guard, each replay in
// flight for 50 us, beside windows opened and closed in a loop: no detach
// overlaps a replay, no window stays attached, and replays that met a
// detach waited for it.
// ReplaysBesideWindows opens and closes windows while another thread
// replays graphs through the guard, and a third does meddle once the
// replays have begun; no replay may overlap a detach.
void ReplaysBesideWindows(void (*meddle)()) {
  gs_testing_use_fake_cupti();
  gs_tracer_stats before;
  gs_tracer_get_stats(&before);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::atomic<int64_t> replays{0};
  std::thread replayer([&] {
    while (!stop.load()) {
      if (gs_testing_cupti_guarded_graph_launch(50000) != 0) failures++;
      replays++;
    }
  });
  while (replays.load() == 0) std::this_thread::yield();
  std::thread(meddle).join();
  // 200 windows at least, and on until a replay has met a detach (bounded:
  // a loaded machine may starve the replaying thread for a while).
  int windows = 0;
  gs_tracer_stats s;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    // An open or close that met a guarded replay still running after 20 ms
    // (its thread descheduled inside the guard) is refused: tried again,
    // as a hub tries at its next step.
    gs_status st;
    while ((st = gs_tracer_window_open(nullptr, 0, nullptr)) == GS_ERR_BUSY) {
    }
    CHECK_EQ(st, GS_OK);
    std::this_thread::sleep_for(std::chrono::microseconds(100));  // the window's step
    while ((st = gs_tracer_close(nullptr)) == GS_ERR_BUSY) {
    }
    CHECK_EQ(st, GS_OK);
    windows++;
    gs_tracer_get_stats(&s);
  } while ((windows < 200 || s.guard_waits == before.guard_waits) && std::chrono::steady_clock::now() < deadline);
  stop = true;
  replayer.join();
  CHECK_EQ(failures.load(), 0);
  CHECK_EQ(gs_testing_cupti_finalizes(), windows);
  CHECK_EQ(gs_testing_cupti_bad_finalizes(), 0);
  CHECK_EQ(gs_testing_cupti_attached(), 0);
  gs_tracer_get_stats(&s);
  CHECK_EQ(s.foreign_graph_launches, 0);
  CHECK(s.guarded_launches > before.guarded_launches);
  CHECK(s.guard_waits > before.guard_waits);
  CHECK_EQ(s.guard_inflight, 0);
}

void GuardedReplaysNeverOverlapADetach() {
  ReplaysBesideWindows([] {});
}

// Exits without an enter are refused and counted: taken, each would let a
// detach run during the other thread's replay (the fake CUPTI fails that
// replay, as an H200 lost its context).
void UnmatchedExitsAreRefused() {
  gs_tracer_stats before, s;
  gs_tracer_get_stats(&before);
  ReplaysBesideWindows([] {
    for (int i = 0; i < 3; i++) gs_launch_guard_exit();
  });
  gs_tracer_get_stats(&s);
  CHECK_EQ(s.guard_unmatched_exits - before.guard_unmatched_exits, 3);
  CHECK(s.guard_unmatched_thread != 0);
  // Nested enters need as many exits; one more is refused.
  gs_launch_guard_enter();
  gs_launch_guard_enter();
  gs_launch_guard_exit();
  CHECK_EQ(gs_testing_in_launch_guard(), 1);
  gs_launch_guard_exit();
  gs_launch_guard_exit();
  CHECK_EQ(gs_testing_in_launch_guard(), 0);
  gs_tracer_get_stats(&s);
  CHECK_EQ(s.guard_inflight, 0);
  CHECK_EQ(s.guard_unmatched_exits - before.guard_unmatched_exits, 4);
}

// A thread left inside the guard costs a window one bounded wait: then
// opens and closes are refused at once, naming it, until it leaves.
void AGuardLeftHeldCostsOneWait() {
  gs_testing_use_fake_cupti();
  std::atomic<bool> release{false};
  std::atomic<uint32_t> holder{0};
  std::thread stuck([&] {
    gs_launch_guard_enter();
    holder = static_cast<uint32_t>(syscall(SYS_gettid));
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    gs_launch_guard_exit();
  });
  while (holder.load() == 0) std::this_thread::yield();
  gs_tracer_stats before, s;
  gs_tracer_get_stats(&before);
  gs_error err;
  CHECK_EQ(gs_tracer_window_open(nullptr, 0, &err), GS_ERR_BUSY);  // waits its 20 ms
  CHECK(strstr(err.message, "the launch guard is held by thread") != nullptr);
  CHECK(strstr(err.message, std::to_string(holder.load()).c_str()) != nullptr);
  for (int i = 0; i < 100; i++) CHECK_EQ(gs_tracer_window_open(nullptr, 0, nullptr), GS_ERR_BUSY);
  gs_tracer_get_stats(&s);
  CHECK_EQ(s.guard_backoffs - before.guard_backoffs, 100);  // none of them waited
  CHECK_EQ(s.guard_holder, holder.load());
  CHECK(s.guard_held_ns >= 20000000);
  CHECK_EQ(s.guard_inflight, 1);
  release = true;
  stuck.join();
  gs_tracer_get_stats(&s);
  CHECK_EQ(s.guard_inflight, 0);
  CHECK_EQ(s.guard_holder, 0);
  CHECK_EQ(s.guard_held_ns, 0);
  WindowOpen();
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
}

// A guarded replay still in flight when a window closes: the close waits up
// to its bound, then refuses (GS_ERR_BUSY) and leaves the window open and
// collecting; it closes once the replay is done.
void CloseWaitsForAGuardedReplay() {
  gs_testing_use_fake_cupti();
  WindowOpen();
  std::atomic<bool> started{false}, release{false};
  std::thread replayer([&] {
    gs_launch_guard_enter();
    started = true;
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    gs_launch_guard_exit();
  });
  while (!started.load()) std::this_thread::yield();
  gs_error err;
  CHECK_EQ(gs_tracer_close(&err), GS_ERR_BUSY);
  CHECK(strstr(err.message, "the launch guard is held by thread") != nullptr);
  CHECK_EQ(gs_testing_cupti_enabled(), 1);
  release = true;
  replayer.join();
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_finalizes(), 1);
  CHECK_EQ(gs_testing_cupti_bad_finalizes(), 0);
}

int64_t RealtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A window delivers copies and memsets as their own kinds, and the host
// side of launches (kernel and graph, any thread) with their thread,
// times and correlation, from callbacks on the launch calls alone.
void WindowRecordsCopiesAndLaunches() {
  setenv("GPUSPANS_LAUNCH_WATCH", "callbacks", 1);
  struct Unset {
    ~Unset() { unsetenv("GPUSPANS_LAUNCH_WATCH"); }
  } unset;
  gs_testing_use_fake_cupti();
  gs_testing_cupti_expect_thread(gs_testing_thread_id());
  Drain();
  CHECK_EQ(gs_testing_cupti_copy(0, 1, 1, 2, 0, 0), 0);  // not collecting yet
  WindowOpen();
  uint32_t me = static_cast<uint32_t>(gs_testing_thread_id());
  int64_t t0 = RealtimeNs();
  uint32_t launch = gs_testing_cupti_api_call(1, CUPTI_RUNTIME_LAUNCH_KERNEL, 0, 0);
  CHECK(launch != 0);
  CHECK_EQ(gs_testing_cupti_kernel(0, 1, 140, 160, "k", 0), 1);
  CHECK_EQ(gs_testing_cupti_copy(0, 1, 170, 190, 0, 0), 1);
  CHECK_EQ(gs_testing_cupti_copy(0, 2, 200, 210, 1, 5), 1);
  uint32_t graph = gs_testing_cupti_api_call(0, CUPTI_DRIVER_GRAPH_LAUNCH, 0, 0);
  CHECK(graph != 0);
  uint32_t other = 0, other_tid = 0;
  std::thread([&] {
    other_tid = static_cast<uint32_t>(gs_testing_thread_id());
    other = gs_testing_cupti_api_call(1, CUPTI_RUNTIME_LAUNCH_KERNEL, 0, 0);
  }).join();
  CHECK(other != 0);
  int64_t t1 = RealtimeNs();
  // Not a launch: no callback, no record.
  CHECK_EQ(gs_testing_cupti_api_call(1, CUPTI_RUNTIME_NOT_A_LAUNCH, 0, 0), 0);
  CHECK_EQ(gs_testing_cupti_api_call(0, CUPTI_DRIVER_NOT_A_LAUNCH, 0, 0), 0);
  CHECK_EQ(gs_testing_cupti_api_records(), 0);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_stray_calls(), 0);  // the callbacks call no CUPTI function
  gs_kernel_record r[16];
  size_t n = gs_tracer_read(r, 16);
  CHECK_EQ(n, 6);
  int launches = 0, copies = 0, memsets = 0, kernels = 0;
  int64_t off = gs_tracer_clock_offset_ns();
  for (size_t i = 0; i < n; i++) {
    switch (r[i].kind) {
      case GS_RECORD_LAUNCH:
        launches++;
        CHECK(r[i].start_ns <= r[i].end_ns);
        CHECK(r[i].start_ns + off >= t0 - 1000000 && r[i].end_ns + off <= t1 + 1000000);  // CUPTI's clock
        CHECK_EQ(r[i].device, 0);
        if (r[i].correlation == launch) {
          CHECK_EQ(r[i].thread, me);
          CHECK_EQ(r[i].graph, 0);
        } else if (r[i].correlation == graph) {
          CHECK_EQ(r[i].thread, me);
          CHECK_EQ(r[i].graph, GS_RECORD_LAUNCHED_GRAPH);
        } else {
          CHECK_EQ(r[i].correlation, other);
          CHECK_EQ(r[i].thread, other_tid);
        }
        break;
      case GS_RECORD_MEMCPY:
        copies++;
        CHECK_EQ(r[i].start_ns, 170);
        CHECK_EQ(r[i].end_ns, 190);
        CHECK_EQ(r[i].stream, 1);
        CHECK_EQ(r[i].name, 0);
        CHECK_EQ(r[i].thread, 0);
        break;
      case GS_RECORD_MEMSET:
        memsets++;
        CHECK_EQ(r[i].stream, 2);
        CHECK_EQ(r[i].graph, 5);
        break;
      case GS_RECORD_KERNEL:
        kernels++;
        CHECK_EQ(r[i].thread, 0);
        break;
    }
  }
  CHECK_EQ(launches, 3);
  CHECK_EQ(copies, 1);
  CHECK_EQ(memsets, 1);
  CHECK_EQ(kernels, 1);
  gs_tracer_stats s;
  gs_tracer_get_stats(&s);
  CHECK_EQ(s.foreign_launches, 1);
}

// The watch's cost: callbacks on the launch calls alone where CUPTI lets
// us subscribe; else API activity records switched off but the launch
// calls'; else every call recorded, as before. Each way the window works.
void WindowWatchesLaunchCallsAlone() {
  setenv("GPUSPANS_LAUNCH_WATCH", "callbacks", 1);
  gs_testing_use_fake_cupti();
  WindowOpen();
  gs_testing_cupti_api_call(1, CUPTI_RUNTIME_NOT_A_LAUNCH, 0, 0);
  gs_testing_cupti_api_call(0, CUPTI_DRIVER_NOT_A_LAUNCH, 0, 0);
  gs_testing_cupti_kernel_launch();
  CHECK_EQ(gs_testing_cupti_graph_launch(), 0);
  CHECK_EQ(gs_testing_cupti_callbacks(), 2);
  CHECK_EQ(gs_testing_cupti_api_records(), 0);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  Drain();
  // Another client's subscriber (a profiler's, taken over): the activity
  // records, of the launch calls alone, switched back at the close.
  gs_testing_use_fake_cupti();
  gs_testing_cupti_other_subscriber(1);
  gs_error err;
  CHECK_EQ(gs_tracer_window_open(nullptr, GS_TRACER_TAKE_OVER, &err), GS_OK);
  unsetenv("GPUSPANS_LAUNCH_WATCH");
  CHECK(gs_testing_cupti_api_switched_off() > 0);
  uint32_t launch = gs_testing_cupti_api_call(1, CUPTI_RUNTIME_LAUNCH_KERNEL, 100, 130);
  gs_testing_cupti_api_call(1, CUPTI_RUNTIME_NOT_A_LAUNCH, 0, 0);
  gs_testing_cupti_api_call(0, CUPTI_DRIVER_NOT_A_LAUNCH, 0, 0);
  CHECK_EQ(gs_testing_cupti_graph_launch(), 0);
  CHECK_EQ(gs_testing_cupti_api_records(), 2);
  CHECK_EQ(gs_testing_cupti_callbacks(), 0);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_api_switched_off(), 0);  // a later profiler records every call
  gs_kernel_record r[8];
  CHECK_EQ(gs_tracer_read(r, 8), 2);
  CHECK_EQ(r[0].kind, GS_RECORD_LAUNCH);
  CHECK_EQ(r[0].start_ns, 100);
  CHECK_EQ(r[0].end_ns, 130);
  CHECK_EQ(r[0].correlation, launch);
  CHECK_EQ(r[0].thread, static_cast<uint32_t>(gs_testing_thread_id()));
  CHECK_EQ(r[1].graph, GS_RECORD_LAUNCHED_GRAPH);
  // The activity records asked for: the same, and no callback.
  setenv("GPUSPANS_LAUNCH_WATCH", "records", 1);
  gs_testing_use_fake_cupti();
  WindowOpen();
  unsetenv("GPUSPANS_LAUNCH_WATCH");
  gs_testing_cupti_api_call(1, CUPTI_RUNTIME_NOT_A_LAUNCH, 0, 0);
  gs_testing_cupti_kernel_launch();
  CHECK_EQ(gs_testing_cupti_api_records(), 1);
  CHECK_EQ(gs_testing_cupti_callbacks(), 0);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_api_switched_off(), 0);
  Drain();
  // Neither callbacks nor switches: every call recorded, only launches read.
  gs_testing_use_fake_cupti();
  gs_testing_cupti_no_callbacks(1);
  gs_testing_cupti_no_api_switches(1);
  WindowOpen();
  gs_testing_cupti_api_call(1, CUPTI_RUNTIME_NOT_A_LAUNCH, 0, 0);
  gs_testing_cupti_kernel_launch();
  CHECK_EQ(gs_testing_cupti_api_records(), 2);
  CHECK_EQ(gs_testing_cupti_api_switched_off(), 0);
  CHECK_EQ(gs_tracer_close(nullptr), GS_OK);
  CHECK_EQ(gs_tracer_read(r, 8), 1);
  CHECK_EQ(r[0].kind, GS_RECORD_LAUNCH);
  CHECK_EQ(gs_testing_cupti_finalizes(), 1);
}

// Attached tracing collects kernels alone, as before.
void AttachedRecordsKernelsOnly() {
  gs_testing_use_fake_cupti();
  Open();
  CHECK_EQ(gs_tracer_enable(1, nullptr), GS_OK);
  CHECK_EQ(gs_testing_cupti_copy(0, 1, 1, 2, 0, 0), 0);
  CHECK_EQ(gs_testing_cupti_api_call(1, CUPTI_RUNTIME_LAUNCH_KERNEL, 0, 0), 0);
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
      {"Cuda12From129IsAdmitted", Cuda12From129IsAdmitted},
      {"WindowCollectsAndDetaches", WindowCollectsAndDetaches},
      {"WindowClosesOnlyOnItsThread", WindowClosesOnlyOnItsThread},
      {"WindowRefusalsDetach", WindowRefusalsDetach},
      {"WindowsFromTwoThreadsRefused", WindowsFromTwoThreadsRefused},
      {"NoWindowAfterAttached", NoWindowAfterAttached},
      {"WindowBesideForeignGraphReplaysStaysAttached", WindowBesideForeignGraphReplaysStaysAttached},
      {"GuardedReplaysNeverOverlapADetach", GuardedReplaysNeverOverlapADetach},
      {"CloseWaitsForAGuardedReplay", CloseWaitsForAGuardedReplay},
      {"UnmatchedExitsAreRefused", UnmatchedExitsAreRefused},
      {"AGuardLeftHeldCostsOneWait", AGuardLeftHeldCostsOneWait},
      {"WindowRecordsCopiesAndLaunches", WindowRecordsCopiesAndLaunches},
      {"WindowWatchesLaunchCallsAlone", WindowWatchesLaunchCallsAlone},
      {"AttachedRecordsKernelsOnly", AttachedRecordsKernelsOnly},
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
  // Every test above took the tracer's locks in their order
  // (cuda/src/lock_rank.h); the check counts one taken the wrong way.
  char why[160];
  uint64_t bad = gs_testing_lock_rank_violations(why, sizeof why);
  if (bad != 0) {
    failed++;
    fprintf(stderr, "FAIL LocksInOrder: %llu taken out of order, the first: %s\n", static_cast<unsigned long long>(bad), why);
  } else {
    gs_testing_lock_out_of_order();
    if (gs_testing_lock_rank_violations(why, sizeof why) == 1 && strstr(why, "rank 1 while holding one of rank 4")) {
      passed++;
    } else {
      failed++;
      fprintf(stderr, "FAIL LocksInOrder: a lock taken out of order was not seen (%s)\n", why);
    }
  }
  gs_testing_use_real_cupti();
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

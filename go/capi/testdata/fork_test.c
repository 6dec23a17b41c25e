// Fork and the C ABI: a child forked after the library loaded must not
// enter Go (its runtime's threads were not copied), so every call returns
// at once there. For each case (a bare hub; with a harvester; with OTLP;
// with a server; all of them) and each way to fork (glibc's fork, which
// runs the atfork handlers; the fork system call itself and clone with
// SIGCHLD, which run none) the parent forks and the child checks that
// close returns within 100 ms, that the span calls do nothing and the
// status calls name the fork, and exits; the parent checks that its own
// hub works on, closes it, and that no file descriptor is left behind.
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "gpuspans/hub.h"

#define CHECK_OK(call)                                                                      \
  do {                                                                                      \
    gs_hub_status st_ = (call);                                                             \
    CHECK(st_ == GS_HUB_OK, "%s = %s: %s", #call, gs_hub_status_name(st_), last_error(hub)); \
  } while (0)

enum { HARVESTER = 1, OTLP = 2, SERVER = 4 };
static const uint64_t kStream = 7;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int open_fds(void) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  for (struct dirent* e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1;  // the directory's own
}

static void step(gs_hub hub) {
  CHECK_OK(gs_hub_begin_step(hub));
  CHECK_OK(gs_hub_lane_begin(hub, 0));
  CHECK_OK(gs_hub_sim_launch(hub, 0, kStream, 20000));
  CHECK_OK(gs_hub_lane_end(hub, 0));
}

enum { GLIBC_FORK, SYS_FORK, CLONE, HOWS };
static const char* const how_names[] = {"fork", "syscall(SYS_fork)", "clone(SIGCHLD)"};

// child runs in the forked process and returns its exit code.
static int child(gs_hub hub, int how) {
  failures = 0;
  if (how != GLIBC_FORK) {
    // No atfork handler ran: the word still says the step has work, and
    // the step call sees the pid, refuses and clears the word.
    CHECK(gs_hub_word(hub) != 0, "state word cleared without a fork handler");
    CHECK(gs_hub_begin_step(hub) == GS_HUB_ERR_FORKED, "the first inline step after %s", how_names[how]);
  }
  // The inline calls read a word the fork cleared: no call.
  CHECK(gs_hub_word(hub) == 0, "state word %#x in the child, want 0", gs_hub_word(hub));
  CHECK(gs_hub_begin_step(hub) == GS_HUB_OK, "inline step");
  CHECK(gs_hub_lane_begin(hub, 0) == GS_HUB_OK, "inline lane begin");
  CHECK(gs_hub_kernel_begin(hub, 1, kStream) == 0, "inline kernel begin");
  // Every call that enters the library returns GS_HUB_ERR_FORKED, at once.
  CHECK(gs_hub_begin_step_call(hub) == GS_HUB_ERR_FORKED, "step call");
  CHECK(gs_hub_lane_end_call(hub, 0) == GS_HUB_ERR_FORKED, "lane end call");
  CHECK(gs_hub_next_lane_call(hub, 0, 0) == GS_HUB_ERR_FORKED, "next lane call");
  CHECK(gs_hub_kernel_begin_call(hub, 0, 1, kStream) == 0, "kernel begin call");
  char buf[256];
  size_t len = 0;
  CHECK(gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_JSON, buf, sizeof buf, &len) == GS_HUB_ERR_FORKED, "snapshot");
  CHECK(strstr(last_error(hub), "gs_hub_snapshot: this process") && strstr(last_error(hub), "was forked from pid"),
        "message: %s", last_error(hub));
  CHECK(gs_hub_metrics(hub, buf, sizeof buf, &len) == GS_HUB_ERR_FORKED, "metrics");
  CHECK(gs_hub_harvest(hub) == GS_HUB_ERR_FORKED, "harvest");
  CHECK(strcmp(gs_hub_status_name(GS_HUB_ERR_FORKED), "GS_HUB_ERR_FORKED") == 0, "status name");
  gs_hub other = 0;
  CHECK(gs_hub_create(NULL, &other) == GS_HUB_ERR_FORKED && other == 0, "create in the child");
  double t0 = now_ms();
  gs_hub_status st = gs_hub_close(hub);
  double took = now_ms() - t0;
  CHECK(st == GS_HUB_ERR_FORKED, "close = %s", gs_hub_status_name(st));
  CHECK(took < 100, "close took %.1f ms in the child", took);
  printf("  child: close returned in %.3f ms\n", took);
  fflush(stdout);  // the child leaves with _exit, which flushes nothing
  fflush(stderr);
  return failures == 0 ? 0 : 1;
}

// fork_how forks as how says; 0 in the child, as fork returns.
static pid_t fork_how(int how) {
  switch (how) {
    case SYS_FORK:
      return (pid_t)syscall(SYS_fork);
    case CLONE:
      return (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
  }
  return fork();
}

static void fork_case(int what, int how) {
  int fds = open_fds();
  gs_hub hub = 0;
  gs_hub_options o = gs_hub_options_init();
  o.level = GS_HUB_LEVEL_KERNEL;
  CHECK(gs_hub_create(&o, &hub) == GS_HUB_OK, "create: %s", last_error(0));
  CHECK_OK(gs_hub_install_sim(hub, 0, kStream, 0));
  if (what & HARVESTER) CHECK_OK(gs_hub_start_harvester(hub, 1000));
  if (what & OTLP) {
    gs_hub_otlp_options oo = gs_hub_otlp_options_init();
    oo.endpoint = "http://127.0.0.1:9";  // nothing listens: the exporter keeps trying
    oo.poll_every_ms = 1;
    CHECK_OK(gs_hub_otlp_start(hub, &oo));
  }
  if (what & SERVER) CHECK_OK(gs_hub_serve(hub, "127.0.0.1:0", NULL, 0, NULL, 0));
  for (int i = 0; i < 50; i++) step(hub);
  fflush(stdout);
  pid_t pid = fork_how(how);
  if (pid == 0) _exit(child(hub, how));
  CHECK(pid > 0, "fork failed");
  int status = 0;
  double deadline = now_ms() + 5000;
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0 && now_ms() < deadline) usleep(1000);
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    CHECK(0, "case %d, %s: the child hung (killed at 5 s)", what, how_names[how]);
  } else {
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "case %d, %s: the child failed (status %#x)", what, how_names[how],
          status);
  }
  // The parent's hub is untouched by the fork.
  for (int i = 0; i < 50; i++) step(hub);
  CHECK_OK(gs_hub_harvest(hub));
  CHECK(gs_hub_word(hub) != 0, "the parent's state word was cleared");
  CHECK_OK(gs_hub_close(hub));
  // An export cut short by the close may close its socket a moment later.
  int left = open_fds();
  for (double until = now_ms() + 2000; left != fds && now_ms() < until; left = open_fds()) usleep(10000);
  CHECK(left == fds, "case %d: %d file descriptors before, %d 2 s after close", what, fds, left);
  printf("case harvester=%d otlp=%d server=%d, %s: done\n", !!(what & HARVESTER), !!(what & OTLP), !!(what & SERVER),
         how_names[how]);
}

int main(void) {
  // The first hub starts what the Go runtime keeps for the process (its
  // network poller's descriptors): the cases count from after it.
  gs_hub hub = 0;
  CHECK(gs_hub_create(NULL, &hub) == GS_HUB_OK, "create: %s", last_error(0));
  CHECK_OK(gs_hub_serve(hub, "127.0.0.1:0", NULL, 0, NULL, 0));
  gs_hub_otlp_options oo = gs_hub_otlp_options_init();
  oo.endpoint = "http://127.0.0.1:9";
  CHECK_OK(gs_hub_otlp_start(hub, &oo));
  CHECK_OK(gs_hub_close(hub));
  int cases[] = {0, HARVESTER, OTLP, SERVER, HARVESTER | OTLP | SERVER};
  for (int how = 0; how < HOWS; how++) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) fork_case(cases[i], how);
  }
  if (failures) {
    printf("FAIL: %d checks\n", failures);
    return 1;
  }
  printf("PASS\n");
  return 0;
}

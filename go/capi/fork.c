// Fork: the Go runtime inside the library does not survive fork (only the
// forking thread is copied, so the harvester, the HTTP server, the OTLP
// exporter and the runtime's own threads are gone, and a lock any of them
// held stays held), so a child must not enter Go. Every export of
// gpuspans/hub.h is defined here, in C: in a process forked after the
// library was loaded it returns at once, GS_HUB_ERR_FORKED with the reason
// in gs_hub_last_error, having touched nothing; otherwise it calls its Go
// side (exports.h). The fork also clears every hub's state word in the
// child, so hub.h's inline span calls make no call there; a fork that runs
// no atfork handler is seen by the pid at the next export or step call.
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exports.h"
#include "gpuspans/hub.h"

static int forked;        // set in the child by after_fork
static pid_t loaded_pid;  // the process that loaded the library
static const char* _Atomic refused_op;  // the last call refused in the child

static void after_fork(void) {
  __atomic_store_n(&forked, 1, __ATOMIC_SEQ_CST);
  for (int i = 0; i < GS_HUB_MAX_HUBS; i++) {
    __atomic_store_n(&gs_hub_words[i * GS_HUB_WORD_STRIDE], 0, __ATOMIC_SEQ_CST);
  }
}

__attribute__((constructor)) static void register_after_fork(void) {
  loaded_pid = getpid();
  pthread_atfork(NULL, NULL, after_fork);
}

int gs_capi_fork_seen(void) { return __atomic_load_n(&forked, __ATOMIC_SEQ_CST); }

// A child of the fork system call itself (syscall(SYS_fork), clone with
// SIGCHLD, glibc's _Fork) runs no atfork handler: its pid tells. getpid is
// a system call, so the span calls that run many times a step check the
// flag alone (gs_capi_fork_seen) and the step calls the pid as well.
int gs_capi_forked(void) {
  if (gs_capi_fork_seen()) return 1;
  if (getpid() == loaded_pid) return 0;
  after_fork();
  return 1;
}

gs_hub_status gs_capi_refuse(const char* op) {
  __atomic_store_n(&refused_op, op, __ATOMIC_SEQ_CST);
  return GS_HUB_ERR_FORKED;
}

static uint64_t refuse_token(const char* op) {
  gs_capi_refuse(op);
  return 0;
}

// forked_status_name names the statuses from here: gs_hub_status_name_go's
// table is Go memory, fine to read, but reaching it enters Go.
static const char* forked_status_name(int32_t st) {
  static const char* const names[] = {"GS_HUB_OK", "GS_HUB_ERR_BAD_HANDLE", "GS_HUB_ERR_INVALID_ARGUMENT",
                                      "GS_HUB_ERR_TOO_SMALL", "GS_HUB_ERR_LISTEN", "GS_HUB_ERR_LIMIT",
                                      "GS_HUB_ERR_INTERNAL", "GS_HUB_ERR_FORKED"};
  if (st < 0 || st >= (int32_t)(sizeof names / sizeof names[0])) return "GS_HUB_STATUS_UNKNOWN";
  return names[st];
}

// forked_message writes the child's one message, as gs_hub_last_error
// writes any (truncated to cap, NUL-terminated), and returns its length.
static size_t forked_message(char* buf, size_t cap) {
  const char* op = __atomic_load_n(&refused_op, __ATOMIC_SEQ_CST);
  char msg[400];
  int n = snprintf(msg, sizeof msg,
                   "%s: this process (pid %d) was forked from pid %d after it loaded gpuspans: the library's "
                   "threads (harvester, server, exporter, the Go runtime's) do not survive fork, so every hub "
                   "call returns at once in the child and does nothing; make hubs in a process that does not "
                   "fork after, or exec in the child",
                   op ? op : "gpuspans", (int)getpid(), (int)loaded_pid);
  size_t len = n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
  if (buf && cap > 0) {
    size_t k = len < cap - 1 ? len : cap - 1;
    memcpy(buf, msg, k);
    buf[k] = 0;
  }
  return len;
}

const char* gs_hub_status_name(int32_t st) {
  if (gs_capi_forked()) return forked_status_name(st);
  return gs_hub_status_name_go(st);
}

size_t gs_hub_last_error(gs_hub hub, char* buf, size_t cap) {
  if (gs_capi_forked()) return forked_message(buf, cap);
  return gs_hub_last_error_go(hub, buf, cap);
}

gs_hub_status gs_hub_create(const gs_hub_options* opts, gs_hub* out) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_create");
  return gs_hub_create_go(opts, out);
}

gs_hub_status gs_hub_close(gs_hub hub) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_close");
  return gs_hub_close_go(hub);
}

gs_hub_status gs_hub_install_cuda(gs_hub hub, int32_t device, uint64_t stream) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_install_cuda");
  return gs_hub_install_cuda_go(hub, device, stream);
}

gs_hub_status gs_hub_install_sim(gs_hub hub, int32_t device, uint64_t stream, int64_t event_offset_ns) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_install_sim");
  return gs_hub_install_sim_go(hub, device, stream, event_offset_ns);
}

gs_hub_status gs_hub_sim_launch(gs_hub hub, int32_t device, uint64_t stream, int64_t duration_ns) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_sim_launch");
  return gs_hub_sim_launch_go(hub, device, stream, duration_ns);
}

gs_hub_status gs_hub_uninstall(gs_hub hub, int32_t device) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_uninstall");
  return gs_hub_uninstall_go(hub, device);
}

gs_hub_status gs_hub_register_kernel(gs_hub hub, uint64_t kernel, const char* name) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_register_kernel");
  return gs_hub_register_kernel_go(hub, kernel, name);
}

gs_hub_status gs_hub_lane_index(gs_hub hub, const char* name, int32_t* lane) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_lane_index");
  return gs_hub_lane_index_go(hub, name, lane);
}

gs_hub_status gs_hub_set_kernel_timing(gs_hub hub, int32_t timing) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_set_kernel_timing");
  return gs_hub_set_kernel_timing_go(hub, timing);
}

gs_hub_status gs_hub_get_kernel_timing(gs_hub hub, int32_t* timing, int32_t* tracing) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_get_kernel_timing");
  return gs_hub_get_kernel_timing_go(hub, timing, tracing);
}

gs_hub_status gs_hub_set_kernel_windows(gs_hub hub, int64_t every_ns, int32_t steps) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_set_kernel_windows");
  return gs_hub_set_kernel_windows_go(hub, every_ns, steps);
}

gs_hub_status gs_hub_request_kernel_window(gs_hub hub) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_request_kernel_window");
  return gs_hub_request_kernel_window_go(hub);
}

gs_hub_status gs_hub_set_level(gs_hub hub, int32_t level) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_set_level");
  return gs_hub_set_level_go(hub, level);
}

gs_hub_status gs_hub_get_level(gs_hub hub, int32_t* level) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_get_level");
  return gs_hub_get_level_go(hub, level);
}

gs_hub_status gs_hub_set_kernel_span_every(gs_hub hub, int32_t n) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_set_kernel_span_every");
  return gs_hub_set_kernel_span_every_go(hub, n);
}

gs_hub_status gs_hub_harvest(gs_hub hub) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_harvest");
  return gs_hub_harvest_go(hub);
}

gs_hub_status gs_hub_drain(gs_hub hub, int32_t timeout_ms, uint64_t* in_flight) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_drain");
  return gs_hub_drain_go(hub, timeout_ms, in_flight);
}

gs_hub_status gs_hub_start_harvester(gs_hub hub, int64_t interval_us) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_start_harvester");
  return gs_hub_start_harvester_go(hub, interval_us);
}

gs_hub_status gs_hub_stop_harvester(gs_hub hub) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_stop_harvester");
  return gs_hub_stop_harvester_go(hub);
}

gs_hub_status gs_hub_snapshot(gs_hub hub, int32_t format, void* buf, size_t cap, size_t* len) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_snapshot");
  return gs_hub_snapshot_go(hub, format, buf, cap, len);
}

gs_hub_status gs_hub_serve(gs_hub hub, const char* addr, const char* token, int32_t flags, char* bound, size_t bound_cap) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_serve");
  return gs_hub_serve_go(hub, addr, token, flags, bound, bound_cap);
}

gs_hub_status gs_hub_stop_serving(gs_hub hub) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_stop_serving");
  return gs_hub_stop_serving_go(hub);
}

gs_hub_status gs_hub_metrics(gs_hub hub, char* buf, size_t cap, size_t* len) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_metrics");
  return gs_hub_metrics_go(hub, buf, cap, len);
}

gs_hub_status gs_hub_set_metrics(gs_hub hub, int32_t flags, int32_t classic_buckets) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_set_metrics");
  return gs_hub_set_metrics_go(hub, flags, classic_buckets);
}

gs_hub_status gs_hub_set_metric_labels(gs_hub hub, const char* const* names, const char* const* values, size_t n) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_set_metric_labels");
  return gs_hub_set_metric_labels_go(hub, names, values, n);
}

gs_hub_status gs_hub_recent_spans(gs_hub hub, uint64_t after_seq, gs_hub_span* out, size_t cap, size_t* n) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_recent_spans");
  return gs_hub_recent_spans_go(hub, after_seq, out, cap, n);
}

gs_hub_status gs_hub_keep_start_times(gs_hub hub) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_keep_start_times");
  return gs_hub_keep_start_times_go(hub);
}

gs_hub_status gs_hub_set_log_callback(gs_hub hub, gs_hub_log_fn fn, void* user) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_set_log_callback");
  return gs_hub_set_log_callback_go(hub, fn, user);
}

gs_hub_status gs_hub_log_dropped(gs_hub hub, uint64_t* dropped) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_log_dropped");
  return gs_hub_log_dropped_go(hub, dropped);
}

gs_hub_status gs_hub_otlp_start(gs_hub hub, const gs_hub_otlp_options* opts) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_otlp_start");
  return gs_hub_otlp_start_go(hub, opts);
}

gs_hub_status gs_hub_otlp_stop(gs_hub hub, int32_t timeout_ms) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_otlp_stop");
  return gs_hub_otlp_stop_go(hub, timeout_ms);
}

gs_hub_status gs_hub_get_step(gs_hub hub, uint64_t* step) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_get_step");
  return gs_hub_get_step_go(hub, step);
}

gs_hub_status gs_hub_link_step(gs_hub hub, uint64_t step, const gs_hub_link* links, size_t n) {
  if (gs_capi_forked()) return gs_capi_refuse("gs_hub_link_step");
  return gs_hub_link_step_go(hub, step, links, n);
}

uint64_t gs_hub_kernel_begin_call(gs_hub hub, int32_t device, uint64_t kernel, uint64_t stream) {
  if (gs_capi_fork_seen()) return refuse_token("gs_hub_kernel_begin_call");
  return gs_hub_kernel_begin_go(hub, device, kernel, stream);
}

gs_hub_status gs_hub_kernel_end_call(gs_hub hub, uint64_t token) {
  if (gs_capi_fork_seen()) return gs_capi_refuse("gs_hub_kernel_end_call");
  return gs_hub_kernel_end_go(hub, token);
}

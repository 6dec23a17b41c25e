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
#include "exports_list.h"
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

// status_name is gs_hub_status_name's table, the one list of the
// statuses' names (static strings: fine to read in a forked child too).
static const char* status_name(int32_t st) {
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
  return status_name(st);
}

size_t gs_hub_last_error(gs_hub hub, char* buf, size_t cap) {
  if (gs_capi_forked()) return forked_message(buf, cap);
  return gs_hub_last_error_go(hub, buf, cap);
}

// Every listed export: refused in a child, else its Go side.
#define GS_CAPI_CHECK_PID gs_capi_forked
#define GS_CAPI_CHECK_FLAG gs_capi_fork_seen
#define GS_CAPI_REFUSE_STATUS gs_capi_refuse
#define GS_CAPI_REFUSE_TOKEN refuse_token
#define GS_CAPI_DEFINE(check, refusal, ret, name, go, params, args) \
  ret name params {                                                 \
    if (GS_CAPI_CHECK_##check()) return GS_CAPI_REFUSE_##refusal(#name); \
    return go args;                                                 \
  }
GS_CAPI_EXPORTS(GS_CAPI_DEFINE)

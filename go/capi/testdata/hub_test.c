// The C ABI's test, on the simulated GPU: go/capi's Go test builds the
// library as a c-archive and as a c-shared library and runs this against
// each. Prints what it checks; exits non-zero on the first failure.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gpuspans/hub.h"
#include "gpuspans/hub_testing.h"
#include "check.h"

#define CHECK_OK(call)                                                              \
  do {                                                                              \
    gs_hub_status st_ = (call);                                                     \
    CHECK(st_ == GS_HUB_OK, "%s = %s: %s", #call, gs_hub_status_name(st_), last_error(hub)); \
  } while (0)

// count returns the "count" of the aggregate named name in a JSON snapshot
// (the first one after "kind": lanes before kernels), or -1.
static long count_of(const char* json, const char* section, const char* name) {
  char key[256];
  const char* p = strstr(json, section);
  if (p == NULL) return -1;
  snprintf(key, sizeof key, "\"name\": \"%s\"", name);
  p = strstr(p, key);
  if (p == NULL) return -1;
  p = strstr(p, "\"count\": ");
  if (p == NULL) return -1;
  return strtol(p + strlen("\"count\": "), NULL, 10);
}

// field_after returns the number of the first "key": after anchor in json
// (compact JSON, as gs_hub_finished_requests writes it), or -1.
static long field_after(const char* json, const char* anchor, const char* key) {
  char k[128];
  const char* p = strstr(json, anchor);
  if (p == NULL) return -1;
  snprintf(k, sizeof k, "\"%s\":", key);
  p = strstr(p, k);
  return p == NULL ? -1 : strtol(p + strlen(k), NULL, 10);
}

static long counter(const char* json, const char* name) {
  char key[128];
  snprintf(key, sizeof key, "\"%s\": ", name);
  const char* p = strstr(json, key);
  return p == NULL ? -1 : strtol(p + strlen(key), NULL, 10);
}

// http sends a request to host:port and returns the status code, with the
// response in resp.
static int http(const char* addr, const char* request, char* resp, size_t cap) {
  char host[64];
  const char* colon = strrchr(addr, ':');
  if (colon == NULL || (size_t)(colon - addr) >= sizeof host) return -1;
  memcpy(host, addr, colon - addr);
  host[colon - addr] = 0;
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(colon + 1));
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return -1;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr*)&sa, sizeof sa) != 0) return -1;
  if (write(fd, request, strlen(request)) != (ssize_t)strlen(request)) return -1;
  size_t n = 0;
  ssize_t r;
  while (n + 1 < cap && (r = read(fd, resp + n, cap - 1 - n)) > 0) n += (size_t)r;
  resp[n] = 0;
  close(fd);
  int code = -1;
  sscanf(resp, "HTTP/1.%*d %d", &code);
  return code;
}

enum { kAttention = 0x1000, kMLP = 0x2000, kStream = 7 };

// The log callback: keeps the first line it gets, with its level.
static char log_line[512];
static int32_t log_level;
static gs_hub log_hub;
static int log_lines;  // read and written with __atomic

static void on_log(gs_hub h, int32_t level, const char* line, size_t len, void* user) {
  if (__atomic_load_n(&log_lines, __ATOMIC_ACQUIRE) == 0 && user == (void*)&log_lines) {
    snprintf(log_line, sizeof log_line, "%.*s", (int)len, line);
    log_level = level;
    log_hub = h;
  }
  __atomic_add_fetch(&log_lines, 1, __ATOMIC_RELEASE);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  gs_hub hub = 0;

  // Options are checked, and errors name what was wrong.
  {
    const char* lanes[] = {"prefill", "prefill"};
    gs_hub_options o = gs_hub_options_init();
    o.lanes = lanes;
    o.num_lanes = 2;
    gs_hub_status st = gs_hub_create(&o, &hub);
    CHECK(st == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(0), "duplicate lane"),
          "duplicate lanes: %s, %s", gs_hub_status_name(st), last_error(0));
    o.num_lanes = 0;
    st = gs_hub_create(&o, &hub);
    CHECK(st == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(0), "lanes is empty"), "num_lanes 0: %s", last_error(0));
    o.lanes = NULL;
    o.level = 9;
    st = gs_hub_create(&o, &hub);
    CHECK(st == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(0), "level is 9"), "level 9: %s", last_error(0));
    o.level = 0;
    o.kernel_span_every = -2;
    st = gs_hub_create(&o, &hub);
    CHECK(st == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(0), "kernel_span_every is -2"), "every -2: %s", last_error(0));
    CHECK(gs_hub_create(NULL, NULL) == GS_HUB_ERR_INVALID_ARGUMENT, "NULL out accepted");
  }

  const char* lanes[] = {"prefill", "decode"};
  gs_hub_options o = gs_hub_options_init();
  o.lanes = lanes;
  o.num_lanes = 2;
  o.level = GS_HUB_LEVEL_KERNEL;
  o.kernel_span_every = 2;
  o.quiet = 1;
  CHECK_OK(gs_hub_create(&o, &hub));
  CHECK(hub != 0, "hub handle 0");
  CHECK_OK(gs_hub_install_sim(hub, 0, kStream, 0));
  CHECK_OK(gs_hub_register_kernel(hub, kAttention, "attention"));
  CHECK_OK(gs_hub_register_kernel(hub, kMLP, "mlp"));
  int32_t prefill = -1, decode = -1;
  CHECK_OK(gs_hub_lane_index(hub, "prefill", &prefill));
  CHECK_OK(gs_hub_lane_index(hub, "decode", &decode));
  CHECK(prefill == 0 && decode == 1, "lane indexes %d %d", prefill, decode);

  // 20 steps; steps 2, 4, ... are armed: 10 armed steps, 2 kernel spans each.
#ifdef GS_HUB_TESTING
  gs_hub_testing_count_crossings(1);
#endif
  int tokens = 0;
  for (int step = 1; step <= 20; step++) {
    CHECK_OK(gs_hub_begin_step(hub));
    int32_t lane[2] = {prefill, decode};
    for (int l = 0; l < 2; l++) {
      CHECK_OK(gs_hub_lane_begin(hub, lane[l]));
      CHECK_OK(gs_hub_sim_launch(hub, 0, kStream, 20000));
      uint64_t tok = gs_hub_kernel_begin(hub, l == 0 ? kAttention : kMLP, kStream);
      CHECK((tok != 0) == (step % 2 == 0), "step %d: token %llu", step, (unsigned long long)tok);
      tokens += tok != 0;
      CHECK_OK(gs_hub_sim_launch(hub, 0, kStream, 50000));
      CHECK_OK(gs_hub_kernel_end(hub, tok));
      CHECK_OK(gs_hub_lane_end(hub, lane[l]));
    }
  }
  CHECK(tokens == 20, "%d kernel tokens, want 20", tokens);
  uint64_t in_flight = 99;
  CHECK_OK(gs_hub_drain(hub, 5000, &in_flight));
  CHECK(in_flight == 0, "%llu spans in flight after drain", (unsigned long long)in_flight);

  // Size negotiation, then the JSON.
  size_t len = 0;
  char tiny[8];
  gs_hub_status st = gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_JSON, tiny, sizeof tiny, &len);
  CHECK(st == GS_HUB_ERR_TOO_SMALL && len > sizeof tiny, "small buffer: %s, len %zu", gs_hub_status_name(st), len);
  CHECK(strstr(last_error(hub), "needs") != NULL, "small buffer message: %s", last_error(hub));
  st = gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_JSON, NULL, 0, &len);
  CHECK(st == GS_HUB_ERR_TOO_SMALL, "NULL buffer: %s", gs_hub_status_name(st));
  size_t cap = len + 4096;
  char* json = malloc(cap);
  CHECK_OK(gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_JSON, json, cap, &len));
  CHECK(strlen(json) == len, "JSON length %zu, strlen %zu", len, strlen(json));
  long n;
  CHECK((n = count_of(json, "\"lanes\"", "prefill")) == 20, "prefill count %ld, want 20", n);
  CHECK((n = count_of(json, "\"lanes\"", "decode")) == 20, "decode count %ld, want 20", n);
  CHECK((n = count_of(json, "\"kernels\"", "attention")) == 10, "attention count %ld, want 10", n);
  CHECK((n = count_of(json, "\"kernels\"", "mlp")) == 10, "mlp count %ld, want 10", n);
  CHECK((n = counter(json, "landed")) == 60, "landed %ld, want 60", n);
  CHECK((n = counter(json, "step")) == 20, "step %ld, want 20", n);
  CHECK(strstr(json, "simulated GPU 0") != NULL, "backend not named");
  printf("ok: 20 steps on the simulated GPU: 40 lane spans and 20 kernel spans landed\n");
  free(json);

  st = gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_PROTO, NULL, 0, &len);
  CHECK(st == GS_HUB_ERR_TOO_SMALL && len > 0, "proto size: %s", gs_hub_status_name(st));
  void* pb = malloc(len + 4096);
  CHECK_OK(gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_PROTO, pb, len + 4096, &len));
  CHECK(len > 100, "proto snapshot of %zu bytes", len);
  free(pb);
  CHECK(gs_hub_snapshot(hub, 5, NULL, 0, &len) == GS_HUB_ERR_INVALID_ARGUMENT, "format 5 accepted");

  // The recent spans, read 16 at a time after the last seq seen: every
  // landed span once, in order, named.
  {
    gs_hub_span page[16];
    uint64_t last = 0;
    size_t got = 0;
    int named[4] = {0};  // prefill, decode, attention, mlp
    for (int reads = 0; reads < 10; reads++) {
      size_t n = 99;
      CHECK_OK(gs_hub_recent_spans(hub, last, page, 16, &n));
      CHECK(n <= 16, "recent spans: %zu in a page of 16", n);
      if (n == 0 || n > 16) break;
      for (size_t i = 0; i < n; i++) {
        const gs_hub_span* s = &page[i];
        CHECK(s->seq == last + 1, "span seq %llu after %llu", (unsigned long long)s->seq, (unsigned long long)last);
        last = s->seq;
        CHECK(s->name_len == strlen(s->name), "name_len %u for %s", s->name_len, s->name);
        CHECK(s->device == 0 && s->stream == kStream && s->duration_ns > 0 && s->step >= 1 && s->step <= 20,
              "span %llu: device %d stream %llu duration %lld step %llu", (unsigned long long)s->seq, s->device,
              (unsigned long long)s->stream, (long long)s->duration_ns, (unsigned long long)s->step);
        int lane = !strcmp(s->name, "prefill") || !strcmp(s->name, "decode");
        CHECK(s->kind == (lane ? GS_HUB_SPAN_LANE : GS_HUB_SPAN_KERNEL), "span %s of kind %d", s->name, s->kind);
        const char* names[4] = {"prefill", "decode", "attention", "mlp"};
        for (int k = 0; k < 4; k++) named[k] += !strcmp(s->name, names[k]);
      }
      got += n;
    }
    CHECK(got == 60 && named[0] == 20 && named[1] == 20 && named[2] == 10 && named[3] == 10,
          "recent spans: %zu read (prefill %d, decode %d, attention %d, mlp %d), want 60 (20, 20, 10, 10)", got,
          named[0], named[1], named[2], named[3]);
    size_t n = 99;
    CHECK_OK(gs_hub_recent_spans(hub, last, page, 16, &n));
    CHECK(n == 0, "%zu spans after the last", n);
    printf("ok: recent spans: 60 read in pages of 16, in order, named\n");
  }

  // The Prometheus families as text: the hub's, without Go's or the
  // process's; kernel histograms and finer classic buckets once asked for.
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 1) CHECK_OK(gs_hub_set_metrics(hub, GS_HUB_METRICS_KERNEL_HISTOGRAMS, 8));
    size_t need = 0;
    st = gs_hub_metrics(hub, NULL, 0, &need);
    CHECK(st == GS_HUB_ERR_TOO_SMALL && need > 1000, "metrics size: %s, %zu", gs_hub_status_name(st), need);
    char* text = malloc(need + 65536);
    size_t n = 0;
    CHECK_OK(gs_hub_metrics(hub, text, need + 65536, &n));
    CHECK(n > 0 && text[n] == 0 && strlen(text) == n, "metrics text of %zu bytes", n);
    CHECK(strstr(text, "\ngpuspans_lane_duration_seconds_count{device=\"0\",lane=\"prefill\"} 20\n") != NULL,
          "no prefill count of 20 in the metrics text");
    int kernels = strstr(text, "\ngpuspans_kernel_duration_seconds_count{device=\"0\",kernel=\"mlp\"} 10\n") != NULL;
    CHECK(kernels == pass, "pass %d: mlp count of 10 in the metrics text: %d", pass, kernels);
    // 1 us to 16 s, 1 bucket to a doubling by default, 8 once set.
    int fine = strstr(text, "lane=\"prefill\",le=\"1.0905077326652577\"}") != NULL;
    CHECK(strstr(text, "lane=\"prefill\",le=\"16\"}") != NULL && fine == pass, "pass %d: classic bounds: 16 s %s, 2^(1/8) s %d", pass,
          strstr(text, "lane=\"prefill\",le=\"16\"}") ? "there" : "missing", fine);
    CHECK(strstr(text, "go_goroutines") == NULL && strstr(text, "process_") == NULL,
          "the metrics text has Go's or the process's families");
    free(text);
    printf("ok: metrics text: %zu bytes, lane histograms%s\n", n, pass ? ", and kernel histograms and 8 buckets to a doubling once set" : "");
  }
  CHECK_OK(gs_hub_set_metrics(hub, 0, 0));

  // Constant labels on every series of the families; refused by name when
  // they would clash or mislead, leaving the last ones in place.
  {
    const char* names[] = {"model_name", "region"};
    const char* values[] = {"llama-3-70b", "eu"};
    CHECK_OK(gs_hub_set_metric_labels(hub, names, values, 2));
    const char* lane[] = {"lane"};
    CHECK(gs_hub_set_metric_labels(hub, lane, values, 1) == GS_HUB_ERR_INVALID_ARGUMENT &&
              strstr(last_error(hub), "gs_hub_set_metric_labels: constant label name \"lane\"") != NULL,
          "a clashing label: %s", last_error(hub));
    CHECK(gs_hub_set_metric_labels(hub, NULL, values, 1) == GS_HUB_ERR_INVALID_ARGUMENT, "NULL names");
    CHECK(gs_hub_set_metric_labels(hub, names, values, 17) == GS_HUB_ERR_INVALID_ARGUMENT &&
              strstr(last_error(hub), "at most 16") != NULL,
          "17 labels: %s", last_error(hub));
    static char huge[(1 << 20) + 1];
    memset(huge, 'm', sizeof huge - 1);
    const char* huge_name[] = {huge};
    CHECK(gs_hub_set_metric_labels(hub, huge_name, values, 1) == GS_HUB_ERR_INVALID_ARGUMENT &&
              strstr(last_error(hub), "of 1048576 bytes: at most 128") != NULL,
          "a 1 MiB label name: %s", last_error(hub));
    static char text[1 << 20];
    size_t n = 0;
    CHECK_OK(gs_hub_metrics(hub, text, sizeof text, &n));
    int labelled = 0, bare = 0;
    for (char* line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
      if (line[0] == '#') continue;
      if (strstr(line, "model_name=\"llama-3-70b\"") && strstr(line, "region=\"eu\"")) {
        labelled++;
      } else {
        bare++;
        fprintf(stderr, "unlabelled: %s\n", line);
      }
    }
    CHECK(labelled > 10 && bare == 0, "%d series labelled, %d not", labelled, bare);
    CHECK_OK(gs_hub_set_metric_labels(hub, NULL, NULL, 0));
    printf("ok: constant labels: on all %d series of the metrics text, clashes refused\n", labelled);
  }

  // Unarmed steps at Kernel: the kernel calls make no crossing.
  CHECK_OK(gs_hub_set_kernel_span_every(hub, 1000000));
  CHECK_OK(gs_hub_begin_step(hub)); // step 21 disarms
#ifdef GS_HUB_TESTING
  uint64_t before = gs_hub_testing_crossings();
#endif
  for (int i = 0; i < 1000; i++) {
    uint64_t tok = gs_hub_kernel_begin(hub, kAttention, kStream);
    CHECK(tok == 0, "unarmed token %llu", (unsigned long long)tok);
    gs_hub_kernel_end(hub, tok);
  }
#ifdef GS_HUB_TESTING
  CHECK(gs_hub_testing_crossings() == before, "unarmed kernel spans crossed %llu times",
        (unsigned long long)(gs_hub_testing_crossings() - before));
  // And each call that has work crosses once.
  before = gs_hub_testing_crossings();
  gs_hub_begin_step(hub);
  gs_hub_lane_begin(hub, prefill);
  gs_hub_lane_end(hub, prefill);
  CHECK(gs_hub_testing_crossings() - before == 3, "a step and a lane span crossed %llu times, want 3",
        (unsigned long long)(gs_hub_testing_crossings() - before));
#else
  gs_hub_begin_step(hub);
  gs_hub_lane_begin(hub, prefill);
  gs_hub_lane_end(hub, prefill);
#endif

  // The HTTP surface: loopback needs no token; a public address does.
  char bound[64];
  CHECK_OK(gs_hub_serve(hub, "127.0.0.1:0", NULL, 0, bound, sizeof bound));
  st = gs_hub_serve(hub, "127.0.0.1:0", NULL, 0, NULL, 0);
  CHECK(st == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(hub), "already"), "second serve: %s", last_error(hub));
  static char resp[1 << 20];
  int code = http(bound, "GET /metrics HTTP/1.0\r\n\r\n", resp, sizeof resp);
  CHECK(code == 200 && strstr(resp, "gpuspans_lane_duration_seconds") != NULL, "/metrics: %d", code);
  code = http(bound, "GET /debug/gpuspans HTTP/1.0\r\n\r\n", resp, sizeof resp);
  CHECK(code == 200 && strstr(resp, "<svg") != NULL, "live page: %d", code);
  CHECK_OK(gs_hub_set_log_callback(hub, on_log, &log_lines));
  code = http(bound, "PUT /control/level HTTP/1.0\r\nContent-Length: 4\r\n\r\nstep", resp, sizeof resp);
  CHECK(code == 200, "PUT /control/level: %d", code);
  for (int i = 0; i < 2000 && __atomic_load_n(&log_lines, __ATOMIC_ACQUIRE) == 0; i++) usleep(1000);
  CHECK(__atomic_load_n(&log_lines, __ATOMIC_ACQUIRE) == 1 && strstr(log_line, "level kernel -> step") != NULL &&
            log_level == GS_HUB_LOG_INFO && log_hub == hub,
        "log callback: %d lines, first \"%s\" at level %d", log_lines, log_line, log_level);
  uint64_t log_dropped = 99;
  CHECK_OK(gs_hub_log_dropped(hub, &log_dropped));
  CHECK(log_dropped == 0, "%llu log lines dropped", (unsigned long long)log_dropped);
  CHECK_OK(gs_hub_set_log_callback(hub, NULL, NULL));
  printf("ok: the log callback got \"%s\"\n", log_line);
  int32_t level = -1;
  CHECK_OK(gs_hub_get_level(hub, &level));
  CHECK(level == GS_HUB_LEVEL_STEP && (gs_hub_word(hub) & GS_HUB_WORD_LEVEL) == GS_HUB_LEVEL_STEP,
        "level after PUT: %d, word %#x", level, gs_hub_word(hub));
  CHECK_OK(gs_hub_stop_serving(hub));
  st = gs_hub_serve(hub, "0.0.0.0:0", NULL, 0, NULL, 0);
  CHECK(st == GS_HUB_ERR_LISTEN && strstr(last_error(hub), "token"), "public without a token: %s", last_error(hub));
  st = gs_hub_serve(hub, "127.0.0.1:0", " ", 0, NULL, 0);
  CHECK(st == GS_HUB_ERR_LISTEN && strstr(last_error(hub), "blank"), "blank token: %s", last_error(hub));
  CHECK_OK(gs_hub_serve(hub, "127.0.0.1:0", "s3cret", GS_HUB_SERVE_PROTECT_READS, bound, sizeof bound));
  code = http(bound, "GET /metrics HTTP/1.0\r\n\r\n", resp, sizeof resp);
  CHECK(code == 401, "protected /metrics without a token: %d", code);
  code = http(bound, "PUT /control/level HTTP/1.0\r\nAuthorization: Bearer wrong\r\nContent-Length: 3\r\n\r\noff", resp, sizeof resp);
  CHECK(code == 403, "PUT with a wrong token: %d", code);
  code = http(bound, "GET /metrics HTTP/1.0\r\nAuthorization: Bearer s3cret\r\n\r\n", resp, sizeof resp);
  CHECK(code == 200, "/metrics with the token: %d", code);
  printf("ok: serving, token rules\n");

  // Bad arguments are refused by name.
  CHECK(gs_hub_set_level(hub, 7) == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(hub), "level 7"), "level 7: %s", last_error(hub));
  CHECK(gs_hub_set_kernel_span_every(hub, 0) == GS_HUB_ERR_INVALID_ARGUMENT, "every 0 accepted");
  CHECK(gs_hub_lane_index(hub, "nope", &prefill) == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(hub), "prefill, decode"),
        "unknown lane: %s", last_error(hub));
  CHECK(gs_hub_register_kernel(hub, 1, NULL) == GS_HUB_ERR_INVALID_ARGUMENT, "NULL name accepted");
  CHECK(gs_hub_register_kernel(hub, 1, "other") == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(hub), "reserved"),
        "name other: %s", last_error(hub));
  CHECK(gs_hub_install_sim(hub, 64, 0, 0) == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(hub), "device 64"),
        "device 64: %s", last_error(hub));
  CHECK(gs_hub_install_cuda(hub, -1, 0) == GS_HUB_ERR_INVALID_ARGUMENT, "CUDA device -1 accepted");
  CHECK(gs_hub_sim_launch(hub, 3, 0, 10) == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(hub), "not a simulated device"),
        "launch on device 3: %s", last_error(hub));
  CHECK(gs_hub_kernel_end(hub, 123456789) == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(hub), "123456789"),
        "made-up token: %s", last_error(hub));

  // Shared boundaries: 20 more steps whose lanes run into each other, one
  // call per boundary; the same spans land. (The PUT above left Step.)
  CHECK_OK(gs_hub_set_level(hub, GS_HUB_LEVEL_KERNEL));
  CHECK_OK(gs_hub_drain(hub, 5000, &in_flight));
  json = malloc(cap + 4096);
  CHECK_OK(gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_JSON, json, cap + 4096, &len));
  const long prefill0 = count_of(json, "\"lanes\"", "prefill"), decode0 = count_of(json, "\"lanes\"", "decode");
  const long landed0 = counter(json, "landed");
  free(json);
  uint64_t step0 = 0;
  CHECK_OK(gs_hub_get_step(hub, &step0));
  CHECK_OK(gs_hub_lane_begin(hub, prefill));
  for (int step = 1; step <= 20; step++) {
    CHECK_OK(gs_hub_sim_launch(hub, 0, kStream, 20000));
    CHECK_OK(gs_hub_next_lane(hub, prefill, decode));
    CHECK_OK(gs_hub_sim_launch(hub, 0, kStream, 30000));
    if (step < 20) {
      CHECK_OK(gs_hub_next_step(hub, decode, prefill));
    }
  }
  CHECK_OK(gs_hub_lane_end(hub, decode));
  CHECK_OK(gs_hub_drain(hub, 5000, &in_flight));
  CHECK(in_flight == 0, "%llu spans in flight after drain", (unsigned long long)in_flight);
  json = malloc(cap + 4096);
  CHECK_OK(gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_JSON, json, cap + 4096, &len));
  CHECK((n = count_of(json, "\"lanes\"", "prefill")) == prefill0 + 20, "prefill count %ld, want %ld", n, prefill0 + 20);
  CHECK((n = count_of(json, "\"lanes\"", "decode")) == decode0 + 20, "decode count %ld, want %ld", n, decode0 + 20);
  CHECK((n = counter(json, "landed")) == landed0 + 40, "landed %ld, want %ld", n, landed0 + 40);
  uint64_t step1 = 0;
  CHECK_OK(gs_hub_get_step(hub, &step1));
  CHECK(step1 == step0 + 19, "step %llu, want %llu", (unsigned long long)step1, (unsigned long long)(step0 + 19));
  free(json);
  printf("ok: 20 steps of lanes sharing their boundaries: 40 lane spans landed, 19 steps begun\n");
  CHECK(gs_hub_drain(hub, -1, NULL) == GS_HUB_ERR_INVALID_ARGUMENT, "timeout -1 accepted");
  CHECK(strcmp(gs_hub_status_name(99), "GS_HUB_STATUS_UNKNOWN") == 0, "status 99 named %s", gs_hub_status_name(99));
  printf("ok: bad arguments\n");

  // Whose GPU time: two requests in one decode span, one of them twice as
  // many tokens; their records split the span and add up to it.
  {
    uint16_t tenant_a = 0, tenant_b = 0;
    CHECK_OK(gs_hub_request_class(hub, "llama", NULL, "a", &tenant_a));
    CHECK_OK(gs_hub_request_class(hub, "llama", "", "b", &tenant_b));
    CHECK(tenant_a > 1 && tenant_b > tenant_a, "classes %u %u", tenant_a, tenant_b);
    uint16_t bad = 99;
    CHECK(gs_hub_request_class(hub, "bad\nname", NULL, NULL, &bad) == GS_HUB_ERR_INVALID_ARGUMENT && bad == 99 &&
              strstr(last_error(hub), "model"),
          "a bad model name: %s", last_error(hub));
    gs_hub_request reqs[2] = {{.id = 7, .new_tokens = 2, .context = 2, .request_class = tenant_a},
                              {.id = 8, .decoded_tokens = 1, .context = 90, .request_class = tenant_b}};
    reqs[0].trace_id[0] = 1;
    reqs[0].span_id[7] = 2;
    CHECK_OK(gs_hub_begin_step(hub));
    CHECK_OK(gs_hub_serve_requests(hub, decode, reqs, 2));
    CHECK(gs_hub_serve_requests(hub, decode, reqs, 2) == GS_HUB_ERR_INVALID_ARGUMENT &&
              strstr(last_error(hub), "requests[0] (id 7): served twice"),
          "a request served twice in a span: %s", last_error(hub));
    CHECK(gs_hub_serve_requests(hub, 9, reqs, 2) == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(hub), "lane 9"),
          "an unknown lane: %s", last_error(hub));
    CHECK(gs_hub_serve_requests(hub, decode, NULL, 2) == GS_HUB_ERR_INVALID_ARGUMENT, "NULL requests accepted");
    CHECK(gs_hub_lane_work(hub, decode, -1, 0) == GS_HUB_ERR_INVALID_ARGUMENT, "negative flops accepted");
    CHECK_OK(gs_hub_lane_work(hub, decode, 1e9, 1e6));
    CHECK_OK(gs_hub_lane_begin(hub, decode));
    CHECK_OK(gs_hub_sim_launch(hub, 0, kStream, 30000));
    CHECK_OK(gs_hub_lane_end(hub, decode));
    CHECK_OK(gs_hub_end_request(hub, 7));
    CHECK_OK(gs_hub_end_request(hub, 8));
    CHECK(gs_hub_end_request(hub, 8) == GS_HUB_ERR_INVALID_ARGUMENT && strstr(last_error(hub), "id 8"),
          "ending a request twice: %s", last_error(hub));
    CHECK_OK(gs_hub_drain(hub, 5000, &in_flight));
    static char recs[1 << 16];
    uint64_t last = 0;
    char small[16];
    CHECK(gs_hub_finished_requests(hub, 0, small, sizeof small, &len, &last) == GS_HUB_ERR_TOO_SMALL && len > sizeof small,
          "a small buffer: len %zu", len);
    CHECK_OK(gs_hub_finished_requests(hub, 0, recs, sizeof recs, &len, &last));
    CHECK(last == 2 && strlen(recs) == len && strstr(recs, "\"id\":7") && strstr(recs, "\"tenant\":\"b\"") &&
              strstr(recs, "\"trace_id\":\"AQAAAAAAAAAAAAAAAAAAAA==\""),
          "records (last %llu): %s", (unsigned long long)last, recs);
    long a = field_after(recs, "\"id\":7", "gpu_ns"), b = field_after(recs, "\"id\":8", "gpu_ns");
    // Split by tokens while the lane's model is fitting: 2 to 1.
    CHECK(a + b >= 30000 && (a - 2 * b) * (a - 2 * b) <= 4, "the span of 30000 ns and more split %ld + %ld", a, b);
    CHECK_OK(gs_hub_finished_requests(hub, last, recs, sizeof recs, &len, &last));
    CHECK(last == 2 && strcmp(recs, "[]") == 0, "after the last: %s", recs);
    printf("ok: whose GPU time: a span of 30000 ns split %ld (2 new tokens) and %ld (1 decoded)\n", a, b);
  }

  // A hub at Off with nothing open: no call at all.
  gs_hub off = 0;
  o.level = GS_HUB_LEVEL_OFF;
  CHECK_OK(gs_hub_create(&o, &off));
  CHECK_OK(gs_hub_install_sim(off, 0, kStream, 0));
  CHECK(gs_hub_word(off) == 0, "word of a hub at Off: %#x", gs_hub_word(off));
#ifdef GS_HUB_TESTING
  before = gs_hub_testing_crossings();
#endif
  for (int i = 0; i < 100000; i++) {
    gs_hub_begin_step(off);
    gs_hub_lane_begin(off, 0);
    gs_hub_kernel_end(off, gs_hub_kernel_begin(off, kAttention, kStream));
    gs_hub_serve_requests(off, 0, NULL, 0);
    gs_hub_lane_work(off, 0, 1, 1);
    gs_hub_lane_end(off, 0);
    gs_hub_next_lane(off, 0, 1);
    gs_hub_next_step(off, 1, 0);
  }
#ifdef GS_HUB_TESTING
  CHECK(gs_hub_testing_crossings() == before, "the disabled path crossed %llu times",
        (unsigned long long)(gs_hub_testing_crossings() - before));
  printf("ok: the disabled path made no call in 800000 span calls\n");
#endif

  // Bad handles: refused, never a crash, the inline paths included.
  CHECK_OK(gs_hub_close(off));
  CHECK(gs_hub_set_level(off, 1) == GS_HUB_ERR_BAD_HANDLE && strstr(last_error(0), "not an open hub"),
        "closed hub: %s", last_error(0));
  CHECK(gs_hub_close(off) == GS_HUB_ERR_BAD_HANDLE, "double close accepted");
  gs_hub junk[] = {0, 1, 63, 64, 12345, ~(gs_hub)0, hub + GS_HUB_MAX_HUBS};
  for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
    gs_hub j = junk[i];
    CHECK(gs_hub_set_level(j, 1) == GS_HUB_ERR_BAD_HANDLE, "handle %llu accepted", (unsigned long long)j);
    CHECK(gs_hub_begin_step_call(j) == GS_HUB_ERR_BAD_HANDLE, "step on handle %llu", (unsigned long long)j);
    CHECK(gs_hub_kernel_begin_call(j, -1, 1, 0) == 0, "kernel span on handle %llu", (unsigned long long)j);
    CHECK(gs_hub_kernel_end_call(j, 1) == GS_HUB_ERR_BAD_HANDLE, "kernel end on handle %llu", (unsigned long long)j);
    CHECK(gs_hub_next_lane_call(j, 0, 1) == GS_HUB_ERR_BAD_HANDLE, "next lane on handle %llu", (unsigned long long)j);
    CHECK(gs_hub_next_step_call(j, 0, 1) == GS_HUB_ERR_BAD_HANDLE, "next step on handle %llu", (unsigned long long)j);
    gs_hub_next_lane(j, 0, 1);
    gs_hub_next_step(j, 0, 1);
    gs_hub_begin_step(j);
    gs_hub_lane_begin(j, 0);
    gs_hub_lane_end(j, 0);
    gs_hub_kernel_end(j, gs_hub_kernel_begin(j, 1, 0));
    CHECK(gs_hub_snapshot(j, 0, NULL, 0, &len) == GS_HUB_ERR_BAD_HANDLE, "snapshot of handle %llu", (unsigned long long)j);
  }
  printf("ok: bad handles\n");

  CHECK_OK(gs_hub_close(hub));
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("PASS\n");
  return 0;
}

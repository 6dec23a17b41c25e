/* Makes a hub from options given as name=value arguments, each set on
 * gs_hub_options by its field's name as a C caller writes it, and prints
 * the hub's snapshot JSON (its "options" are what the hub runs with). On a
 * refused create it prints "ERROR <message>" and exits 3. go/capi's
 * TestOptionsAgree runs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuspans/hub.h"

static const char* lanes[64];
static char lane_text[1024];

static int set(gs_hub_options* o, const char* name, const char* v) {
  if (!strcmp(name, "lanes")) {
    snprintf(lane_text, sizeof lane_text, "%s", v);
    int n = 0;
    for (char* tok = strtok(lane_text, ","); tok && n < 64; tok = strtok(NULL, ",")) lanes[n++] = tok;
    o->lanes = lanes;
    o->num_lanes = n;
  } else if (!strcmp(name, "level")) {
    o->level = atoi(v);
  } else if (!strcmp(name, "kernel_span_every")) {
    o->kernel_span_every = atoi(v);
  } else if (!strcmp(name, "slots")) {
    o->slots = atoi(v);
  } else if (!strcmp(name, "recent_spans")) {
    o->recent_spans = atoi(v);
  } else if (!strcmp(name, "start_times")) {
    o->start_times = atoi(v);
  } else if (!strcmp(name, "raw_kernel_spans")) {
    o->raw_kernel_spans = atoi(v);
  } else if (!strcmp(name, "kernel_timing")) {
    o->kernel_timing = atoi(v);
  } else if (!strcmp(name, "kernel_window_every_ns")) {
    o->kernel_window_every_ns = atoll(v);
  } else if (!strcmp(name, "kernel_window_steps")) {
    o->kernel_window_steps = atoi(v);
  } else if (!strcmp(name, "kernel_labels")) {
    o->kernel_labels = atoi(v);
  } else if (!strcmp(name, "max_requests")) {
    o->max_requests = atoi(v);
  } else if (!strcmp(name, "request_labels")) {
    o->request_labels = atoi(v);
  } else if (!strcmp(name, "peak_flops")) {
    o->peak_flops = atof(v);
  } else if (!strcmp(name, "peak_bandwidth")) {
    o->peak_bandwidth = atof(v);
  } else {
    return 0;
  }
  return 1;
}

int main(int argc, char** argv) {
  gs_hub_options o = gs_hub_options_init();
  o.quiet = 1;
  for (int i = 1; i < argc; i++) {
    char* eq = strchr(argv[i], '=');
    if (!eq) return fprintf(stderr, "want name=value, got %s\n", argv[i]), 2;
    *eq = 0;
    if (!set(&o, argv[i], eq + 1)) return fprintf(stderr, "options.c sets no option %s\n", argv[i]), 2;
  }
  gs_hub hub;
  if (gs_hub_create(&o, &hub) != GS_HUB_OK) {
    char msg[2048];
    gs_hub_last_error(0, msg, sizeof msg);
    printf("ERROR %s\n", msg);
    return 3;
  }
  static char buf[1 << 20];
  size_t len = 0;
  if (gs_hub_snapshot(hub, GS_HUB_SNAPSHOT_JSON, buf, sizeof buf, &len) != GS_HUB_OK) return 1;
  fwrite(buf, 1, len, stdout);
  return gs_hub_close(hub) == GS_HUB_OK ? 0 : 1;
}

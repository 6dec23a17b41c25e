// The Go side of each export of gpuspans/hub.h that fork.c guards: fork.c
// defines the hub.h name, which calls these unless the process is a fork.
// Generated with the exports; TestExportsNameThemselves holds the three
// (hub.h, this file, the Go exports) to one list.
#ifndef GPUSPANS_CAPI_EXPORTS_H_
#define GPUSPANS_CAPI_EXPORTS_H_

#include "gpuspans/hub.h"

/* gs_capi_forked reports whether this process is a fork of the one that
 * loaded the library, by the fork handler or by the pid (a system call);
 * gs_capi_fork_seen by the handler's flag alone, for the calls made many
 * times a step; gs_capi_refuse records op as the call refused for it and
 * returns GS_HUB_ERR_FORKED. fork.c's. */
int gs_capi_forked(void);
int gs_capi_fork_seen(void);
gs_hub_status gs_capi_refuse(const char* op);

const char* gs_hub_status_name_go(int32_t st);
size_t gs_hub_last_error_go(gs_hub hub, char* buf, size_t cap);
gs_hub_status gs_hub_create_go(const gs_hub_options* opts, gs_hub* out);
gs_hub_status gs_hub_close_go(gs_hub hub);
gs_hub_status gs_hub_install_cuda_go(gs_hub hub, int32_t device, uint64_t stream);
gs_hub_status gs_hub_install_sim_go(gs_hub hub, int32_t device, uint64_t stream, int64_t event_offset_ns);
gs_hub_status gs_hub_sim_launch_go(gs_hub hub, int32_t device, uint64_t stream, int64_t duration_ns);
gs_hub_status gs_hub_uninstall_go(gs_hub hub, int32_t device);
gs_hub_status gs_hub_register_kernel_go(gs_hub hub, uint64_t kernel, const char* name);
gs_hub_status gs_hub_lane_index_go(gs_hub hub, const char* name, int32_t* lane);
gs_hub_status gs_hub_set_kernel_timing_go(gs_hub hub, int32_t timing);
gs_hub_status gs_hub_get_kernel_timing_go(gs_hub hub, int32_t* timing, int32_t* tracing);
gs_hub_status gs_hub_set_kernel_windows_go(gs_hub hub, int64_t every_ns, int32_t steps);
gs_hub_status gs_hub_request_kernel_window_go(gs_hub hub);
gs_hub_status gs_hub_set_level_go(gs_hub hub, int32_t level);
gs_hub_status gs_hub_get_level_go(gs_hub hub, int32_t* level);
gs_hub_status gs_hub_set_kernel_span_every_go(gs_hub hub, int32_t n);
gs_hub_status gs_hub_harvest_go(gs_hub hub);
gs_hub_status gs_hub_drain_go(gs_hub hub, int32_t timeout_ms, uint64_t* in_flight);
gs_hub_status gs_hub_start_harvester_go(gs_hub hub, int64_t interval_us);
gs_hub_status gs_hub_stop_harvester_go(gs_hub hub);
gs_hub_status gs_hub_snapshot_go(gs_hub hub, int32_t format, void* buf, size_t cap, size_t* len);
gs_hub_status gs_hub_serve_go(gs_hub hub, const char* addr, const char* token, int32_t flags, char* bound, size_t bound_cap);
gs_hub_status gs_hub_stop_serving_go(gs_hub hub);
gs_hub_status gs_hub_metrics_go(gs_hub hub, char* buf, size_t cap, size_t* len);
gs_hub_status gs_hub_set_metrics_go(gs_hub hub, int32_t flags, int32_t classic_buckets);
gs_hub_status gs_hub_set_metric_labels_go(gs_hub hub, const char* const* names, const char* const* values, size_t n);
gs_hub_status gs_hub_recent_spans_go(gs_hub hub, uint64_t after_seq, gs_hub_span* out, size_t cap, size_t* n);
gs_hub_status gs_hub_keep_start_times_go(gs_hub hub);
gs_hub_status gs_hub_set_log_callback_go(gs_hub hub, gs_hub_log_fn fn, void* user);
gs_hub_status gs_hub_log_dropped_go(gs_hub hub, uint64_t* dropped);
gs_hub_status gs_hub_otlp_start_go(gs_hub hub, const gs_hub_otlp_options* opts);
gs_hub_status gs_hub_otlp_stop_go(gs_hub hub, int32_t timeout_ms);
gs_hub_status gs_hub_get_step_go(gs_hub hub, uint64_t* step);
gs_hub_status gs_hub_link_step_go(gs_hub hub, uint64_t step, const gs_hub_link* links, size_t n);
uint64_t gs_hub_kernel_begin_go(gs_hub hub, int32_t device, uint64_t kernel, uint64_t stream);
gs_hub_status gs_hub_kernel_end_go(gs_hub hub, uint64_t token);

#endif  // GPUSPANS_CAPI_EXPORTS_H_

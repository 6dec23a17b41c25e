// The exports of gpuspans/hub.h that fork.c guards and Go implements,
// each said once: fork.c defines each name from this list, exports.h
// declares its Go side, and TestExportsNameThemselves holds the list, hub.h
// and the Go exports to each other. Add an export here, in hub.h and as a
// //export of the Go name. The list is an X-macro (as NCCL's cudawrap.h
// and PyTorch's driver_api.h list their driver symbols):
//   X(check, refusal, return type, name, Go name, (parameters), (arguments))
// check: PID, a fork seen by its handler or by the pid (a system call), or
// FLAG, by the handler's flag alone, for calls made many times a step;
// refusal: STATUS (GS_HUB_ERR_FORKED) or TOKEN (a kernel span token of 0).
// gs_hub_status_name (C only: its table is the statuses' one list) and
// gs_hub_last_error (it answers in a child itself) are fork.c's own.
#ifndef GPUSPANS_CAPI_EXPORTS_LIST_H_
#define GPUSPANS_CAPI_EXPORTS_LIST_H_

// clang-format off
#define GS_CAPI_EXPORTS(X) \
  X(PID, STATUS, gs_hub_status, gs_hub_create, gs_hub_create_go, (const gs_hub_options* opts, gs_hub* out), (opts, out)) \
  X(PID, STATUS, gs_hub_status, gs_hub_close, gs_hub_close_go, (gs_hub hub), (hub)) \
  X(PID, STATUS, gs_hub_status, gs_hub_install_cuda, gs_hub_install_cuda_go, (gs_hub hub, int32_t device, uint64_t stream), (hub, device, stream)) \
  X(PID, STATUS, gs_hub_status, gs_hub_install_sim, gs_hub_install_sim_go, (gs_hub hub, int32_t device, uint64_t stream, int64_t event_offset_ns), (hub, device, stream, event_offset_ns)) \
  X(PID, STATUS, gs_hub_status, gs_hub_sim_launch, gs_hub_sim_launch_go, (gs_hub hub, int32_t device, uint64_t stream, int64_t duration_ns), (hub, device, stream, duration_ns)) \
  X(PID, STATUS, gs_hub_status, gs_hub_uninstall, gs_hub_uninstall_go, (gs_hub hub, int32_t device), (hub, device)) \
  X(PID, STATUS, gs_hub_status, gs_hub_register_kernel, gs_hub_register_kernel_go, (gs_hub hub, uint64_t kernel, const char* name), (hub, kernel, name)) \
  X(PID, STATUS, gs_hub_status, gs_hub_lane_index, gs_hub_lane_index_go, (gs_hub hub, const char* name, int32_t* lane), (hub, name, lane)) \
  X(PID, STATUS, gs_hub_status, gs_hub_set_kernel_timing, gs_hub_set_kernel_timing_go, (gs_hub hub, int32_t timing), (hub, timing)) \
  X(PID, STATUS, gs_hub_status, gs_hub_get_kernel_timing, gs_hub_get_kernel_timing_go, (gs_hub hub, int32_t* timing, int32_t* tracing), (hub, timing, tracing)) \
  X(PID, STATUS, gs_hub_status, gs_hub_set_kernel_windows, gs_hub_set_kernel_windows_go, (gs_hub hub, int64_t every_ns, int32_t steps), (hub, every_ns, steps)) \
  X(PID, STATUS, gs_hub_status, gs_hub_request_kernel_window, gs_hub_request_kernel_window_go, (gs_hub hub), (hub)) \
  X(PID, STATUS, gs_hub_status, gs_hub_set_level, gs_hub_set_level_go, (gs_hub hub, int32_t level), (hub, level)) \
  X(PID, STATUS, gs_hub_status, gs_hub_get_level, gs_hub_get_level_go, (gs_hub hub, int32_t* level), (hub, level)) \
  X(PID, STATUS, gs_hub_status, gs_hub_set_kernel_span_every, gs_hub_set_kernel_span_every_go, (gs_hub hub, int32_t n), (hub, n)) \
  X(PID, STATUS, gs_hub_status, gs_hub_harvest, gs_hub_harvest_go, (gs_hub hub), (hub)) \
  X(PID, STATUS, gs_hub_status, gs_hub_drain, gs_hub_drain_go, (gs_hub hub, int32_t timeout_ms, uint64_t* in_flight), (hub, timeout_ms, in_flight)) \
  X(PID, STATUS, gs_hub_status, gs_hub_start_harvester, gs_hub_start_harvester_go, (gs_hub hub, int64_t interval_us), (hub, interval_us)) \
  X(PID, STATUS, gs_hub_status, gs_hub_stop_harvester, gs_hub_stop_harvester_go, (gs_hub hub), (hub)) \
  X(PID, STATUS, gs_hub_status, gs_hub_start_profile, gs_hub_start_profile_go, (gs_hub hub, const char* path, const char* build, int64_t every_ms), (hub, path, build, every_ms)) \
  X(PID, STATUS, gs_hub_status, gs_hub_stop_profile, gs_hub_stop_profile_go, (gs_hub hub), (hub)) \
  X(PID, STATUS, gs_hub_status, gs_hub_snapshot, gs_hub_snapshot_go, (gs_hub hub, int32_t format, void* buf, size_t cap, size_t* len), (hub, format, buf, cap, len)) \
  X(PID, STATUS, gs_hub_status, gs_hub_serve, gs_hub_serve_go, (gs_hub hub, const char* addr, const char* token, int32_t flags, char* bound, size_t bound_cap), (hub, addr, token, flags, bound, bound_cap)) \
  X(PID, STATUS, gs_hub_status, gs_hub_stop_serving, gs_hub_stop_serving_go, (gs_hub hub), (hub)) \
  X(PID, STATUS, gs_hub_status, gs_hub_metrics, gs_hub_metrics_go, (gs_hub hub, char* buf, size_t cap, size_t* len), (hub, buf, cap, len)) \
  X(PID, STATUS, gs_hub_status, gs_hub_set_metrics, gs_hub_set_metrics_go, (gs_hub hub, int32_t flags, int32_t classic_buckets), (hub, flags, classic_buckets)) \
  X(PID, STATUS, gs_hub_status, gs_hub_set_metric_labels, gs_hub_set_metric_labels_go, (gs_hub hub, const char* const* names, const char* const* values, size_t n), (hub, names, values, n)) \
  X(PID, STATUS, gs_hub_status, gs_hub_recent_spans, gs_hub_recent_spans_go, (gs_hub hub, uint64_t after_seq, gs_hub_span* out, size_t cap, size_t* n), (hub, after_seq, out, cap, n)) \
  X(PID, STATUS, gs_hub_status, gs_hub_keep_start_times, gs_hub_keep_start_times_go, (gs_hub hub), (hub)) \
  X(PID, STATUS, gs_hub_status, gs_hub_set_log_callback, gs_hub_set_log_callback_go, (gs_hub hub, gs_hub_log_fn fn, void* user), (hub, fn, user)) \
  X(PID, STATUS, gs_hub_status, gs_hub_log_dropped, gs_hub_log_dropped_go, (gs_hub hub, uint64_t* dropped), (hub, dropped)) \
  X(PID, STATUS, gs_hub_status, gs_hub_otlp_start, gs_hub_otlp_start_go, (gs_hub hub, const gs_hub_otlp_options* opts), (hub, opts)) \
  X(PID, STATUS, gs_hub_status, gs_hub_otlp_stop, gs_hub_otlp_stop_go, (gs_hub hub, int32_t timeout_ms), (hub, timeout_ms)) \
  X(PID, STATUS, gs_hub_status, gs_hub_get_step, gs_hub_get_step_go, (gs_hub hub, uint64_t* step), (hub, step)) \
  X(PID, STATUS, gs_hub_status, gs_hub_link_step, gs_hub_link_step_go, (gs_hub hub, uint64_t step, const gs_hub_link* links, size_t n), (hub, step, links, n)) \
  X(PID, STATUS, gs_hub_status, gs_hub_request_class, gs_hub_request_class_go, (gs_hub hub, const char* model, const char* adapter, const char* tenant, uint16_t* request_class), (hub, model, adapter, tenant, request_class)) \
  X(PID, STATUS, gs_hub_status, gs_hub_finished_requests, gs_hub_finished_requests_go, (gs_hub hub, uint64_t after_seq, char* buf, size_t cap, size_t* len, uint64_t* last_seq), (hub, after_seq, buf, cap, len, last_seq)) \
  X(FLAG, STATUS, gs_hub_status, gs_hub_end_request, gs_hub_end_request_go, (gs_hub hub, uint64_t id), (hub, id)) \
  X(FLAG, STATUS, gs_hub_status, gs_hub_serve_requests_call, gs_hub_serve_requests_go, (gs_hub hub, int32_t lane, const gs_hub_request* requests, size_t n), (hub, lane, requests, n)) \
  X(FLAG, STATUS, gs_hub_status, gs_hub_lane_work_call, gs_hub_lane_work_go, (gs_hub hub, int32_t lane, double flops, double bytes), (hub, lane, flops, bytes)) \
  X(FLAG, TOKEN, uint64_t, gs_hub_kernel_begin_call, gs_hub_kernel_begin_go, (gs_hub hub, int32_t device, uint64_t kernel, uint64_t stream), (hub, device, kernel, stream)) \
  X(FLAG, STATUS, gs_hub_status, gs_hub_kernel_end_call, gs_hub_kernel_end_go, (gs_hub hub, uint64_t token), (hub, token))
// clang-format on

#endif  // GPUSPANS_CAPI_EXPORTS_LIST_H_

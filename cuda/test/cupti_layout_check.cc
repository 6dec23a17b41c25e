// Checks third_party/cuda/cupti_subset.h against the real CUPTI headers:
// every field the tracer reads sits at the same offset in
// CUpti_ActivityKernel10 (CUDA 13), and the constants agree. Compiled on the
// GPU machine, which has the CUDA toolkit, by tools/gpu/run.sh:
//   g++ -std=c++17 -I/usr/local/cuda/include -Ithird_party/cuda \
//     cuda/test/cupti_layout_check.cc -o /tmp/cupti_layout_check
// It fails to compile on a mismatch and prints the API version it was built
// against when it runs.
#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <cupti_runtime_cbid.h>
#include <cupti_result.h>
#include <cupti_version.h>
#include <stddef.h>
#include <stdio.h>

namespace ours {
#define CUresult ours_CUresult
#include "cupti_subset.h"
#undef CUresult
}  // namespace ours

#define SAME_OFFSET(field) \
  static_assert(offsetof(CUpti_ActivityKernel10, field) == offsetof(ours::CUpti_KernelRecordPrefix, field), #field)
SAME_OFFSET(kind);
SAME_OFFSET(start);
SAME_OFFSET(end);
SAME_OFFSET(deviceId);
SAME_OFFSET(contextId);
SAME_OFFSET(streamId);
SAME_OFFSET(gridX);
SAME_OFFSET(blockX);
SAME_OFFSET(correlationId);
SAME_OFFSET(gridId);
SAME_OFFSET(name);
SAME_OFFSET(graphNodeId);
SAME_OFFSET(graphId);
static_assert(offsetof(CUpti_CallbackData, callbackSite) == offsetof(ours::CUpti_CallbackDataPrefix, callbackSite),
              "callbackSite");
static_assert(offsetof(CUpti_CallbackData, correlationData) ==
                  offsetof(ours::CUpti_CallbackDataPrefix, correlationData),
              "correlationData");
static_assert(offsetof(CUpti_CallbackData, correlationId) == offsetof(ours::CUpti_CallbackDataPrefix, correlationId),
              "correlationId");
static_assert(int{CUPTI_CB_DOMAIN_DRIVER_API} == int{ours::CUPTI_CB_DOMAIN_DRIVER_API}, "driver domain");
static_assert(int{CUPTI_CB_DOMAIN_RUNTIME_API} == int{ours::CUPTI_CB_DOMAIN_RUNTIME_API}, "runtime domain");
static_assert(int{CUPTI_API_ENTER} == int{ours::CUPTI_API_ENTER}, "api enter");
static_assert(int{CUPTI_API_EXIT} == int{ours::CUPTI_API_EXIT}, "api exit");
static_assert(alignof(CUpti_ActivityKernel10) == alignof(ours::CUpti_KernelRecordPrefix), "alignment");
static_assert(int{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL} == int{ours::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}, "kind");
static_assert(int{CUPTI_ERROR_MAX_LIMIT_REACHED} == int{ours::CUPTI_ERROR_MAX_LIMIT_REACHED}, "max limit");
static_assert(int{CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED} ==
                  int{ours::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED},
              "subscribers");
#define SAME_API_OFFSET(field) \
  static_assert(offsetof(CUpti_ActivityAPI, field) == offsetof(ours::CUpti_ActivityAPI, field), #field)
SAME_API_OFFSET(kind);
SAME_API_OFFSET(cbid);
SAME_API_OFFSET(threadId);
static_assert(sizeof(CUpti_ActivityAPI) == sizeof(ours::CUpti_ActivityAPI), "API record size");
#define SAME_COPY_OFFSET(type, field) \
  static_assert(offsetof(type, field) == offsetof(ours::CUpti_CopyRecordPrefix, field), #type "." #field)
#define SAME_COPY_OFFSETS(type)          \
  SAME_COPY_OFFSET(type, kind);          \
  SAME_COPY_OFFSET(type, bytes);         \
  SAME_COPY_OFFSET(type, start);         \
  SAME_COPY_OFFSET(type, end);           \
  SAME_COPY_OFFSET(type, deviceId);      \
  SAME_COPY_OFFSET(type, contextId);     \
  SAME_COPY_OFFSET(type, streamId);      \
  SAME_COPY_OFFSET(type, correlationId); \
  SAME_COPY_OFFSET(type, graphNodeId);   \
  SAME_COPY_OFFSET(type, graphId)
SAME_COPY_OFFSETS(CUpti_ActivityMemcpy6);
SAME_COPY_OFFSETS(CUpti_ActivityMemset4);
#define SAME_VALUE(name) static_assert(int{name} == int{ours::name}, #name)
SAME_VALUE(CUPTI_ACTIVITY_KIND_MEMCPY);
SAME_VALUE(CUPTI_ACTIVITY_KIND_MEMSET);
SAME_VALUE(CUPTI_ACTIVITY_KIND_DRIVER);
SAME_VALUE(CUPTI_ACTIVITY_KIND_RUNTIME);
SAME_VALUE(CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
SAME_VALUE(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz);
SAME_VALUE(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000);
SAME_VALUE(CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx);
SAME_VALUE(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz);
SAME_VALUE(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
SAME_VALUE(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000);
SAME_VALUE(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000);
SAME_VALUE(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000);
SAME_VALUE(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060);
SAME_VALUE(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060);
static_assert(int{CUPTI_ACTIVITY_FLAG_FLUSH_FORCED} == int{ours::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED}, "flush forced");

int main() {
  printf("cupti layout: CUpti_ActivityKernel10 matches cupti_subset.h (CUPTI_API_VERSION %d, record %zu bytes)\n",
         CUPTI_API_VERSION, sizeof(CUpti_ActivityKernel10));
  // The tracer switches API records off per cbid up to the first run of
  // refusals: these are the bounds of this toolkit's tables.
  printf("cupti cbids: driver %d, runtime %d\n", int{CUPTI_DRIVER_TRACE_CBID_SIZE}, int{CUPTI_RUNTIME_TRACE_CBID_SIZE});
  return 0;
}

/*
 * Our own declarations of the CUPTI activity API subset gpuspans calls
 * through dlsym (libcupti is loaded at run time; nothing links -lcupti and
 * no CUDA toolkit is needed to build). Values and layouts are those of
 * CUPTI's cupti_activity.h, cupti_callbacks.h and cupti_result.h (CUDA 12
 * and 13); the GPU tests compile a check of every offset below against the
 * real headers.
 */
#ifndef GPUSPANS_THIRD_PARTY_CUDA_CUPTI_SUBSET_H_
#define GPUSPANS_THIRD_PARTY_CUDA_CUPTI_SUBSET_H_

#include <stddef.h>
#include <stdint.h>

#include "cuda_driver_subset.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int CUptiResult;
enum {
  CUPTI_SUCCESS = 0,
  CUPTI_ERROR_MAX_LIMIT_REACHED = 12, /* cuptiActivityGetNextRecord: no more records */
  CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
};

typedef int CUpti_ActivityKind;
enum {
  CUPTI_ACTIVITY_KIND_MEMCPY = 1, /* copies: CUpti_ActivityMemcpy6 (CUDA 13) */
  CUPTI_ACTIVITY_KIND_MEMSET = 2, /* memsets on the device: CUpti_ActivityMemset4 */
  CUPTI_ACTIVITY_KIND_DRIVER = 4,  /* CUpti_ActivityAPI records of driver API calls */
  CUPTI_ACTIVITY_KIND_RUNTIME = 5, /* the same of runtime API calls */
  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10,
};

/* cuptiSetThreadIdType's types: what CUpti_ActivityAPI.threadId holds. */
enum {
  CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT = 0, /* pthread_self(), cut to 32 bits */
  CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM = 1,  /* gettid() */
};

/* The callback ids (cupti_driver_cbid.h, cupti_runtime_cbid.h) of the
 * calls that replay a CUDA graph. */
enum {
  CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch = 514,
  CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz = 515,
  CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 = 311,
  CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000 = 312,
};
/* ... and of those that launch one kernel. */
enum {
  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel = 307,
  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz = 442,
  CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel = 477,
  CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz = 478,
  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx = 652,
  CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz = 653,
  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 = 211,
  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 = 214,
  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000 = 269,
  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000 = 270,
  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 = 430,
  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 = 431,
};

enum { CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 };

/* Callback domains and sites (cupti_callbacks.h). */
enum { CUPTI_CB_DOMAIN_DRIVER_API = 1, CUPTI_CB_DOMAIN_RUNTIME_API = 2 };
enum { CUPTI_API_ENTER = 0, CUPTI_API_EXIT = 1 };

/* The leading fields of CUpti_CallbackData, what a driver or runtime API
 * callback gets. */
typedef struct CUpti_CallbackDataPrefix {
  int32_t callbackSite;          /*  0: CUPTI_API_ENTER or CUPTI_API_EXIT */
  const char* functionName;      /*  8 */
  const void* functionParams;    /* 16 */
  void* functionReturnValue;     /* 24 */
  const char* symbolName;        /* 32 */
  CUcontext context;             /* 40 */
  uint32_t contextUid;           /* 48 */
  uint64_t* correlationData;     /* 56: the call's scratch, shared by its enter and exit */
  uint32_t correlationId;        /* 64: the call's activity records carry it */
} CUpti_CallbackDataPrefix;

/* Every activity record starts with its kind; records are 8-byte aligned. */
typedef struct CUpti_Activity {
  CUpti_ActivityKind kind;
} CUpti_Activity;

/* The leading fields of a CONCURRENT_KERNEL record: CUpti_ActivityKernel9
 * (CUDA 12) and CUpti_ActivityKernel10 (CUDA 13) agree up to graphId, and
 * only later fields were appended since. The records are packed; the
 * offsets are asserted below. */
typedef struct CUpti_KernelRecordPrefix {
  CUpti_ActivityKind kind; /*   0 */
  uint8_t cacheConfig;     /*   4 */
  uint8_t sharedMemoryConfig;
  uint16_t registersPerThread;
  int32_t partitionedGlobalCacheRequested; /* 8 */
  int32_t partitionedGlobalCacheExecuted;
  uint64_t start;     /*  16: ns, CUPTI's clock (cuptiGetTimestamp) */
  uint64_t end;       /*  24 */
  uint64_t completed; /*  32 */
  uint32_t deviceId;  /*  40 */
  uint32_t contextId; /*  44 */
  uint32_t streamId;  /*  48 */
  int32_t gridX, gridY, gridZ, blockX, blockY, blockZ; /* 52 */
  int32_t staticSharedMemory;  /*  76 */
  int32_t dynamicSharedMemory; /*  80 */
  uint32_t localMemoryPerThread;
  uint32_t localMemoryTotal;
  uint32_t correlationId; /*  92 */
  int64_t gridId;         /*  96 */
  const char* name;       /* 104: mangled; owned by CUPTI */
  void* reserved0;        /* 112 */
  uint64_t queued;        /* 120 */
  uint64_t submitted;     /* 128 */
  uint8_t launchType;     /* 136 */
  uint8_t isSharedMemoryCarveoutRequested;
  uint8_t sharedMemoryCarveoutRequested;
  uint8_t padding;
  uint32_t sharedMemoryExecuted; /* 140 */
  uint64_t graphNodeId;          /* 144: 0 unless launched from a graph */
  int32_t shmemLimitConfig;      /* 152 */
  uint32_t graphId;              /* 156: 0 unless launched from a graph */
} __attribute__((packed, aligned(8))) CUpti_KernelRecordPrefix;

#ifdef __cplusplus
#define GS_CUPTI_OFFSET(f, off) static_assert(offsetof(CUpti_KernelRecordPrefix, f) == (off), #f)
GS_CUPTI_OFFSET(start, 16);
GS_CUPTI_OFFSET(end, 24);
GS_CUPTI_OFFSET(deviceId, 40);
GS_CUPTI_OFFSET(contextId, 44);
GS_CUPTI_OFFSET(streamId, 48);
GS_CUPTI_OFFSET(gridX, 52);
GS_CUPTI_OFFSET(blockX, 64);
GS_CUPTI_OFFSET(correlationId, 92);
GS_CUPTI_OFFSET(gridId, 96);
GS_CUPTI_OFFSET(name, 104);
GS_CUPTI_OFFSET(graphNodeId, 144);
GS_CUPTI_OFFSET(graphId, 156);
#undef GS_CUPTI_OFFSET
static_assert(sizeof(CUpti_KernelRecordPrefix) == 160, "prefix size");
#endif

/* The leading fields of a MEMCPY record (CUpti_ActivityMemcpy5 and 6) and a
 * MEMSET record (CUpti_ActivityMemset4): they agree up to graphId. */
typedef struct CUpti_CopyRecordPrefix {
  CUpti_ActivityKind kind; /*  0 */
  uint32_t kindBytes;      /*  4: copyKind, srcKind, dstKind, flags; a memset's value */
  uint64_t bytes;          /*  8 */
  uint64_t start;          /* 16: ns, CUPTI's clock */
  uint64_t end;            /* 24 */
  uint32_t deviceId;       /* 32 */
  uint32_t contextId;      /* 36 */
  uint32_t streamId;       /* 40 */
  uint32_t correlationId;  /* 44 */
  uint32_t more;           /* 48: a copy's runtimeCorrelationId; a memset's flags and memoryKind */
  uint32_t pad;            /* 52 */
  void* reserved0;         /* 56 */
  uint64_t graphNodeId;    /* 64 */
  uint32_t graphId;        /* 72 */
} __attribute__((packed, aligned(8))) CUpti_CopyRecordPrefix;

#ifdef __cplusplus
static_assert(offsetof(CUpti_CopyRecordPrefix, start) == 16, "copy start");
static_assert(offsetof(CUpti_CopyRecordPrefix, deviceId) == 32, "copy deviceId");
static_assert(offsetof(CUpti_CopyRecordPrefix, correlationId) == 44, "copy correlationId");
static_assert(offsetof(CUpti_CopyRecordPrefix, graphId) == 72, "copy graphId");
#endif

/* A DRIVER or RUNTIME record (CUpti_ActivityAPI, unchanged since CUDA 4):
 * one API call, made by threadId (by default what pthread_self() returns,
 * cut to 32 bits). */
typedef struct CUpti_ActivityAPI {
  CUpti_ActivityKind kind; /*  0 */
  uint32_t cbid;           /*  4 */
  uint64_t start;          /*  8 */
  uint64_t end;            /* 16 */
  uint32_t processId;      /* 24 */
  uint32_t threadId;       /* 28 */
  uint32_t correlationId;  /* 32 */
  uint32_t returnValue;    /* 36 */
} CUpti_ActivityAPI;

#ifdef __cplusplus
static_assert(offsetof(CUpti_ActivityAPI, cbid) == 4, "cbid");
static_assert(offsetof(CUpti_ActivityAPI, threadId) == 28, "threadId");
static_assert(sizeof(CUpti_ActivityAPI) == 40, "CUpti_ActivityAPI size");
#endif

typedef struct CUpti_Subscriber_st* CUpti_SubscriberHandle;
typedef void (*CUpti_CallbackFunc)(void* userdata, int domain, uint32_t cbid, const void* cbdata);

typedef void (*CUpti_BuffersCallbackRequestFunc)(uint8_t** buffer, size_t* size,
                                                 size_t* maxNumRecords);
typedef void (*CUpti_BuffersCallbackCompleteFunc)(CUcontext context, uint32_t streamId,
                                                  uint8_t* buffer, size_t size, size_t validSize);

typedef CUptiResult (*PFN_cuptiGetVersion)(uint32_t* version);
typedef CUptiResult (*PFN_cuptiGetResultString)(CUptiResult result, const char** str);
typedef CUptiResult (*PFN_cuptiGetTimestamp)(uint64_t* timestamp);
typedef CUptiResult (*PFN_cuptiActivityEnable)(CUpti_ActivityKind kind);
typedef CUptiResult (*PFN_cuptiActivityDisable)(CUpti_ActivityKind kind);
typedef CUptiResult (*PFN_cuptiActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc req,
                                                          CUpti_BuffersCallbackCompleteFunc done);
typedef CUptiResult (*PFN_cuptiActivityFlushAll)(uint32_t flag);
typedef CUptiResult (*PFN_cuptiActivityFlushPeriod)(uint32_t ms);
typedef CUptiResult (*PFN_cuptiActivityGetNextRecord)(uint8_t* buffer, size_t validSize,
                                                      CUpti_Activity** record);
typedef CUptiResult (*PFN_cuptiActivityGetNumDroppedRecords)(CUcontext context, uint32_t streamId,
                                                             size_t* dropped);
typedef CUptiResult (*PFN_cuptiGetDeviceId)(CUcontext context, uint32_t* deviceId);
typedef CUptiResult (*PFN_cuptiSubscribe)(CUpti_SubscriberHandle* subscriber,
                                          CUpti_CallbackFunc callback, void* userdata);
typedef CUptiResult (*PFN_cuptiUnsubscribe)(CUpti_SubscriberHandle subscriber);
typedef CUptiResult (*PFN_cuptiEnableDomain)(uint32_t enable, CUpti_SubscriberHandle subscriber, int domain);
typedef CUptiResult (*PFN_cuptiEnableCallback)(uint32_t enable, CUpti_SubscriberHandle subscriber, int domain,
                                               uint32_t cbid);
typedef CUptiResult (*PFN_cuptiFinalize)(void);
typedef CUptiResult (*PFN_cuptiSetThreadIdType)(int type);
/* Per-API switches of DRIVER and RUNTIME activity records (CUDA 12.5 and
 * later): with the kind enabled, a cbid switched off writes no record. */
typedef CUptiResult (*PFN_cuptiActivityEnableDriverApi)(uint32_t cbid, uint8_t enable);
typedef CUptiResult (*PFN_cuptiActivityEnableRuntimeApi)(uint32_t cbid, uint8_t enable);

#ifdef __cplusplus
}
#endif

#endif /* GPUSPANS_THIRD_PARTY_CUDA_CUPTI_SUBSET_H_ */

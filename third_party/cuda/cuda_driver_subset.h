/*
 * The subset of the CUDA driver API that gpuspans uses, declared by us so the
 * project builds without a CUDA toolkit. The library never links -lcuda: it
 * resolves these functions with dlsym and calls them through the pointer
 * types below.
 *
 * Every value and signature here comes from the public cuda.h (CUDA 12/13);
 * they are part of the driver's stable ABI. Add to this file only what the
 * code uses, with the value cuda.h gives it.
 */
#ifndef GPUSPANS_THIRD_PARTY_CUDA_DRIVER_SUBSET_H_
#define GPUSPANS_THIRD_PARTY_CUDA_DRIVER_SUBSET_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cuda.h declares CUresult as `enum cudaError_enum`, which the ABI passes as
 * a 32-bit int. We use int so any code a driver (or the test fake) returns is
 * a valid value, including ones newer than this list. */
typedef int CUresult;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_ECC_UNCORRECTABLE = 214,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_NVLINK_UNCORRECTABLE = 220,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_ASSERT = 710,
  CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
  CUDA_ERROR_INVALID_PC = 718,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
  CUDA_ERROR_CAPTURED_EVENT = 907,
  CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908,
  CUDA_ERROR_UNKNOWN = 999
};

typedef int CUdevice;
typedef struct CUuuid_st {
  char bytes[16];
} CUuuid;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 in cuda.h */
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphExec_st* CUgraphExec;

typedef enum CUstreamCaptureStatus_enum {
  CU_STREAM_CAPTURE_STATUS_NONE = 0,
  CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
  CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;

typedef enum CUstreamCaptureMode_enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;

/* CUevent_flags */
enum { CU_EVENT_DEFAULT = 0x0, CU_EVENT_BLOCKING_SYNC = 0x1, CU_EVENT_DISABLE_TIMING = 0x2 };

/* CUstream_flags */
enum { CU_STREAM_DEFAULT = 0x0, CU_STREAM_NON_BLOCKING = 0x1 };

/* Initialisation and errors. */
typedef CUresult (*PFN_cuInit)(unsigned int flags);
typedef CUresult (*PFN_cuGetErrorName)(CUresult error, const char** str);
typedef CUresult (*PFN_cuGetErrorString)(CUresult error, const char** str);
typedef CUresult (*PFN_cuDriverGetVersion)(int* driverVersion);

/* Devices and contexts. */
typedef CUresult (*PFN_cuDeviceGetCount)(int* count);
typedef CUresult (*PFN_cuDeviceGet)(CUdevice* device, int ordinal);
typedef CUresult (*PFN_cuDeviceGetName)(char* name, int len, CUdevice dev);
typedef CUresult (*PFN_cuDeviceGetUuid)(CUuuid* uuid, CUdevice dev); /* _v2 too */
typedef CUresult (*PFN_cuDeviceGetPCIBusId)(char* pciBusId, int len, CUdevice dev);
typedef CUresult (*PFN_cuDevicePrimaryCtxRetain)(CUcontext* pctx, CUdevice dev);
typedef CUresult (*PFN_cuDevicePrimaryCtxRelease)(CUdevice dev); /* _v2 */
typedef CUresult (*PFN_cuCtxGetCurrent)(CUcontext* pctx);
typedef CUresult (*PFN_cuCtxPushCurrent)(CUcontext ctx); /* _v2 */
typedef CUresult (*PFN_cuCtxPopCurrent)(CUcontext* pctx); /* _v2 */
typedef CUresult (*PFN_cuCtxSetCurrent)(CUcontext ctx);

/* Streams and capture. */
typedef CUresult (*PFN_cuStreamCreate)(CUstream* phStream, unsigned int flags);
typedef CUresult (*PFN_cuStreamDestroy)(CUstream hStream); /* _v2 */
typedef CUresult (*PFN_cuStreamSynchronize)(CUstream hStream);
typedef CUresult (*PFN_cuStreamIsCapturing)(CUstream hStream, CUstreamCaptureStatus* status);
typedef CUresult (*PFN_cuThreadExchangeStreamCaptureMode)(CUstreamCaptureMode* mode);
typedef CUresult (*PFN_cuStreamBeginCapture)(CUstream hStream, CUstreamCaptureMode mode); /* _v2 */
typedef CUresult (*PFN_cuStreamEndCapture)(CUstream hStream, CUgraph* phGraph);

/* Events. */
typedef CUresult (*PFN_cuEventCreate)(CUevent* phEvent, unsigned int flags);
typedef CUresult (*PFN_cuEventDestroy)(CUevent hEvent); /* _v2 */
typedef CUresult (*PFN_cuEventRecord)(CUevent hEvent, CUstream hStream);
typedef CUresult (*PFN_cuEventQuery)(CUevent hEvent);
typedef CUresult (*PFN_cuEventElapsedTime)(float* pMilliseconds, CUevent hStart, CUevent hEnd);

/* Modules, kernels, memory (the GPU kit only). */
typedef CUresult (*PFN_cuModuleLoadData)(CUmodule* module, const void* image);
typedef CUresult (*PFN_cuModuleUnload)(CUmodule hmod);
typedef CUresult (*PFN_cuModuleGetFunction)(CUfunction* hfunc, CUmodule hmod, const char* name);
typedef CUresult (*PFN_cuLaunchKernel)(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                       unsigned int gridDimZ, unsigned int blockDimX,
                                       unsigned int blockDimY, unsigned int blockDimZ,
                                       unsigned int sharedMemBytes, CUstream hStream,
                                       void** kernelParams, void** extra);
typedef CUresult (*PFN_cuMemAlloc)(CUdeviceptr* dptr, size_t bytesize); /* _v2 */
typedef CUresult (*PFN_cuMemFree)(CUdeviceptr dptr);                    /* _v2 */
typedef CUresult (*PFN_cuMemcpyDtoH)(void* dstHost, CUdeviceptr srcDevice,
                                     size_t ByteCount); /* _v2 */
typedef CUresult (*PFN_cuMemsetD8)(CUdeviceptr dstDevice, unsigned char uc, size_t N); /* _v2 */

/* Graphs (the GPU kit only). */
typedef CUresult (*PFN_cuGraphInstantiateWithFlags)(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                    unsigned long long flags);
typedef CUresult (*PFN_cuGraphLaunch)(CUgraphExec hGraphExec, CUstream hStream);
typedef CUresult (*PFN_cuGraphDestroy)(CUgraph hGraph);
typedef CUresult (*PFN_cuGraphExecDestroy)(CUgraphExec hGraphExec);

#ifdef __cplusplus
}
#endif

#endif /* GPUSPANS_THIRD_PARTY_CUDA_DRIVER_SUBSET_H_ */

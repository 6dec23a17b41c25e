// The GPU kit: streams, a %globaltimer spin kernel from hand-written
// PTX, device memory for the kernel's own timings, and graph capture.
#include <string.h>

#include <memory>
#include <new>

#include "driver.h"
#include "gpuspans/gpuspans_kit.h"
#include "spin_ptx.h"

namespace gs {
namespace {

// gs_spin(ns, out): read %globaltimer, spin until it has advanced by ns, and
// when out is not null store the first and last readings at out[0], out[1].
const char kPtx[] = GS_PTX_MODULE_HEAD R"(
.visible .entry gs_spin(
    .param .u64 gs_spin_ns,
    .param .u64 gs_spin_out
)
{
    .reg .pred %p<3>;
    .reg .b64 %rd<7>;

    ld.param.u64 %rd1, [gs_spin_ns];
    ld.param.u64 %rd2, [gs_spin_out];
)" GS_PTX_SPIN("$L_spin", "%rd1", "%rd3", "%rd4", "%rd5", "%p1") R"(    setp.eq.u64 %p2, %rd2, 0;
    @%p2 bra $L_done;
    cvta.to.global.u64 %rd6, %rd2;
    st.global.u64 [%rd6], %rd3;
    st.global.u64 [%rd6+8], %rd5;
$L_done:
    ret;
}

// gs_spin_grid(ns, out): every CTA (one thread each) spins like gs_spin and
// stores its first and last readings at out[2*ctaid], out[2*ctaid+1]; the
// kernel's own interval is the earliest first to the latest last.
.visible .entry gs_spin_grid(
    .param .u64 gs_spin_grid_ns,
    .param .u64 gs_spin_grid_out
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<9>;

    ld.param.u64 %rd1, [gs_spin_grid_ns];
    ld.param.u64 %rd2, [gs_spin_grid_out];
)" GS_PTX_SPIN("$L_grid_spin", "%rd1", "%rd3", "%rd4", "%rd5", "%p1") R"(    mov.u32 %r1, %ctaid.x;
    mul.wide.u32 %rd6, %r1, 16;
    cvta.to.global.u64 %rd7, %rd2;
    add.u64 %rd8, %rd7, %rd6;
    st.global.u64 [%rd8], %rd3;
    st.global.u64 [%rd8+8], %rd5;
    ret;
}

.visible .entry gs_empty()
{
    ret;
}

// gs_count(counter): one thread adds 1 to the u64 at counter, so a test can
// tell that every kernel it launched ran.
.visible .entry gs_count(
    .param .u64 gs_count_ptr
)
{
    .reg .b64 %rd<4>;

    ld.param.u64 %rd1, [gs_count_ptr];
    cvta.to.global.u64 %rd2, %rd1;
    atom.global.add.u64 %rd3, [%rd2], 1;
    ret;
}
)";

#define GS_KIT_SYMBOLS(X)                                      \
  X(cuModuleLoadData, "cuModuleLoadData")                      \
  X(cuModuleUnload, "cuModuleUnload")                          \
  X(cuModuleGetFunction, "cuModuleGetFunction")                \
  X(cuLaunchKernel, "cuLaunchKernel")                          \
  X(cuMemAlloc, "cuMemAlloc_v2")                               \
  X(cuMemFree, "cuMemFree_v2")                                 \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2")                           \
  X(cuMemsetD8, "cuMemsetD8_v2")                               \
  X(cuStreamSynchronize, "cuStreamSynchronize")                \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2")           \
  X(cuStreamEndCapture, "cuStreamEndCapture")                  \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags") \
  X(cuGraphLaunch, "cuGraphLaunch")                            \
  X(cuGraphDestroy, "cuGraphDestroy")                          \
  X(cuGraphExecDestroy, "cuGraphExecDestroy")

template <typename T>
T* Handle(uint64_t v) {
  return reinterpret_cast<T*>(v);
}

template <typename T>
uint64_t Value(T* p) {
  return reinterpret_cast<uint64_t>(p);
}

}  // namespace

// In gs, not an anonymous namespace: gs_kit (external linkage) holds one.
struct KitDriver {
#define GS_KIT_FIELD(field, name) PFN_##field field;
  GS_KIT_SYMBOLS(GS_KIT_FIELD)
#undef GS_KIT_FIELD
};

}  // namespace gs

struct gs_kit {
  const gs::Driver* d = nullptr;
  gs::KitDriver k{};
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction spin = nullptr;
  CUfunction spin_grid = nullptr;
  CUfunction empty = nullptr;
  CUfunction count = nullptr;
};

namespace gs {
namespace {

// Call runs one driver call with the kit's context current and turns its
// outcome into a status.
template <typename F>
gs_status Call(gs_kit* kit, gs_error* err, const char* op, F f) {
  if (!kit) return SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "%s: kit is NULL", op);
  ContextScope scope;
  CUresult r = scope.Enter(kit->d, kit->ctx);
  if (r == CUDA_SUCCESS) r = f();
  if (r != CUDA_SUCCESS) return SetError(err, GS_ERR_DRIVER, r, "%s", op);
  if (err) *err = gs_error{};
  return GS_OK;
}

}  // namespace
}  // namespace gs

extern "C" {

gs_status gs_kit_create(int32_t device, gs_kit** out, gs_error* err) {
  if (!out) return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_kit_create: out is NULL");
  *out = nullptr;
  gs_status st = gs_driver_load(err);
  if (st != GS_OK) return st;
  std::unique_ptr<gs_kit> kit(new (std::nothrow) gs_kit);
  if (!kit) return gs::SetError(err, GS_ERR_NO_MEMORY, 0, "gs_kit_create: no memory");
  kit->d = gs::LoadedDriver();
#define GS_KIT_RESOLVE(field, name)                                                          \
  kit->k.field = reinterpret_cast<PFN_##field>(gs::Symbol(name));                            \
  if (!kit->k.field) {                                                                       \
    return gs::SetError(err, GS_ERR_MISSING_SYMBOL, 0, "gs_kit_create: driver lacks %s", name); \
  }
  GS_KIT_SYMBOLS(GS_KIT_RESOLVE)
#undef GS_KIT_RESOLVE
  const gs::Driver* d = kit->d;
  CUresult r = d->cuDeviceGet(&kit->dev, device);
  if (r != CUDA_SUCCESS) return gs::SetError(err, GS_ERR_DRIVER, r, "cuDeviceGet(%d)", device);
  r = d->cuDevicePrimaryCtxRetain(&kit->ctx, kit->dev);
  if (r != CUDA_SUCCESS) {
    return gs::SetError(err, GS_ERR_DRIVER, r, "cuDevicePrimaryCtxRetain(device %d)", device);
  }
  gs::ContextScope scope;
  r = scope.Enter(d, kit->ctx);
  const char* op = "cuCtxPushCurrent";
  if (r == CUDA_SUCCESS) {
    op = "cuModuleLoadData (kit PTX)";
    r = kit->k.cuModuleLoadData(&kit->module, gs::kPtx);
  }
  if (r == CUDA_SUCCESS) {
    op = "cuModuleGetFunction(gs_spin)";
    r = kit->k.cuModuleGetFunction(&kit->spin, kit->module, "gs_spin");
  }
  if (r == CUDA_SUCCESS) {
    op = "cuModuleGetFunction(gs_spin_grid)";
    r = kit->k.cuModuleGetFunction(&kit->spin_grid, kit->module, "gs_spin_grid");
  }
  if (r == CUDA_SUCCESS) {
    op = "cuModuleGetFunction(gs_empty)";
    r = kit->k.cuModuleGetFunction(&kit->empty, kit->module, "gs_empty");
  }
  if (r == CUDA_SUCCESS) {
    op = "cuModuleGetFunction(gs_count)";
    r = kit->k.cuModuleGetFunction(&kit->count, kit->module, "gs_count");
  }
  if (r != CUDA_SUCCESS) {
    if (kit->module) kit->k.cuModuleUnload(kit->module);
    d->cuDevicePrimaryCtxRelease(kit->dev);
    return gs::SetError(err, GS_ERR_DRIVER, r, "%s", op);
  }
  if (err) *err = gs_error{};
  *out = kit.release();
  return GS_OK;
}

gs_status gs_kit_destroy(gs_kit* kit, gs_error* err) {
  if (!kit) return GS_OK;
  gs_status st = gs::Call(kit, err, "cuModuleUnload", [&] { return kit->k.cuModuleUnload(kit->module); });
  CUresult r = kit->d->cuDevicePrimaryCtxRelease(kit->dev);
  delete kit;
  if (st == GS_OK && r != CUDA_SUCCESS) {
    return gs::SetError(err, GS_ERR_DRIVER, r, "cuDevicePrimaryCtxRelease");
  }
  return st;
}

gs_status gs_kit_stream_create(gs_kit* kit, uint64_t* stream, gs_error* err) {
  return gs::Call(kit, err, "cuStreamCreate", [&] {
    CUstream s = nullptr;
    CUresult r = kit->d->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    *stream = gs::Value(s);
    return r;
  });
}

gs_status gs_kit_stream_destroy(gs_kit* kit, uint64_t stream, gs_error* err) {
  return gs::Call(kit, err, "cuStreamDestroy",
                  [&] { return kit->d->cuStreamDestroy(gs::Handle<CUstream_st>(stream)); });
}

gs_status gs_kit_spin(gs_kit* kit, uint64_t stream, uint64_t ns, uint64_t timer, gs_error* err) {
  return gs::Call(kit, err, "cuLaunchKernel(gs_spin)", [&] {
    void* params[] = {&ns, &timer};
    return kit->k.cuLaunchKernel(kit->spin, 1, 1, 1, 1, 1, 1, 0, gs::Handle<CUstream_st>(stream),
                                 params, nullptr);
  });
}

gs_status gs_kit_spin_grid(gs_kit* kit, uint64_t stream, uint64_t ns, uint32_t ctas, uint64_t out,
                            gs_error* err) {
  if (ctas == 0 || out == 0) {
    return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_kit_spin_grid: need ctas > 0 and out");
  }
  return gs::Call(kit, err, "cuLaunchKernel(gs_spin_grid)", [&] {
    void* params[] = {&ns, &out};
    return kit->k.cuLaunchKernel(kit->spin_grid, ctas, 1, 1, 1, 1, 1, 0, gs::Handle<CUstream_st>(stream),
                                 params, nullptr);
  });
}

gs_status gs_kit_empty(gs_kit* kit, uint64_t stream, gs_error* err) {
  return gs::Call(kit, err, "cuLaunchKernel(gs_empty)", [&] {
    return kit->k.cuLaunchKernel(kit->empty, 1, 1, 1, 1, 1, 1, 0, gs::Handle<CUstream_st>(stream),
                                 nullptr, nullptr);
  });
}

gs_status gs_kit_count(gs_kit* kit, uint64_t stream, uint64_t counter, gs_error* err) {
  if (counter == 0) return gs::SetError(err, GS_ERR_INVALID_ARGUMENT, 0, "gs_kit_count: counter is 0");
  return gs::Call(kit, err, "cuLaunchKernel(gs_count)", [&] {
    void* params[] = {&counter};
    return kit->k.cuLaunchKernel(kit->count, 1, 1, 1, 1, 1, 1, 0, gs::Handle<CUstream_st>(stream), params,
                                 nullptr);
  });
}

gs_status gs_kit_alloc(gs_kit* kit, size_t bytes, uint64_t* dptr, gs_error* err) {
  return gs::Call(kit, err, "cuMemAlloc", [&] {
    CUdeviceptr p = 0;
    CUresult r = kit->k.cuMemAlloc(&p, bytes);
    if (r == CUDA_SUCCESS) r = kit->k.cuMemsetD8(p, 0, bytes);
    if (r != CUDA_SUCCESS && p) kit->k.cuMemFree(p);
    *dptr = r == CUDA_SUCCESS ? p : 0;
    return r;
  });
}

gs_status gs_kit_read(gs_kit* kit, uint64_t dptr, void* host, size_t bytes, gs_error* err) {
  return gs::Call(kit, err, "cuMemcpyDtoH", [&] { return kit->k.cuMemcpyDtoH(host, dptr, bytes); });
}

gs_status gs_kit_free(gs_kit* kit, uint64_t dptr, gs_error* err) {
  return gs::Call(kit, err, "cuMemFree", [&] { return kit->k.cuMemFree(dptr); });
}

gs_status gs_kit_sync(gs_kit* kit, uint64_t stream, gs_error* err) {
  return gs::Call(kit, err, "cuStreamSynchronize",
                  [&] { return kit->k.cuStreamSynchronize(gs::Handle<CUstream_st>(stream)); });
}

gs_status gs_kit_capture_begin(gs_kit* kit, uint64_t stream, int32_t mode, gs_error* err) {
  return gs::Call(kit, err, "cuStreamBeginCapture", [&] {
    return kit->k.cuStreamBeginCapture(gs::Handle<CUstream_st>(stream),
                                       static_cast<CUstreamCaptureMode>(mode));
  });
}

gs_status gs_kit_capture_end(gs_kit* kit, uint64_t stream, uint64_t* graph, gs_error* err) {
  return gs::Call(kit, err, "cuStreamEndCapture", [&] {
    CUgraph g = nullptr;
    CUresult r = kit->k.cuStreamEndCapture(gs::Handle<CUstream_st>(stream), &g);
    *graph = gs::Value(g);
    return r;
  });
}

gs_status gs_kit_graph_instantiate(gs_kit* kit, uint64_t graph, uint64_t* exec, gs_error* err) {
  return gs::Call(kit, err, "cuGraphInstantiateWithFlags", [&] {
    CUgraphExec e = nullptr;
    CUresult r = kit->k.cuGraphInstantiateWithFlags(&e, gs::Handle<CUgraph_st>(graph), 0);
    *exec = gs::Value(e);
    return r;
  });
}

gs_status gs_kit_graph_launch(gs_kit* kit, uint64_t exec, uint64_t stream, gs_error* err) {
  return gs::Call(kit, err, "cuGraphLaunch", [&] {
    return kit->k.cuGraphLaunch(gs::Handle<CUgraphExec_st>(exec), gs::Handle<CUstream_st>(stream));
  });
}

gs_status gs_kit_graph_destroy(gs_kit* kit, uint64_t graph, gs_error* err) {
  return gs::Call(kit, err, "cuGraphDestroy",
                  [&] { return kit->k.cuGraphDestroy(gs::Handle<CUgraph_st>(graph)); });
}

gs_status gs_kit_graph_exec_destroy(gs_kit* kit, uint64_t exec, gs_error* err) {
  return gs::Call(kit, err, "cuGraphExecDestroy",
                  [&] { return kit->k.cuGraphExecDestroy(gs::Handle<CUgraphExec_st>(exec)); });
}

}  // extern "C"

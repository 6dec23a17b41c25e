// Internal: how the kernel tracer reaches a CUPTI library, so that tests can
// hand it the fake. Not a public header.
#ifndef GPUSPANS_CUDA_SRC_CUPTI_LOADER_H_
#define GPUSPANS_CUDA_SRC_CUPTI_LOADER_H_

namespace gs {

// dlopen/dlsym along the search order of gs_tracer_open for the real
// library, the fake's own table in tests.
struct CuptiLoader {
  void* (*open)(const char* path);  // library handle or null; path null: search
  void* (*symbol)(void* handle, const char* name);
  const char* (*last_error)();  // why open failed
};

// SetCuptiLoaderForTesting makes later gs_tracer_open and
// gs_tracer_window_open calls use loader (null: the real libcupti). Same
// rules as SetLoaderForTesting.
void SetCuptiLoaderForTesting(const CuptiLoader* loader);

// ResetTracerForTesting forgets what the process's CUPTI went through (the
// windows and detaches counted, an attachment made permanent), as a fresh
// fake CUPTI stands for a fresh process. The tracer must be closed.
void ResetTracerForTesting();

}  // namespace gs

#endif  // GPUSPANS_CUDA_SRC_CUPTI_LOADER_H_

// Internal: turning CUPTI's kernel names into labels. Not a public header.
#ifndef GPUSPANS_CUDA_SRC_KERNEL_NAME_H_
#define GPUSPANS_CUDA_SRC_KERNEL_NAME_H_

#include <stddef.h>

#include <string>

namespace gs {

// kMaxLabelBytes bounds a label (gs_tracer_name); kMaxFullNameBytes a full
// name (gs_tracer_full_name).
constexpr size_t kMaxLabelBytes = 127;
constexpr size_t kMaxFullNameBytes = 4095;

// FullKernelName is the demangled name (the mangled one where it does not
// demangle), control bytes as '?', cut at kMaxFullNameBytes.
std::string FullKernelName(const char* mangled);

// KernelLabel turns a full name into a label: no return type, no parameter
// list, at most kMaxLabelBytes bytes. A label that had to be cut ends in
// "...#" and 8 hex digits of a hash of the whole full name, so kernels whose
// names agree up to the cut keep labels of their own.
std::string KernelLabel(const std::string& full);

}  // namespace gs

#endif  // GPUSPANS_CUDA_SRC_KERNEL_NAME_H_

// Table test of kernel labels (src/kernel_name.cc): what CUPTI's demangled
// names become, as torch's kernels spell them. The last line reads
// "N passed, N failed".
#include <stdio.h>

#include <set>
#include <string>

#include "../src/kernel_name.h"
#include "check.h"

int main() {
  struct Case {
    const char* full;
    const char* label;
  } cases[] = {
      {"decode", "decode"},
      {"void decode(float*, int)", "decode"},
      {"void f<int (*)(int)>(int, float) const", "f<int (*)(int)>"},
      {"void (anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*)",
       "(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"},
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*)",
       "at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>"},
      {"triton_poi_fused_add_0", "triton_poi_fused_add_0"},
      {"with\x01" "control", "with?control"},
      {"", "?"},
  };
  int passed = 0, failed = 0;
  for (const Case& c : cases) {
    int before = g_failures;
    std::string got = gs::KernelLabel(c.full);
    if (got != c.label) fprintf(stderr, "KernelLabel(%s) = %s, want %s\n", c.full, got.c_str(), c.label);
    CHECK(got == c.label);
    (g_failures == before ? passed : failed)++;
  }
  // torch's elementwise kernels agree for far more than a label's bytes:
  // cut labels stay distinct, readable, and within the bound.
  int before = g_failures;
  std::string common = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::";
  common += std::string(60, 'x');
  std::set<std::string> labels;
  for (const char* tail : {"AddFunctor<float>>(int)", "MulFunctor<float>>(int)", "AddFunctor<c10::Half>>(int)"}) {
    std::string l = gs::KernelLabel(common + tail);
    CHECK_EQ(l.size(), 127);
    CHECK(l.compare(0, 16, "at::native::elem") == 0);
    CHECK(l.compare(115, 4, "...#") == 0);
    labels.insert(l);
  }
  CHECK_EQ(labels.size(), 3);
  CHECK(gs::KernelLabel(common + "AddFunctor<float>>(int)") == gs::KernelLabel(common + "AddFunctor<float>>(int)"));
  // A cut never splits a UTF-8 sequence.
  std::string wide;
  for (int i = 0; i < 100; i++) wide += "\xc3\xa9";
  std::string l = gs::KernelLabel(wide);
  CHECK(l.size() <= 127);
  CHECK_EQ(l.find("...#"), 114);  // 57 whole characters before the cut
  CHECK(gs::FullKernelName("_Z6decodePfi") == "decode(float*, int)");
  CHECK(gs::FullKernelName(nullptr) == "?");
  CHECK_EQ(gs::FullKernelName(std::string(5000, 'z').c_str()).size(), 4095);
  (g_failures == before ? passed : failed)++;
  printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

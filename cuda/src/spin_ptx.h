// Internal: the %globaltimer spin in PTX, written once for the pool's
// calibration kernel (calibration.cc) and the GPU kit's kernels
// (kit.cc), so that the spin the calibration measures is the spin the
// GPU tests and benchmarks time. Not a public header.
#ifndef GPUSPANS_CUDA_SRC_SPIN_PTX_H_
#define GPUSPANS_CUDA_SRC_SPIN_PTX_H_

// GS_PTX_MODULE_HEAD opens every module: PTX ISA 7.0 for sm_70, so the
// driver JIT accepts it on any GPU since Volta.
#define GS_PTX_MODULE_HEAD \
  "\n"                     \
  ".version 7.0\n"         \
  ".target sm_70\n"        \
  ".address_size 64\n"

// GS_PTX_SPIN(label, ns, first, until, last, pred) is the body lines of a
// spin: read %globaltimer into the .b64 register first, then read it into
// last until it has advanced by the .b64 register ns. until (.b64) and pred
// (.pred) are scratch; label (e.g. "$L_spin") is the loop's, unique within
// its kernel. Each argument is a string literal; the caller declares the
// registers.
#define GS_PTX_SPIN(label, ns, first, until, last, pred)  \
  "    mov.u64 " first ", %globaltimer;\n"                 \
  "    add.u64 " until ", " first ", " ns ";\n"            \
  label ":\n"                                              \
  "    mov.u64 " last ", %globaltimer;\n"                  \
  "    setp.lt.u64 " pred ", " last ", " until ";\n"       \
  "    @" pred " bra " label ";\n"

#endif  // GPUSPANS_CUDA_SRC_SPIN_PTX_H_

// dst[view] = value. The host converts the value to the element's bits exactly as the CPU does,
// so the kernel only stores bits: ELEM_BYTES 1, 2, 4 or 8 of them, the low word in lo and, for
// 8, the high word in hi. Bindings: 0 dst (strided).
#include "include/common.cuh"

#define N_INPUTS 0
#define OUT_STRIDED 1
#define PARAMS_EXTRA WICK_PARAMS_FILL_EXTRA
#include "include/strided.cuh"

#if ELEM_BYTES == 1
typedef uint8_t Bits;
#elif ELEM_BYTES == 2
typedef uint16_t Bits;
#elif ELEM_BYTES == 4
typedef uint32_t Bits;
#elif ELEM_BYTES == 8
typedef uint64_t Bits;
#else
#error "fill.cu needs ELEM_BYTES 1, 2, 4 or 8"
#endif

extern "C" __global__ void wick_main(const __grid_constant__ wick::KernelArgs args) {
  wick_kernel_begin();
  const Push& pc = PARAMS(Push, args);
  const uint32_t i = global_index();
  if (i >= pc.numel) return;
  uint32_t off[N_STRIDED];
  strided_offsets(pc, i, off);
  buffer_at<Bits>(args, 0)[off[0]] =
      static_cast<Bits>((static_cast<uint64_t>(pc.hi) << 32) | pc.lo);
}

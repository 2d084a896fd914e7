#version 450
// dst[view] = value. The host converts the value to the element's bits exactly as the CPU does,
// so the kernel only stores bits: ELEM_BYTES 1, 2, 4 store one word of that size, 8 two 32-bit
// words (no 64-bit types needed).
#include "include/common.glsl"

#define N_INPUTS 0
#define OUT_STRIDED 1
#define PUSH_EXTRA WICK_PARAMS_FILL_EXTRA(WICK_FIELD, WICK_ARRAY)
#include "include/strided.glsl"

#if ELEM_BYTES == 1
layout(set = 0, binding = 0) writeonly buffer Dst { uint8_t y[]; };
#elif ELEM_BYTES == 2
layout(set = 0, binding = 0) writeonly buffer Dst { uint16_t y[]; };
#else
layout(set = 0, binding = 0) writeonly buffer Dst { uint y[]; };
#endif

void main() {
  const uint i = global_index();
  if (i >= pc.numel) return;
  uint off[N_STRIDED];
  strided_offsets(i, off);
#if ELEM_BYTES == 1
  y[off[0]] = uint8_t(pc.lo);
#elif ELEM_BYTES == 2
  y[off[0]] = uint16_t(pc.lo);
#elif ELEM_BYTES == 4
  y[off[0]] = pc.lo;
#else
  y[2u * off[0]] = pc.lo;
  y[2u * off[0] + 1u] = pc.hi;
#endif
}

// Warp-wide integer matrix products on the tensor cores (mma.sync, sm_80 and later).
#pragma once

#include "include/common.cuh"

// c (16 x 8, s32) += a (16 x 16, s8, row-major) * b (16 x 8, s8, column-major). With g = lane / 4
// and t = lane % 4: a[0] holds a's row g, columns 4t .. 4t+3 (one byte each, little-endian), a[1]
// row g + 8; b holds b's column g, rows 4t .. 4t+3; c[0], c[1] are c's row g, columns 2t and
// 2t + 1, c[2], c[3] row g + 8.
WICK_DEV void mma_m16n8k16_s8(int (&c)[4], const uint32_t (&a)[2], uint32_t b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
      "{%0, %1, %2, %3};"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(b));
}

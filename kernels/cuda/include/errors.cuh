// The op's error record, bound after a kernel's own buffers: kernels record what the CPU would
// refuse (an out-of-range index, an integer division by zero) here instead of faulting or
// touching memory outside a tensor; the host reads it after its next wait and raises the error.
// Four words {code, a low, a high, b} (kernels/shared/params.h lists the codes and what a and b
// are); the first error wins: the code is claimed by compare-and-swap, then the rest written.
#pragma once

#include "include/common.cuh"

WICK_DEV void report_error(uint32_t* err, uint32_t code, uint64_t a, uint32_t b) {
  if (atomicCAS(err, 0u, code) == 0u) {
    err[1] = static_cast<uint32_t>(a);
    err[2] = static_cast<uint32_t>(a >> 32);
    err[3] = b;
  }
}

// Index values of any index dtype (u8 and u32 load as uint32_t, i64 as int64_t) checked against
// [0, size), and reported as the 64-bit value they hold (a negative i64 as two's complement).
WICK_DEV bool index_ok(uint32_t id, uint32_t size) {
  return id < size;
}
WICK_DEV bool index_ok(int64_t id, uint32_t size) {
  return id >= 0 && id < static_cast<int64_t>(size);
}
WICK_DEV void report_index(uint32_t* err, uint32_t code, uint32_t id, uint32_t size) {
  report_error(err, code, id, size);
}
WICK_DEV void report_index(uint32_t* err, uint32_t code, int64_t id, uint32_t size) {
  report_error(err, code, static_cast<uint64_t>(id), size);
}

// The op's error record, bound after a kernel's own buffers (define ERROR_BINDING first).
// Kernels record what the CPU would refuse (an out-of-range index, an integer division by zero)
// here instead of faulting or touching memory outside a tensor; the thread that recorded the op
// reads it once the op's submission finished and raises the error. Four words {code, a low,
// a high, b} (kernels/shared/params.h lists the codes and what a and b are); the first error
// wins: the code is claimed by compare-and-swap, then the rest written.
layout(set = 0, binding = ERROR_BINDING) buffer Errors { uint err[]; };

void report_error(uint op, uint a_lo, uint a_hi, uint b) {
  if (atomicCompSwap(err[0], 0u, op) == 0u) {
    err[1] = a_lo;
    err[2] = a_hi;
    err[3] = b;
  }
}

#ifdef ID_DT_KIND
// Index values of any index dtype (u8, u32, i64) checked against [0, size), and reported as the
// 64-bit value they hold (a negative i64 as two's complement).
#if ID_DT_KIND == 3
bool index_ok(int64_t id, uint size) { return id >= 0l && id < int64_t(size); }
void report_index(uint op, int64_t id, uint size) {
  report_error(op, uint(id & 0xffffffffl), uint((id >> 32) & 0xffffffffl), size);
}
#else
bool index_ok(uint id, uint size) { return id < size; }
void report_index(uint op, uint id, uint size) { report_error(op, id, 0u, size); }
#endif
#endif

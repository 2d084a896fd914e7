// The device's error words, bound after a kernel's own buffers (define ERROR_BINDING first).
// Kernels record what the CPU would refuse (an out-of-range index, an integer division by zero)
// here instead of faulting or touching memory outside a tensor; the host reads the words after
// its next wait and raises OutOfRange. The first error wins: {op code, a, b} (vk_indexing.cpp
// says what a and b are for each code).
layout(set = 0, binding = ERROR_BINDING) buffer Errors { uint err[]; };

void report_error(uint op, uint a, uint b) {
  if (atomicCompSwap(err[0], 0u, op) == 0u) {
    err[1] = a;
    err[2] = b;
  }
}

#ifdef ID_DT_KIND
void report_index(uint op, int index, uint size) { report_error(op, uint(index), size); }

// Index values of any index dtype (u8, u32, i64) as a checked position in [0, size).
#if ID_DT_KIND == 3
bool index_ok(int64_t id, uint size) { return id >= 0l && id < int64_t(size); }
int index_int(int64_t id) { return int(clamp(id, -2147483648l, 2147483647l)); }
#else
bool index_ok(uint id, uint size) { return id < size; }
int index_int(uint id) { return int(min(id, 2147483647u)); }
#endif
#endif

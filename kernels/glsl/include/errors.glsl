// The device's error words, bound after a kernel's own buffers (define ERROR_BINDING first).
// Index kernels record an out-of-range index here instead of touching memory outside the
// tensor; the host reads the words after its next wait and raises OutOfRange. The first error
// wins: {op code, index (as a 32-bit int), dim size, 0}.
layout(set = 0, binding = ERROR_BINDING) buffer Errors { uint err[]; };

void report_index(uint op, int index, uint size) {
  if (atomicCompSwap(err[0], 0u, op) == 0u) {
    err[1] = uint(index);
    err[2] = size;
  }
}

// Index values of any index dtype (u8, u32, i64) as a checked position in [0, size).
#if ID_DT_KIND == 3
bool index_ok(int64_t id, uint size) { return id >= 0l && id < int64_t(size); }
int index_int(int64_t id) { return int(clamp(id, -2147483648l, 2147483647l)); }
#else
bool index_ok(uint id, uint size) { return id < size; }
int index_int(uint id) { return int(min(id, 2147483647u)); }
#endif

// Included first by every CUDA kernel: the launch ABI, indexing, and the parameter blocks of
// shared/params.h as CUDA structs.
//
// The ABI (src/cuda/cu_driver.cpp launches it): every kernel is
//   extern "C" __global__ void wick_main(const __grid_constant__ wick::KernelArgs args)
// args.buffers[i] is binding i (the device address of the whole allocation, in the order the host
// binds them, as in the GLSL kernels) and args.params holds the kernel's parameter block. A
// kernel's specialization constants (GLSL's constant_id i) arrive as the defines WICK_SPEC_i;
// WG_SIZE is the block size the host launches with (blockDim.x; the grid is 2-D like Vulkan's).
#pragma once

#include "shared/params.h"

typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
typedef int int32_t;

#ifndef WG_SIZE
#define WG_SIZE 256
#endif

namespace wick {

struct KernelArgs {
  void* buffers[WICK_MAX_BINDINGS];
  alignas(8) uint32_t params[WICK_MAX_PARAM_BYTES / 4];
};

}  // namespace wick

typedef uint32_t wick_u32;
// A kernel with op parameters defines PARAM_T (float or double) before including this file.
#ifdef PARAM_T
typedef PARAM_T wick_param_t;
#endif

#define WICK_DEV __device__ __forceinline__

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#define WICK_CU_FIELD(t, n) t n;
#define WICK_CU_ARRAY(t, n, c) t n[c];

// The kernel's parameter block: `WICK_PARAMS_STRUCT(Push, WICK_PARAMS_ROWS(WICK_CU_FIELD,
// WICK_CU_ARRAY))` declares the struct and PARAMS(Push, args) reads it.
#define WICK_PARAMS_STRUCT(name, fields) \
  struct name {                          \
    fields                               \
  };
#define PARAMS(T, args) (*reinterpret_cast<const T*>((args).params))

// Programmatic dependent launch (sm_90 on): the host lets a kernel start while the previous one
// in the stream is still running, so its blocks are resident when that one ends instead of
// launching then (decode is hundreds of microsecond-long kernels in a row; the launch gaps were a
// third of a token's time). Every wick kernel calls this first: it waits until the previous grid
// has finished and its writes are visible, then lets the next kernel's blocks be scheduled. The
// marker symbol tells the host that this module's kernels do (cu_driver.cpp: a kernel that did not
// could read its input before it is written, so only marked modules are launched this way).
extern "C" __device__ int wick_waits_for_previous_grid = 1;

WICK_DEV void wick_kernel_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// Asks L2 for bytes [p, p + bytes) ahead of use. A hint that returns no data, so a kernel may
// issue it before wick_kernel_begin() while the previous kernel still runs (writes land in L2,
// the one cache every SM shares): constant inputs such as weights then arrive during the previous
// kernel instead of after it. Call it with every thread of the block.
WICK_DEV void prefetch_l2(const void* p, uint64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (uint64_t o = uint64_t(threadIdx.x) * 128u; o < bytes; o += uint64_t(WG_SIZE) * 128u)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(c + o));
}

// Buffer i of the dispatch as an array of T.
template <typename T>
WICK_DEV T* buffer_at(const wick::KernelArgs& args, int i) {
  return static_cast<T*>(args.buffers[i]);
}

// The linear index of this thread in the host's 2-D grid of WG_SIZE-thread blocks.
// Indices from 2^32 - 1 on (the last row of a 2-D grid can reach them) come out as 2^32 - 1,
// which no element count exceeds, rather than wrapping onto elements another thread owns.
WICK_DEV uint32_t global_index() {
  const uint64_t i =
      (static_cast<uint64_t>(blockIdx.y) * gridDim.x + blockIdx.x) * WG_SIZE + threadIdx.x;
  return i < 0xffffffffull ? static_cast<uint32_t>(i) : 0xffffffffu;
}
// The block's linear index in that grid (kernels with a block per output).
WICK_DEV uint32_t group_index() {
  return blockIdx.x + blockIdx.y * gridDim.x;
}

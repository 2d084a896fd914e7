// Rows split over blocks (attention's key splits, reduce.cu's SPLIT_ROWS): each block leaves its
// part of a row in memory, and the row's last block to finish merges the parts. A u32 counter per
// row (GpuDevice::split_counters: zero between ops) finds that block, which also resets it, so
// every op leaves the counters as it found them and a captured step replays with them.
#pragma once

#include "include/common.cuh"

// One part of the row of `counter` counted, by one thread of the block that wrote it (after a
// fence and the block's barrier); true for the row's last part, whose block resets the counter.
WICK_DEV bool count_part(uint32_t* counter, uint32_t parts) {
  const bool last = atomicAdd(counter, 1u) == parts - 1u;
  if (last) atomicExch(counter, 0u);
  return last;
}

// Every thread of a block calls it once its part of the row is written; true in the row's last
// block. That block reads the other blocks' parts through L2 (__ldcg): they were never in its L1.
WICK_DEV bool last_of_row(uint32_t* counter, uint32_t parts) {
  __shared__ bool s_last;
  __threadfence();  // this thread's part before the block's count
  __syncthreads();
  if (threadIdx.x == 0u) s_last = count_part(counter, parts);
  __syncthreads();
  if (s_last) __threadfence();
  return s_last;
}

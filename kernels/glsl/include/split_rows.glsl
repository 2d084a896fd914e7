// Rows split over workgroups (attention's key splits, reduce.comp's SPLIT_ROWS; the twin of
// split_rows.cuh): each workgroup leaves its part of a row in memory, and the row's last
// workgroup to finish merges the parts. A u32 counter per row (GpuDevice::split_counters: zero
// between ops) finds that workgroup, which also resets it, so every op leaves the counters as it
// found them and a captured step replays with them. Define SPLIT_COUNTERS_BINDING first; the
// parts' buffers must be coherent.
layout(set = 0, binding = SPLIT_COUNTERS_BINDING) coherent buffer SplitCounters {
  uint split_counters[];
};
shared bool s_last_of_row;

// One part of the row whose counter is split_counters[at] counted, by one invocation of the
// workgroup that wrote it (after a memory barrier and the workgroup's barrier); true for the
// row's last part, whose workgroup resets the counter.
bool count_part(uint at, uint parts) {
  const bool last = atomicAdd(split_counters[at], 1u) == parts - 1u;
  if (last) atomicExchange(split_counters[at], 0u);
  return last;
}

// Every invocation of a workgroup calls it once its part of row `row` is written; true in the
// row's last workgroup.
bool last_of_row(uint row, uint parts) {
  memoryBarrierBuffer();  // this invocation's part before the workgroup's count
  barrier();
  if (gl_LocalInvocationID.x == 0u) s_last_of_row = count_part(row, parts);
  barrier();
  memoryBarrierBuffer();
  return s_last_of_row;
}

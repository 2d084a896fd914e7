// The row statistics of norm.comp, shared with the kernels that normalise a row on the way to
// something else (qact.comp's rms_norm prologue), so that both compute them with the same
// operations in the same order, hence the same bits: a workgroup of WG_SIZE invocations per row,
// invocation t taking elements t, t + WG_SIZE, ..., then a tree over shared memory.
// The includer defines CT (the compute type) and `CT at(uint base, uint j)` (element j of the row
// whose first element is at base) before including this file.

shared CT s_red[WG_SIZE];

// Sum (or max) of v over the workgroup; every invocation gets the result.
CT group_reduce(CT v, bool take_max) {
  const uint t = gl_LocalInvocationID.x;
  s_red[t] = v;
  barrier();
  for (uint step = WG_SIZE / 2u; step > 0u; step >>= 1) {
    if (t < step) s_red[t] = take_max ? max(s_red[t], s_red[t + step]) : s_red[t] + s_red[t + step];
    barrier();
  }
  const CT r = s_red[0];
  barrier();
  return r;
}

// 1 / sqrt(mean of (x - mean)^2 over the row's n elements + eps). Every invocation calls it.
CT row_inv_rms(uint base, uint n, CT mean, CT eps) {
  CT ss = CT(0);
  for (uint j = gl_LocalInvocationID.x; j < n; j += WG_SIZE) {
    const CT v = at(base, j) - mean;
    ss += v * v;
  }
  return inversesqrt(group_reduce(ss, false) / CT(n) + eps);
}

// Element x of the row normalised and scaled by alpha's a (layer_norm then adds beta's).
CT row_normalized(CT x, CT mean, CT inv, CT a) { return (x - mean) * inv * a; }

// The parameter blocks of kernels/shared/params.h as C++ structs: the same field lists the CUDA
// kernels (structs) and the GLSL kernels (std430 push constants) are declared from, so the host
// fills fields by name. The strided and row blocks, whose array sizes depend on the kernel, are
// written field by field in that order by launch_strided / launch_rows (gpu_launch.cpp,
// gpu_reduce.cpp).
#pragma once

#include <cstdint>
#include <span>

#include "gpu/driver.h"
#include "shared/params.h"

namespace wick::gpu {

using wick_u32 = uint32_t;
#define WICK_CXX_FIELD(t, n) t n;
#define WICK_CXX_ARRAY(t, n, c) t n[c];

struct BatchParams {
  WICK_PARAMS_BATCH(WICK_CXX_FIELD, WICK_CXX_ARRAY)
};
struct RopeParams {
  WICK_PARAMS_ROPE(WICK_CXX_FIELD, WICK_CXX_ARRAY)
};
struct RopeKvParams {
  WICK_PARAMS_ROPE_KV(WICK_CXX_FIELD, WICK_CXX_ARRAY)
};
struct AttentionParams {
  WICK_PARAMS_ATTENTION(WICK_CXX_FIELD, WICK_CXX_ARRAY)
};
template <typename wick_param_t>  // float or double, as the kernel's PARAM_T
struct RandParams {
  WICK_PARAMS_RAND(WICK_CXX_FIELD, WICK_CXX_ARRAY)
};
struct QActParams {
  WICK_PARAMS_QACT(WICK_CXX_FIELD, WICK_CXX_ARRAY)
};
template <typename wick_param_t>  // float: the prologues run on f32/f16/bf16 x only
struct QActPrologueParams {
  WICK_PARAMS_QACT_PROLOGUE(WICK_CXX_FIELD, WICK_CXX_ARRAY)
};
struct QMatMulParams {
  WICK_PARAMS_QMATMUL(WICK_CXX_FIELD, WICK_CXX_ARRAY)
};
template <typename wick_param_t>  // float, as QActPrologueParams
struct QMatVecActParams {
  WICK_PARAMS_QMATVEC_ACT(WICK_CXX_FIELD, WICK_CXX_ARRAY)
};
template <typename wick_param_t>  // float, as QActPrologueParams
struct QMatVecRopeParams {
  WICK_PARAMS_QMATVEC_ROPE(WICK_CXX_FIELD, WICK_CXX_ARRAY)
};

#undef WICK_CXX_FIELD
#undef WICK_CXX_ARRAY

static_assert(sizeof(BatchParams) == 20 * 4 && sizeof(BatchParams) <= kMaxPushConstantBytes);
static_assert(sizeof(RopeParams) == 18 * 4);
static_assert(sizeof(RopeKvParams) == 32 * 4 && sizeof(RopeKvParams) <= kMaxPushConstantBytes);
static_assert(sizeof(AttentionParams) == 22 * 4);
static_assert(sizeof(RandParams<float>) == 8 * 4 && sizeof(RandParams<double>) == 10 * 4);
static_assert(sizeof(QActParams) == 7 * 4 && sizeof(QMatMulParams) == 10 * 4);
static_assert(sizeof(QActPrologueParams<float>) == 11 * 4);
static_assert(sizeof(QMatVecActParams<float>) == 15 * 4);
static_assert(sizeof(QMatVecRopeParams<float>) == 31 * 4);

// A block as the words a dispatch carries.
template <typename P>
std::span<const uint32_t> param_words(const P& p) {
  static_assert(sizeof(P) % 4 == 0 && sizeof(P) <= kMaxPushConstantBytes);
  return {reinterpret_cast<const uint32_t*>(&p), sizeof(P) / 4};
}

}  // namespace wick::gpu

#version 450
#extension GL_EXT_control_flow_attributes : require
// Decode's feed-forward block of one x row in one dispatch (QMatMul::forward_swiglu_ffn):
//   y = residual + down(q8(silu(gate) * up)), [gate | up] = gate_up(q8(rms_norm(x) * alpha))
// (the residual where RESIDUAL is defined)
// for weights in a 32-element block format (QTYPE, both matrices of one type). Workgroup b owns
// block b of h (ACT_BLOCK = 32 elements): its 32 gate rows and 32 up rows, and block b of every
// row of down, so h never leaves the workgroup:
//   1. its weights (the 64 gate/up rows, then down's blocks) are loaded into registers first, so
//      their latency overlaps the prologue; the gate/up rows go to shared memory after it.
//   2. prologue: x normalised as norm.comp does (include/norm_row.glsl, workgroups of its 256) and
//      quantized to 8 bits as qact.comp does (include/qact.glsl): qmatvec's x bits.
//   3. the 64 dot products, four invocations a row (the CPU's integer sums per run of 8, as
//      qmatvec's ACT_Q8 loop), then h = silu(gate) * up as qmatvec's SWIGLU_Q8 stores it and
//      its 8-bit block as qact would quantize it.
//   4. down's rows times this block of h: a partial sum per output row, into `partials`.
//   5. the last workgroup to finish (include/split_rows.glsl's counter) adds the partials of
//      every block in block order and the residual: the same bits whichever finishes last.
// Bindings: 0 gate_up's blocks, 1 down's, 2 x, 3 alpha, 4 residual (x again without one), 5
// partials (h_len / 32 rows of n_out, f32), 6 y (n_out, f32), 7 the split counter (one).
#ifdef WICK_INT_DOT  // the integer sums four bytes at a time (include/quant.glsl's dot8)
#extension GL_EXT_spirv_intrinsics : require
#endif
#define QFFN 1
#include "include/common.glsl"
#include "include/dtype.glsl"
#if WG_SIZE != 256
#error "qffn: the prologue is norm.comp's workgroup of 256"
#endif
#define PROLOGUE 1
#define ACT_SERIAL 1
#define H_BLOCK 32u  // h per workgroup: one 8-bit block (ACT_BLOCK)
#define GU_ROWS (2u * H_BLOCK)
#define LANES_PER_ROW (WG_SIZE / GU_ROWS)  // invocations per gate/up row

// The staged weights, two 16-bit words to a shared word: the gate/up rows (GU_ROW_BYTES each),
// then, in the same place, down's blocks (BLOCK_BYTES each, one per output row).
shared uint s_w[W_WORDS];
#define QUANT_HALF(i) ((s_w[(i) >> 1] >> (((i)&1u) * 16u)) & 0xffffu)
#define ACT_Q8 1  // quant.glsl's integer decoders
#define QUANT_BINDING 0
#include "include/quant.glsl"
#ifdef QUANT_K
#error "qffn: 32-element block formats only"
#endif
layout(set = 0, binding = 1) readonly buffer DownBlocks { uint16_t wd[]; };
layout(set = 0, binding = 2) readonly buffer X { STORAGE_T(DT) x[]; };
layout(set = 0, binding = 3) readonly buffer P { STORAGE_T(DT) p[]; };  // alpha
#ifdef RESIDUAL
layout(set = 0, binding = 4) readonly buffer R { float residual[]; };
#endif
layout(set = 0, binding = 5) coherent buffer Partials { float partials[]; };
layout(set = 0, binding = 5) coherent buffer Partials4 { vec4 partials4[]; };
layout(set = 0, binding = 6) writeonly buffer Y { float y[]; };
#define SPLIT_COUNTERS_BINDING 7
#include "include/split_rows.glsl"

// x's row after the prologue (ACT_K values), then h's block; their 8-bit words: x's (ROW_WORDS:
// qact's row of ACT_K), then h's block (8 words and its d, s).
shared float s_rows[ACT_K + H_BLOCK];
shared uint s_q[ROW_WORDS + H_BLOCK / 4u + 2u];
float staged_value(uint row, uint e) { return s_rows[row * ACT_K + e]; }
#define ACT_SERIAL_VALUE staged_value
#define ACT_OUT s_q
#include "include/qact_value.glsl"
uint act_row(uint row) { return 0u; }
CT g_inv;
CT act_inv(uint row) { return g_inv; }
#include "include/qact.glsl"
#include "include/math.glsl"

shared float s_part[WG_SIZE];

// 16-bit word h of the workgroup's gate/up rows (local row h / GU_ROW_HALVES: gate rows, then
// up rows) and of its down blocks (block b of row h / BLOCK_HALVES).
#define GU_ROW_HALVES (GU_ROW_BYTES / 2u)
#define BLOCK_HALVES (BLOCK_BYTES / 2u)
uint gu_half(uint h, uint b) {
  const uint r = h / GU_ROW_HALVES;
  if (r >= GU_ROWS) return 0u;
  const uint row = (r < H_BLOCK ? 0u : pc.h_len) + b * H_BLOCK + r % H_BLOCK;
  return uint(wq[row * (pc.gu_row_bytes >> 1) + h % GU_ROW_HALVES]);
}
uint down_half(uint h, uint b) {
  const uint n = h / BLOCK_HALVES;
  if (n >= pc.n_out) return 0u;
  return uint(wd[(n * pc.down_row_bytes + b * BLOCK_BYTES) / 2u + h % BLOCK_HALVES]);
}

// One run of 8 elements: the weights' 8 values at local byte `blk` + run j, times the 8-bit x
// words at `xw` (its block's d at xw_d, and s there + 1 for the formats with a min, added at the
// block's first run), as qmatvec's ACT_Q8 loop computes it.
float run_dot(uint blk, uint j, uint xw, uint xw_d) {
  float dw, mw;
  int sc, mn;
  const uvec2 words = uvec2(s_q[xw], s_q[xw + 1u]);
#ifdef WICK_INT_DOT
  uvec2 v;
  decode8_packed(blk, j, v, dw, mw, sc, mn);
  const int isum = dot8(v, words);
#else
  int v[8];
  decode8_int(blk, j, v, dw, mw, sc, mn);
  int isum = 0;
  for (uint i = 0u; i < 8u; i++)
    isum += v[i] * bitfieldExtract(int(i < 4u ? words.x : words.y), int(8u * (i & 3u)), 8);
#endif
  float s = dw * uintBitsToFloat(s_q[xw_d]) * float(isum);
#ifdef QUANT_MIN
  if (j % 32u == 0u) s += mw * uintBitsToFloat(s_q[xw_d + 1u]);
#endif
  return s;
}

void main() {
  const uint t = gl_LocalInvocationID.x, b = group_index();
  const uint blocks = pc.h_len / H_BLOCK;
  if (b >= blocks) return;  // uniform per workgroup

  // 1. The weights into registers.
  uint gu_pre[PRE_GU], down_pre[PRE_DOWN];
  [[unroll]] for (uint i = 0u; i < PRE_GU; i++) {
    const uint w = t + i * WG_SIZE;
    gu_pre[i] = gu_half(2u * w, b) | (gu_half(2u * w + 1u, b) << 16);
  }
  [[unroll]] for (uint i = 0u; i < PRE_DOWN; i++) {
    const uint w = t + i * WG_SIZE;
    down_pre[i] = down_half(2u * w, b) | (down_half(2u * w + 1u, b) << 16);
  }

  // 2. The prologue: x's row normalised (norm's bits) into s_rows, quantized into s_q.
  g_inv = row_inv_rms(pc.x_offset, ACT_K, CT(0), CT(pc.eps));
  for (uint e = t; e < ACT_K; e += WG_SIZE) s_rows[e] = act_value(0u, e);
  [[unroll]] for (uint i = 0u; i < PRE_GU; i++) {
    const uint w = t + i * WG_SIZE;
    if (w < W_WORDS) s_w[w] = gu_pre[i];
  }
  barrier();
  for (uint blk = t; blk < ACT_K / ACT_BLOCK; blk += WG_SIZE)
    quantize_act_block_serial(0u, blk, ACT_K, ROW_WORDS, pc.ties_away != 0u);
  barrier();

  // 3. The gate/up products, LANES_PER_ROW invocations a row over its runs in turn.
  const uint r = t / LANES_PER_ROW, lane = t % LANES_PER_ROW;
  float acc = 0.0;
  for (uint run = lane; run < ACT_K / 8u; run += LANES_PER_ROW) {
    const uint e = run * 8u;
    acc += run_dot(r * GU_ROW_BYTES + (e / QK) * BLOCK_BYTES, e % QK, e / 4u,
                   act_scale_word(ACT_K, e));
  }
  s_part[t] = acc;
  barrier();  // the partial sums; every gate/up row read from s_w
  if (t < H_BLOCK) {
    float g = 0.0, u = 0.0;
    for (uint l = 0u; l < LANES_PER_ROW; l++) {
      g += s_part[t * LANES_PER_ROW + l];
      u += s_part[(t + H_BLOCK) * LANES_PER_ROW + l];
    }
    s_rows[ACT_K + t] = silu_accurate(g) * u;
  }
  [[unroll]] for (uint i = 0u; i < PRE_DOWN; i++) {
    const uint w = t + i * WG_SIZE;
    if (w < W_WORDS) s_w[w] = down_pre[i];
  }
  barrier();
  if (t == 0u) quantize_act_block_serial(1u, 0u, H_BLOCK, ROW_WORDS, pc.ties_away != 0u);
  barrier();

  // 4. Down's rows times h's block: four runs each, in order.
  const uint hq = ROW_WORDS, hq_d = ROW_WORDS + H_BLOCK / 4u;
  for (uint n = t; n < pc.n_out; n += WG_SIZE) {
    float s = 0.0;
    [[unroll]] for (uint j = 0u; j < H_BLOCK; j += 8u)
      s += run_dot(n * BLOCK_BYTES, j, hq + j / 4u, hq_d);
    partials[b * pc.n_out + n] = s;
  }

  // 5. The last workgroup adds every block's partials (block order) and the residual.
  if (!last_of_row(0u, blocks)) return;
  for (uint q = t; q < pc.n_out / 4u; q += WG_SIZE) {
    vec4 res = vec4(0.0);
#ifdef RESIDUAL
    for (uint i = 0u; i < 4u; i++) res[i] = residual[pc.r_offset + (4u * q + i) * pc.r_col];
#endif
    vec4 s = vec4(0.0);
    uint blk = 0u;
    for (; blk + 8u <= blocks; blk += 8u) {  // eight loads in flight, then their sums in order
      vec4 v[8];
      [[unroll]] for (uint i = 0u; i < 8u; i++) v[i] = partials4[(blk + i) * (pc.n_out / 4u) + q];
      [[unroll]] for (uint i = 0u; i < 8u; i++) s += v[i];
    }
    for (; blk < blocks; blk++) s += partials4[blk * (pc.n_out / 4u) + q];
#ifdef RESIDUAL
    for (uint i = 0u; i < 4u; i++) y[4u * q + i] = res[i] + s[i];  // one rounding, as add's
#else
    for (uint i = 0u; i < 4u; i++) y[4u * q + i] = s[i];
#endif
  }
}

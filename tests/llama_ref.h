// Shared by the model tests (test_llama.cpp on GGUF files, test_hf_checkpoint.cpp on HF folders):
// a float64 llama-family transformer written from the architectures' definitions, not wick's code.
// Each test maps its files' tensors onto RefModel and supplies its rotary embedding.
#pragma once

#include <functional>
#include <vector>

#include "harness.h"

namespace wick::testing {

using Vec = std::vector<double>;

// y = W x for W (out, in) row-major.
Vec matvec(const Ref& w, const Vec& x);
Vec rms_norm(const Vec& x, const Ref& alpha, double eps);
Ref as_ref(const Vec& v);
double max_abs(const Vec& v);

// One rotary pair: the angle it turns and the magnitude its cos and sin take.
struct PairRotation {
  double angle, magnitude;
};
// Rotates each head's pairs by pair(i): (2i, 2i+1) (llama.cpp's llama files, their q/k rows
// permuted by the converter), or (i, i + d/2) when `halves` (HF's rotate_half; llama.cpp's NEOX).
void rotate_pairs(Vec& x, int64_t heads, int64_t d, bool halves,
                  const std::function<PairRotation(int64_t i)>& pair);

// One layer's weights, (out, in) matrices; the biases and post-norms stay empty where it has none.
struct RefLayer {
  Ref attn_norm, wq, wk, wv, wo, ffn_norm, wgate, wup, wdown;
  Ref q_bias, k_bias, v_bias;              // qwen2
  Ref post_attention_norm, post_ffw_norm;  // gemma2: RMSNorms before the residual adds
  int64_t window = 0;                      // > 0: attend to the last `window` positions only
};

struct RefModel {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  double rms_eps = 0;
  double embed_scale = 1;                      // gemma: sqrt(hidden)
  bool gelu = false;                           // gemma: GELU (tanh) gate, else SiLU
  double attn_softcap = 0, final_softcap = 0;  // gemma2: tanh soft-caps (0: none)
  Ref embed, output_norm, head;                // head: embed when tied
  std::vector<RefLayer> layers;
  // Rotates q or k (`heads` heads) of position `pos` in place.
  std::function<void(Vec& x, int64_t heads, int64_t pos)> rope;

  // Logits of every position of `ids`, run from position 0.
  std::vector<Vec> logits(const std::vector<uint32_t>& ids) const;
};

}  // namespace wick::testing

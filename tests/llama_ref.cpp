#include "llama_ref.h"

#include <algorithm>
#include <cmath>

namespace wick::testing {

Vec matvec(const Ref& w, const Vec& x) {
  const int64_t out = w.shape[0], in = w.shape[1];
  Vec y(static_cast<size_t>(out), 0.0);
  for (int64_t o = 0; o < out; o++) {
    double s = 0;
    for (int64_t i = 0; i < in; i++)
      s += w.v[static_cast<size_t>(o * in + i)] * x[static_cast<size_t>(i)];
    y[static_cast<size_t>(o)] = s;
  }
  return y;
}

Vec rms_norm(const Vec& x, const Ref& alpha, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); i++) y[i] = x[i] * r * alpha.v[i];
  return y;
}

Ref as_ref(const Vec& v) {
  return Ref{Shape{static_cast<int64_t>(v.size())}, v};
}

double max_abs(const Vec& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

void rotate_pairs(Vec& x, int64_t heads, int64_t d, bool halves,
                  const std::function<PairRotation(int64_t i)>& pair) {
  for (int64_t h = 0; h < heads; h++)
    for (int64_t i = 0; i < d / 2; i++) {
      const auto [a, mag] = pair(i);
      double& x0 = x[static_cast<size_t>(h * d + (halves ? i : 2 * i))];
      double& x1 = x[static_cast<size_t>(h * d + (halves ? i + d / 2 : 2 * i + 1))];
      const double r0 = mag * (x0 * std::cos(a) - x1 * std::sin(a)),
                   r1 = mag * (x0 * std::sin(a) + x1 * std::cos(a));
      x0 = r0;
      x1 = r1;
    }
}

namespace {

double softcap(double x, double cap) {
  return cap > 0 ? cap * std::tanh(x / cap) : x;
}

void add(Vec& y, const Ref& bias) {
  for (size_t i = 0; i < bias.v.size(); i++) y[i] += bias.v[i];
}

// Causal attention of position p over positions 0..p, each query head reading kv head hh / group.
Vec attend(const RefModel& m, const RefLayer& layer, const std::vector<Vec>& q,
           const std::vector<Vec>& k, const std::vector<Vec>& v, int64_t p) {
  const int64_t d = m.head_dim, g = m.heads / m.kv_heads;
  const auto at = [](auto& vec, int64_t i) -> auto& {
    return vec[static_cast<size_t>(i)];
  };
  Vec att(static_cast<size_t>(m.heads * d), 0.0);
  for (int64_t hh = 0; hh < m.heads; hh++) {
    const int64_t kv = hh / g;
    Vec s(static_cast<size_t>(p + 1));
    double mx = -INFINITY;
    for (int64_t j = 0; j <= p; j++) {
      double dot = 0;
      for (int64_t i = 0; i < d; i++) dot += at(at(q, p), hh * d + i) * at(at(k, j), kv * d + i);
      at(s, j) = softcap(dot / std::sqrt(static_cast<double>(d)), m.attn_softcap);
      if (layer.window > 0 && p - j >= layer.window) at(s, j) = -INFINITY;
      mx = std::max(mx, at(s, j));
    }
    double sum = 0;
    for (double& e : s) sum += e = std::exp(e - mx);
    for (int64_t j = 0; j <= p; j++)
      for (int64_t i = 0; i < d; i++)
        at(att, hh * d + i) += at(s, j) / sum * at(at(v, j), kv * d + i);
  }
  return att;
}

}  // namespace

std::vector<Vec> RefModel::logits(const std::vector<uint32_t>& ids) const {
  const int64_t hidden = embed.shape[1], t = static_cast<int64_t>(ids.size());
  std::vector<Vec> x;
  for (uint32_t id : ids) {
    x.emplace_back(embed.v.begin() + id * hidden, embed.v.begin() + (id + 1) * hidden);
    for (double& v : x.back()) v *= embed_scale;
  }
  const auto silu_of = [](double v) { return v / (1.0 + std::exp(-v)); };
  const auto gelu_tanh = [](double v) {
    return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
  };
  for (const RefLayer& layer : layers) {
    std::vector<Vec> q, k, v;
    for (int64_t p = 0; p < t; p++) {
      const Vec hn = rms_norm(x[static_cast<size_t>(p)], layer.attn_norm, rms_eps);
      q.push_back(matvec(layer.wq, hn));
      k.push_back(matvec(layer.wk, hn));
      v.push_back(matvec(layer.wv, hn));
      add(q.back(), layer.q_bias);
      add(k.back(), layer.k_bias);
      add(v.back(), layer.v_bias);
      rope(q.back(), heads, p);
      rope(k.back(), kv_heads, p);
    }
    for (int64_t p = 0; p < t; p++) {
      Vec o = matvec(layer.wo, attend(*this, layer, q, k, v, p));
      if (!layer.post_attention_norm.v.empty()) o = rms_norm(o, layer.post_attention_norm, rms_eps);
      Vec& xp = x[static_cast<size_t>(p)];
      for (size_t i = 0; i < xp.size(); i++) xp[i] += o[i];
      const Vec hn = rms_norm(xp, layer.ffn_norm, rms_eps);
      Vec gate = matvec(layer.wgate, hn);
      const Vec up = matvec(layer.wup, hn);
      for (size_t i = 0; i < gate.size(); i++)
        gate[i] = (gelu ? gelu_tanh(gate[i]) : silu_of(gate[i])) * up[i];
      Vec down = matvec(layer.wdown, gate);
      if (!layer.post_ffw_norm.v.empty()) down = rms_norm(down, layer.post_ffw_norm, rms_eps);
      for (size_t i = 0; i < xp.size(); i++) xp[i] += down[i];
    }
  }
  std::vector<Vec> out;
  for (const Vec& xp : x) {
    out.push_back(matvec(head, rms_norm(xp, output_norm, rms_eps)));
    for (double& y : out.back()) y = softcap(y, final_softcap);
  }
  return out;
}

}  // namespace wick::testing

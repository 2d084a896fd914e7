// Token sampling: greedy, temperature, top-k and top-p (nucleus), with a seeded generator.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "wick/llama.h"

namespace wick {

Sampler::Sampler(SamplingOptions opts) : opts_(opts), state_(opts.seed) {
  if (std::isnan(opts_.temperature))
    fail(ErrorKind::OutOfRange, "Sampler", "temperature is NaN (<= 0: greedy)");
  if (!(opts_.top_p > 0 && opts_.top_p <= 1))  // NaN too
    fail(ErrorKind::OutOfRange, "Sampler", "top_p must be in (0, 1], got ", opts_.top_p);
  if (opts_.top_k < 0)
    fail(ErrorKind::OutOfRange, "Sampler", "top_k must be >= 0, got ", opts_.top_k);
}

// splitmix64: small, fast, and the same sequence on every platform.
double Sampler::next_uniform() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

uint32_t Sampler::sample(const Tensor& logits) {
  if (logits.rank() != 1 || logits.numel() == 0)
    fail(ErrorKind::Shape, "Sampler::sample", "logits must be a non-empty vector, got ",
         logits.shape());
  // Greedy: the first maximum wins; on a GPU it is found there (4 bytes come back, not the
  // vocabulary).
  const bool greedy = opts_.temperature <= 0;
  if (greedy && !logits.device().is_cpu()) return logits.argmax(0).to_vec<uint32_t>()[0];
  const std::vector<float> l = logits.to_vec<float>();
  if (greedy) return static_cast<uint32_t>(std::max_element(l.begin(), l.end()) - l.begin());

  std::vector<uint32_t> idx(l.size());
  std::iota(idx.begin(), idx.end(), 0u);
  size_t keep = l.size();
  if (opts_.top_k > 0 && static_cast<size_t>(opts_.top_k) < keep)
    keep = static_cast<size_t>(opts_.top_k);
  // Candidates by decreasing logit (ties by index, so the result is deterministic).
  auto by_logit = [&](uint32_t a, uint32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); };
  std::partial_sort(idx.begin(), idx.begin() + static_cast<long>(keep), idx.end(), by_logit);
  idx.resize(keep);

  std::vector<double> p(keep);
  const double top = l[idx[0]];
  double sum = 0;
  for (size_t i = 0; i < keep; i++) sum += p[i] = std::exp((l[idx[i]] - top) / opts_.temperature);
  if (opts_.top_p < 1.0) {  // smallest prefix whose probability reaches top_p
    double acc = 0;
    size_t n = 0;
    while (n < keep && acc < opts_.top_p * sum) acc += p[n++];
    keep = std::max<size_t>(n, 1);
    sum = std::accumulate(p.begin(), p.begin() + static_cast<long>(keep), 0.0);
  }
  double r = next_uniform() * sum;
  for (size_t i = 0; i < keep; i++) {
    r -= p[i];
    if (r < 0) return idx[i];
  }
  return idx[keep - 1];
}

}  // namespace wick

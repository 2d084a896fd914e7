// Token sampling: logit bias, repetition, frequency and presence penalties, greedy, temperature,
// top-k, top-p (nucleus) and min-p, with a seeded generator; log-probabilities for servers.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "wick/llama.h"

namespace wick {

Sampler::Sampler(SamplingOptions opts) : opts_(opts), state_(opts.seed) {
  if (std::isnan(opts_.temperature))
    fail(ErrorKind::OutOfRange, "Sampler", "temperature is NaN (<= 0: greedy)");
  if (!(opts_.top_p > 0 && opts_.top_p <= 1))  // NaN too
    fail(ErrorKind::OutOfRange, "Sampler", "top_p must be in (0, 1], got ", opts_.top_p);
  if (opts_.top_k < 0)
    fail(ErrorKind::OutOfRange, "Sampler", "top_k must be >= 0, got ", opts_.top_k);
  if (!(opts_.min_p >= 0 && opts_.min_p <= 1))
    fail(ErrorKind::OutOfRange, "Sampler", "min_p must be in [0, 1], got ", opts_.min_p);
  if (!(opts_.repeat_penalty > 0 && std::isfinite(opts_.repeat_penalty)))
    fail(ErrorKind::OutOfRange, "Sampler", "repeat_penalty must be finite and > 0, got ",
         opts_.repeat_penalty);
  if (opts_.repeat_last_n < 0)
    fail(ErrorKind::OutOfRange, "Sampler", "repeat_last_n must be >= 0, got ", opts_.repeat_last_n);
  if (!std::isfinite(opts_.frequency_penalty))
    fail(ErrorKind::OutOfRange, "Sampler", "frequency_penalty must be finite, got ",
         opts_.frequency_penalty);
  if (!std::isfinite(opts_.presence_penalty))
    fail(ErrorKind::OutOfRange, "Sampler", "presence_penalty must be finite, got ",
         opts_.presence_penalty);
  std::unordered_set<uint32_t> biased;
  for (const auto& [token, bias] : opts_.logit_bias) {
    if (std::isnan(bias) || bias == INFINITY)
      fail(ErrorKind::OutOfRange, "Sampler", "logit_bias of token ", token,
           " must be finite or -inf, got ", bias);
    if (!biased.insert(token).second)
      fail(ErrorKind::OutOfRange, "Sampler", "logit_bias names token ", token, " twice");
  }
}

// splitmix64: small, fast, and the same sequence on every platform.
double Sampler::next_uniform() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

namespace {

bool has_penalty(const SamplingOptions& o) {
  return (o.repeat_penalty != 1.0 || o.frequency_penalty != 0 || o.presence_penalty != 0) &&
         o.repeat_last_n > 0;
}

// The ids of the n largest logits, by decreasing logit (ties by id, so the result is
// deterministic).
std::vector<uint32_t> most_likely(const std::vector<double>& l, size_t n) {
  std::vector<uint32_t> idx(l.size());
  std::iota(idx.begin(), idx.end(), 0u);
  n = std::min(n, l.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<long>(n), idx.end(),
                    [&](uint32_t a, uint32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
  idx.resize(n);
  return idx;
}

}  // namespace

bool Sampler::penalises() const {
  return has_penalty(opts_) && !recent_.empty();
}

void Sampler::accept(uint32_t token) {
  if (!has_penalty(opts_)) return;
  const size_t n = static_cast<size_t>(opts_.repeat_last_n);
  if (recent_.size() < n) {
    recent_.push_back(token);
    return;
  }
  recent_[next_] = token;
  next_ = (next_ + 1) % n;
}

std::vector<double> Sampler::adjusted(const std::vector<float>& logits, const char* op) const {
  std::vector<double> l(logits.begin(), logits.end());
  for (const auto& [t, bias] : opts_.logit_bias) {
    if (t >= l.size())
      fail(ErrorKind::OutOfRange, op, "logit_bias names token ", t, ", past the ", l.size(),
           " logits");
    l[t] += bias;
  }
  if (penalises()) {
    // The repetition penalty applies to each distinct recent token once, whatever its count
    // (llama.cpp's penalty_repeat); the frequency penalty counts them.
    std::unordered_map<uint32_t, int64_t> seen;
    for (const uint32_t t : recent_) seen[t]++;
    for (const auto& [t, count] : seen) {
      if (t >= l.size()) continue;
      if (opts_.repeat_penalty != 1.0)
        l[t] = l[t] <= 0 ? l[t] * opts_.repeat_penalty : l[t] / opts_.repeat_penalty;
      l[t] -= static_cast<double>(count) * opts_.frequency_penalty + opts_.presence_penalty;
    }
  }
  if (!opts_.logit_bias.empty() && *std::max_element(l.begin(), l.end()) == -INFINITY)
    fail(ErrorKind::OutOfRange, op, "logit_bias bans every token");
  return l;
}

std::vector<SamplingCandidate> Sampler::candidates(const std::vector<float>& logits) const {
  const std::vector<double> l = adjusted(logits, "Sampler::candidates");
  if (opts_.temperature <= 0) {
    const auto best = std::max_element(l.begin(), l.end()) - l.begin();
    return {{static_cast<uint32_t>(best), 1.0}};
  }
  size_t keep = l.size();
  if (opts_.top_k > 0 && static_cast<size_t>(opts_.top_k) < keep)
    keep = static_cast<size_t>(opts_.top_k);
  const std::vector<uint32_t> idx = most_likely(l, keep);

  std::vector<double> p(keep);
  const double top = l[idx[0]];
  double sum = 0;
  for (size_t i = 0; i < keep; i++) sum += p[i] = std::exp((l[idx[i]] - top) / opts_.temperature);
  if (opts_.top_p < 1.0) {  // smallest prefix whose probability reaches top_p
    double acc = 0;
    size_t n = 0;
    while (n < keep && acc < opts_.top_p * sum) acc += p[n++];
    keep = std::max<size_t>(n, 1);
  }
  if (opts_.min_p > 0) {  // p[0] is the largest, exp(0) = 1
    size_t n = 1;
    while (n < keep && p[n] >= opts_.min_p * p[0]) n++;
    keep = n;
  }
  // Banned tokens (a bias of -inf) are never drawn, even when top-k or top-p reach them.
  while (keep > 1 && p[keep - 1] == 0) keep--;
  sum = std::accumulate(p.begin(), p.begin() + static_cast<long>(keep), 0.0);
  std::vector<SamplingCandidate> out(keep);
  for (size_t i = 0; i < keep; i++) out[i] = {idx[i], p[i] / sum};
  return out;
}

std::vector<SamplingCandidate> Sampler::candidates(const Tensor& logits) const {
  if (logits.rank() != 1 || logits.numel() == 0)
    fail(ErrorKind::Shape, "Sampler::candidates", "logits must be a non-empty vector, got ",
         logits.shape());
  return candidates(logits.to_vec<float>());
}

TokenLogprobs Sampler::logprobs(const Tensor& logits, uint32_t token, int64_t top) const {
  const char* op = "Sampler::logprobs";
  if (logits.rank() != 1 || logits.numel() == 0)
    fail(ErrorKind::Shape, op, "logits must be a non-empty vector, got ", logits.shape());
  if (token >= static_cast<uint64_t>(logits.numel()))
    fail(ErrorKind::OutOfRange, op, "token ", token, " is past the ", logits.numel(), " logits");
  if (top < 0) fail(ErrorKind::OutOfRange, op, "top must be >= 0, got ", top);
  const std::vector<double> l = adjusted(logits.to_vec<float>(), op);
  const double most = *std::max_element(l.begin(), l.end());
  double z = 0;
  for (const double x : l) z += std::exp(x - most);
  const double log_z = most + std::log(z);
  TokenLogprobs out;
  out.logprob = l[token] - log_z;
  for (const uint32_t t : most_likely(l, static_cast<size_t>(top)))
    out.top.emplace_back(t, l[t] - log_z);
  return out;
}

bool Sampler::plain_greedy() const {
  return opts_.temperature <= 0 && !penalises() && opts_.logit_bias.empty();
}

uint32_t Sampler::sample(const Tensor& logits) {
  if (logits.rank() != 1 || logits.numel() == 0)
    fail(ErrorKind::Shape, "Sampler::sample", "logits must be a non-empty vector, got ",
         logits.shape());
  // Greedy without a penalty: the first maximum, found on the device (a GPU sends back 4 bytes,
  // not the vocabulary).
  if (plain_greedy() && !logits.device().is_cpu()) return logits.argmax(0).to_vec<uint32_t>()[0];
  const std::vector<SamplingCandidate> c = candidates(logits.to_vec<float>());
  if (opts_.temperature <= 0) return c[0].id;
  double r = next_uniform();
  for (const SamplingCandidate& x : c) {
    r -= x.p;
    if (r < 0) return x.id;
  }
  return c.back().id;
}

}  // namespace wick

// The sampler's steps (repetition penalty, top-k, temperature, top-p, min-p) against a float64
// reference written from their definitions, on random logits and random options.
#include <algorithm>
#include <cmath>
#include <set>

#include "gguf_bytes.h"
#include "harness.h"
#include "tiny_llama.h"
#include "wick/llama.h"

namespace wick::testing {
namespace {

// The distribution a sampler with `o` draws from after `history`, computed from the definitions:
// penalise each distinct token of the last repeat_last_n, sort by logit (ties by id), keep the top
// k, softmax at the temperature, keep the smallest prefix reaching top_p, drop tokens below min_p
// times the largest probability, renormalise.
std::vector<std::pair<uint32_t, double>> reference(std::vector<double> l, const SamplingOptions& o,
                                                   const std::vector<uint32_t>& history) {
  if (o.repeat_penalty != 1.0 && o.repeat_last_n > 0) {
    const size_t n = std::min(history.size(), static_cast<size_t>(o.repeat_last_n));
    const std::set<uint32_t> window(history.end() - static_cast<long>(n), history.end());
    for (const uint32_t t : window)
      if (t < l.size()) l[t] = l[t] > 0 ? l[t] / o.repeat_penalty : l[t] * o.repeat_penalty;
  }
  std::vector<uint32_t> order(l.size());
  for (size_t i = 0; i < l.size(); i++) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return l[a] > l[b]; });
  if (o.temperature <= 0) return {{order[0], 1.0}};
  if (o.top_k > 0 && static_cast<size_t>(o.top_k) < order.size())
    order.resize(static_cast<size_t>(o.top_k));
  std::vector<double> p;
  double z = 0;
  for (const uint32_t t : order) z += std::exp(l[t] / o.temperature);
  for (const uint32_t t : order) p.push_back(std::exp(l[t] / o.temperature) / z);
  size_t keep = order.size();
  if (o.top_p < 1) {
    double acc = 0;
    for (keep = 0; keep < order.size() && acc < o.top_p;) acc += p[keep++];
  }
  size_t above_min = 0;
  while (above_min < keep && p[above_min] >= o.min_p * p[0]) above_min++;
  keep = std::max<size_t>(1, std::min(keep, above_min));
  double kept = 0;
  for (size_t i = 0; i < keep; i++) kept += p[i];
  std::vector<std::pair<uint32_t, double>> out;
  for (size_t i = 0; i < keep; i++) out.emplace_back(order[i], p[i] / kept);
  return out;
}

TEST(Sampling, CandidatesMatchAFloat64Reference) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  for (int trial = 0; trial < 400; trial++) {
    const int64_t vocab = rng.integer(1, 300);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& x : logits) x = static_cast<float>(rng.uniform(-6, 6));
    // Some exact ties, which are broken by id.
    for (int i = 0; i < 3 && vocab > 1; i++)
      logits[static_cast<size_t>(rng.integer(0, vocab - 1))] = logits[0];
    SamplingOptions o;
    const double temps[] = {0, 0.3, 0.8, 1, 1.7};
    o.temperature = temps[rng.integer(0, 4)];
    o.top_k = std::vector<int64_t>{0, 1, 5, 40}[static_cast<size_t>(rng.integer(0, 3))];
    o.top_p = std::vector<double>{1, 0.95, 0.6, 0.1}[static_cast<size_t>(rng.integer(0, 3))];
    o.min_p = std::vector<double>{0, 0.02, 0.1, 0.5}[static_cast<size_t>(rng.integer(0, 3))];
    o.repeat_penalty =
        std::vector<double>{1, 1.1, 1.5, 0.7}[static_cast<size_t>(rng.integer(0, 3))];
    o.repeat_last_n = std::vector<int64_t>{0, 1, 8, 64}[static_cast<size_t>(rng.integer(0, 3))];
    Sampler s(o);
    std::vector<uint32_t> history(static_cast<size_t>(rng.integer(0, 100)));
    for (uint32_t& t : history) {
      t = static_cast<uint32_t>(rng.integer(0, vocab + 2));  // a few ids outside the vocabulary
      s.accept(t);
    }
    std::vector<double> l64(logits.begin(), logits.end());
    const auto want = reference(l64, o, history);
    const auto got = s.candidates(Tensor::from_vec(logits, {vocab}));
    SCOPED_TRACE("trial " + std::to_string(trial) + " vocab " + std::to_string(vocab) + " temp " +
                 std::to_string(o.temperature) + " top_k " + std::to_string(o.top_k) + " top_p " +
                 std::to_string(o.top_p) + " min_p " + std::to_string(o.min_p) + " penalty " +
                 std::to_string(o.repeat_penalty) + " last_n " + std::to_string(o.repeat_last_n));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) {
      EXPECT_EQ(got[i].id, want[i].first) << i;
      EXPECT_NEAR(got[i].p, want[i].second, 1e-12) << i;
    }
    if (o.temperature <= 0) {
      EXPECT_EQ(s.sample(Tensor::from_vec(logits, {vocab})), want[0].first);
    }
  }
}

// sample() draws from candidates(): frequencies within 5 sigma, nothing outside the set.
TEST(Sampling, DrawsFollowTheCandidates) {
  Rng rng;
  std::vector<float> logits(50);
  for (float& x : logits) x = static_cast<float>(rng.uniform(-2, 2));
  SamplingOptions o;
  o.temperature = 0.9;
  o.min_p = 0.3;
  o.repeat_penalty = 1.3;
  o.seed = 7;
  Sampler s(o);
  for (const uint32_t t : {3u, 9u, 3u, 27u}) s.accept(t);
  const Tensor l = Tensor::from_vec(logits, {50});
  const auto c = s.candidates(l);
  ASSERT_GT(c.size(), 1u);
  std::vector<int> count(50, 0);
  const int n = 20000;
  for (int i = 0; i < n; i++) count[s.sample(l)]++;
  std::vector<double> p(50, 0);
  for (const SamplingCandidate& x : c) p[x.id] = x.p;
  for (size_t i = 0; i < 50; i++) {
    if (p[i] == 0) {
      EXPECT_EQ(count[i], 0) << i;
    }
    EXPECT_NEAR(count[i] / double(n), p[i], 5 * std::sqrt(p[i] * (1 - p[i]) / n) + 1e-9) << i;
  }
}

// llama.cpp's semantics: positive logits divided, negative multiplied, each token of the window
// once however often it occurs, and only the last repeat_last_n tokens count.
TEST(Sampling, RepeatPenaltyWindowAndSign) {
  SamplingOptions o;
  o.repeat_penalty = 2.0;
  o.repeat_last_n = 2;
  const Tensor l = Tensor::from_vec(std::vector<float>{4.0f, 3.0f, -1.0f, -1.5f}, {4});
  Sampler s(o);
  EXPECT_EQ(s.sample(l), 0u);
  s.accept(0);
  s.accept(0);
  EXPECT_EQ(s.sample(l), 1u) << "4 / 2 = 2 < 3";
  s.accept(1);  // the window is now {0, 1}
  EXPECT_EQ(s.sample(l), 0u) << "2 > 1.5";
  s.accept(1);  // {1, 1}: token 0 left the window
  EXPECT_EQ(s.sample(l), 0u);
  Sampler neg(o);
  neg.accept(2);
  const Tensor m = Tensor::from_vec(std::vector<float>{-3.0f, -2.5f, -1.0f, -1.5f}, {4});
  EXPECT_EQ(neg.sample(m), 3u) << "-1 * 2 = -2 < -1.5";
  SamplingOptions bad;
  bad.min_p = 1.5;
  expect_error([&] { Sampler x(bad); }, ErrorKind::OutOfRange, {"min_p"});
  bad = {};
  bad.repeat_penalty = 0;
  expect_error([&] { Sampler x(bad); }, ErrorKind::OutOfRange, {"repeat_penalty"});
}

// generate() feeds the prompt to the penalty: its first token is the argmax of the prompt's
// logits with the prompt's tokens penalised.
TEST(Sampling, GeneratePenalisesThePrompt) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  TempDir dir;
  write_tiny_llama(dir.file("tiny.gguf"), rng);
  LlamaModel model = LlamaModel::load_gguf(dir.file("tiny.gguf"));
  const std::vector<uint32_t> prompt = {5, 6, 7, 5, 9};
  const std::vector<float> logits = model.forward(prompt).to_vec<float>();
  model.reset();
  // The penalty that makes the top token of the prompt lose: a huge one.
  std::vector<double> l(logits.begin(), logits.end());
  SamplingOptions o;
  o.repeat_penalty = 1e4;
  const auto want = reference(l, o, prompt);
  Sampler s(o);
  uint32_t got = 0;
  generate(model, prompt, 1, s, -1, [&](uint32_t t) {
    got = t;
    return true;
  });
  EXPECT_EQ(got, want[0].first);
  const auto plain = std::max_element(l.begin(), l.end()) - l.begin();
  if (std::find(prompt.begin(), prompt.end(), plain) != prompt.end() && logits[plain] > 0) {
    EXPECT_NE(got, static_cast<uint32_t>(plain));
  }
}

}  // namespace
}  // namespace wick::testing

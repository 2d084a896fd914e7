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
// The logits the steps start from: each bias added, then each distinct token of the last
// repeat_last_n divided (positive) or multiplied (not) by repeat_penalty and lowered by its count
// times frequency_penalty plus presence_penalty.
std::vector<double> reference_adjusted(std::vector<double> l, const SamplingOptions& o,
                                       const std::vector<uint32_t>& history) {
  for (const auto& [t, b] : o.logit_bias) l[t] += b;
  if (o.repeat_last_n > 0) {
    const size_t n = std::min(history.size(), static_cast<size_t>(o.repeat_last_n));
    const std::vector<uint32_t> window(history.end() - static_cast<long>(n), history.end());
    for (const uint32_t t : std::set<uint32_t>(window.begin(), window.end())) {
      if (t >= l.size()) continue;
      l[t] = l[t] > 0 ? l[t] / o.repeat_penalty : l[t] * o.repeat_penalty;
      const auto count = std::count(window.begin(), window.end(), t);
      l[t] -= static_cast<double>(count) * o.frequency_penalty + o.presence_penalty;
    }
  }
  return l;
}

std::vector<std::pair<uint32_t, double>> reference(std::vector<double> l, const SamplingOptions& o,
                                                   const std::vector<uint32_t>& history) {
  l = reference_adjusted(std::move(l), o, history);
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
  while (keep > 1 && p[keep - 1] == 0) keep--;  // banned tokens
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
    if (rng.integer(0, 1)) {
      o.frequency_penalty = rng.uniform(-2, 2);
      o.presence_penalty = rng.uniform(-2, 2);
    }
    for (int64_t t = 0; t < vocab; t++)  // a few biases, some bans
      if (rng.integer(0, 9) == 0)
        o.logit_bias.emplace_back(static_cast<uint32_t>(t),
                                  rng.integer(0, 3) ? rng.uniform(-5, 5) : -INFINITY);
    if (o.logit_bias.size() == static_cast<size_t>(vocab)) o.logit_bias.pop_back();
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
                 std::to_string(o.repeat_penalty) + " last_n " + std::to_string(o.repeat_last_n) +
                 " freq " + std::to_string(o.frequency_penalty) + " presence " +
                 std::to_string(o.presence_penalty) + " biases " +
                 std::to_string(o.logit_bias.size()));
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

// OpenAI's penalties: each occurrence in the window costs frequency_penalty, presence once;
// negative values favour the seen tokens.
TEST(Sampling, FrequencyAndPresencePenaltiesCountTheWindow) {
  const Tensor l = Tensor::from_vec(std::vector<float>{3.0f, 2.0f, 1.2f, 0.5f}, {4});
  SamplingOptions o;
  o.frequency_penalty = 0.5;
  o.repeat_last_n = 3;
  Sampler s(o);
  s.accept(0);
  EXPECT_FALSE(s.plain_greedy());
  EXPECT_EQ(s.sample(l), 0u) << "3 - 0.5 = 2.5 > 2";
  s.accept(0);
  s.accept(0);
  EXPECT_EQ(s.sample(l), 1u) << "3 - 1.5 = 1.5 < 2";
  s.accept(1);  // the window is {0, 0, 1}: 2, 1.5, 1.2, 0.5
  EXPECT_EQ(s.sample(l), 0u);
  SamplingOptions p;
  p.presence_penalty = 0.9;
  Sampler ps(p);
  ps.accept(0);
  EXPECT_EQ(ps.sample(l), 0u) << "3 - 0.9 = 2.1 > 2";
  for (int i = 0; i < 5; i++) ps.accept(0);
  EXPECT_EQ(ps.sample(l), 0u) << "presence counts a token once";
  SamplingOptions neg;
  neg.presence_penalty = -2.0;
  Sampler ns(neg);
  ns.accept(3);
  EXPECT_EQ(ns.sample(l), 0u) << "0.5 + 2 = 2.5 < 3";
  ns.accept(2);
  EXPECT_EQ(ns.sample(l), 2u) << "1.2 + 2 = 3.2 > 3";
  for (const char* name : {"frequency", "presence"}) {
    SamplingOptions bad;
    (name[0] == 'f' ? bad.frequency_penalty : bad.presence_penalty) = NAN;
    expect_error([&] { Sampler x(bad); }, ErrorKind::OutOfRange, {name});
  }
}

// logit_bias moves greedy picks too; -inf bans a token from every draw.
TEST(Sampling, LogitBiasAndBans) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  std::vector<float> logits(40);
  for (float& x : logits) x = static_cast<float>(rng.uniform(-3, 3));
  const Tensor l = Tensor::from_vec(logits, {40});
  const auto best =
      static_cast<uint32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  SamplingOptions o;
  o.logit_bias = {{best, -INFINITY}, {(best + 7) % 40, 100.0}};
  Sampler s(o);
  EXPECT_FALSE(s.plain_greedy());
  EXPECT_EQ(s.sample(l), (best + 7) % 40);
  // Sampled: the banned token never comes, even with top-k and top-p wide open.
  SamplingOptions t;
  t.temperature = 5;
  t.top_k = 40;
  t.logit_bias = {{best, -INFINITY}};
  Sampler ts(t);
  for (const SamplingCandidate& c : ts.candidates(l)) EXPECT_NE(c.id, best);
  for (int i = 0; i < 2000; i++) ASSERT_NE(ts.sample(l), best);
  // Errors: +inf and NaN, a token twice, a token past the logits, every token banned.
  SamplingOptions bad;
  bad.logit_bias = {{1, INFINITY}};
  expect_error([&] { Sampler x(bad); }, ErrorKind::OutOfRange, {"logit_bias", "token 1"});
  bad.logit_bias = {{1, NAN}};
  expect_error([&] { Sampler x(bad); }, ErrorKind::OutOfRange, {"logit_bias"});
  bad.logit_bias = {{2, 1.0}, {2, -1.0}};
  expect_error([&] { Sampler x(bad); }, ErrorKind::OutOfRange, {"token 2 twice"});
  bad.logit_bias = {{40, 1.0}};
  Sampler past(bad);
  expect_error([&] { past.sample(l); }, ErrorKind::OutOfRange, {"token 40", "40 logits"});
  SamplingOptions all;
  for (uint32_t i = 0; i < 40; i++) all.logit_bias.emplace_back(i, -INFINITY);
  Sampler banned(all);
  expect_error([&] { banned.sample(l); }, ErrorKind::OutOfRange, {"bans every token"});
}

// logprobs(): log-softmax at temperature 1 of the biased, penalised logits, whatever the
// temperature and truncation, against a float64 reference.
TEST(Sampling, LogprobsAreTheAdjustedLogSoftmax) {
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  for (int trial = 0; trial < 50; trial++) {
    const int64_t vocab = rng.integer(1, 200);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& x : logits) x = static_cast<float>(rng.uniform(-8, 8));
    if (vocab > 2) logits[1] = logits[0];  // a tie, broken by id
    SamplingOptions o;
    o.temperature = rng.uniform(0, 2);
    o.top_k = rng.integer(0, 5);
    o.repeat_penalty = rng.uniform(0.5, 2);
    o.frequency_penalty = rng.uniform(-1, 1);
    o.presence_penalty = rng.uniform(-1, 1);
    if (vocab > 3) o.logit_bias = {{2, rng.uniform(-4, 4)}, {3, -INFINITY}};
    Sampler s(o);
    std::vector<uint32_t> history(static_cast<size_t>(rng.integer(0, 30)));
    for (uint32_t& t : history) s.accept(t = static_cast<uint32_t>(rng.integer(0, vocab - 1)));
    const std::vector<double> l =
        reference_adjusted(std::vector<double>(logits.begin(), logits.end()), o, history);
    double z = 0;
    for (const double x : l) z += std::exp(x);
    const auto token = static_cast<uint32_t>(rng.integer(0, vocab - 1));
    const int64_t top = rng.integer(0, 8);
    const TokenLogprobs got = s.logprobs(Tensor::from_vec(logits, {vocab}), token, top);
    // Banned tokens: exactly -inf.
    const auto expect_logprob = [](double got, double want) {
      if (std::isinf(want)) {
        EXPECT_EQ(got, want);
      } else {
        EXPECT_NEAR(got, want, 1e-9 * (1 + std::abs(want)));
      }
    };
    expect_logprob(got.logprob, l[token] - std::log(z));
    std::vector<uint32_t> order(l.size());
    for (size_t i = 0; i < l.size(); i++) order[i] = static_cast<uint32_t>(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return l[a] > l[b]; });
    ASSERT_EQ(got.top.size(), std::min<size_t>(static_cast<size_t>(top), l.size()));
    for (size_t i = 0; i < got.top.size(); i++) {
      EXPECT_EQ(got.top[i].first, order[i]) << i;
      expect_logprob(got.top[i].second, l[order[i]] - std::log(z));
    }
  }
  Sampler s;
  const Tensor l = Tensor::from_vec(std::vector<float>{1, 2}, {2});
  expect_error([&] { s.logprobs(l, 2); }, ErrorKind::OutOfRange, {"token 2", "2 logits"});
  expect_error([&] { s.logprobs(l, 0, -1); }, ErrorKind::OutOfRange, {"top"});
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

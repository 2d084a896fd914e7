// LlamaModel end to end on tiny random models with block-quantized matrices: on every device the
// quantized weights load there (blocks uploaded once; the tied lm_head is a QMatMul on the
// device, the embedding dequantizes the rows it looks up) and give the CPU's logits.
#include <algorithm>
#include <cmath>

#include "gguf_bytes.h"
#include "quantized/kernels.h"
#include "tiny_llama.h"
#include "wick/config.h"
#include "wick/llama.h"

namespace wick::testing {
namespace {

class LlamaOnDevices : public DeviceTest {};

// The suite's tiny model: hidden 64, 4 heads over 2 kv heads (kv dim 32), ffn 96, every matrix
// and the embedding table in `type`.
TinyLlamaConfig tiny_config(QuantType type, bool tied = true) {
  TinyLlamaConfig cfg;
  cfg.hidden = 64;
  cfg.heads = 4;
  cfg.kv_heads = 2;
  cfg.ffn = 96;
  cfg.matrix_quant = cfg.embed_quant = type;
  cfg.tied_embeddings = tied;
  return cfg;
}

TEST_P(LlamaOnDevices, QuantizedWeightsRunOnTheDevice) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  // Both paths of QMatMul. f32 (gemm_min_rows() = 1: dequantized tiles + sgemm on the CPU, f32 x
  // on the GPU): the same products, so only f32 rounding separates the devices (measured < 1e-6 of
  // the logits' range). 8-bit x (the default; the GPU kernels quantize x as the CPU does): the
  // same products too, but the other ops' f32 differences (~1e-6) now and then move an activation
  // across a rounding boundary of its 8-bit quantization, which moves the logits by up to ~1% of
  // their range (measured: 2 of 150 comparisons above 1e-6, at 3e-3 and 9e-3), as two SIMD levels
  // of the CPU do to each other; the bound there only catches a wrong path.
  struct GemmRowsGuard {
    ~GemmRowsGuard() { quantized::set_gemm_min_rows(0); }
  } restore;
  for (const bool f32 : {false, true}) {
    SCOPED_TRACE(f32 ? "f32 x" : "8-bit x");
    quantized::set_gemm_min_rows(f32 ? 1 : 0);
    for (const auto& [type, tied] : {std::pair{QuantType::Q8_0, true}, {QuantType::Q4_1, false}}) {
      SCOPED_TRACE(quant_type_info(type)->name);
      const TinyLlamaConfig cfg = tiny_config(type, tied);
      TempDir dir;
      write_tiny_llama(dir.file("tiny.gguf"), rng, cfg);
      // f32 caches: an f16 cache would round the devices' slightly different k and v now and
      // then to neighbouring f16 values, which the f32 bound would take for a wrong path.
      const LlamaOptions opts{16, KvCacheType::F32};
      LlamaModel on_cpu = LlamaModel::load_gguf(dir.file("tiny.gguf"), Device::cpu(), opts);
      LlamaModel on_dev = LlamaModel::load_gguf(dir.file("tiny.gguf"), dev, opts);
      EXPECT_EQ(on_dev.device(), dev);
      // A prompt, then two decode steps.
      for (const std::vector<uint32_t>& tokens :
           {std::vector<uint32_t>{5, 9, 17, 3}, std::vector<uint32_t>{30},
            std::vector<uint32_t>{8}}) {
        const Tensor want = on_cpu.forward(tokens), got = on_dev.forward(tokens);
        ASSERT_EQ(got.device(), dev);
        ASSERT_EQ(got.shape(), (Shape{cfg.vocab}));
        const Ref ref = to_ref(want);
        double range = 0;
        for (double v : ref.v) range = std::max(range, std::fabs(v));
        WICK_EXPECT_CLOSE(got, ref, Tol{(f32 ? 1e-5 : 3e-2) * range, 0});
      }
    }
  }
}

// The replayed decode step (the first one-token forward runs op by op, the second captures the
// step, replayed with a new position after) gives, token by token, the logits of the same step
// recorded op by op: the same kernels on the same inputs, so bit for bit. Through a prompt, many
// positions, a reset (the step stays captured; positions come from its position tensor) and a
// second prompt.
TEST_P(LlamaOnDevices, ReplayedDecodeStepsMatchRecordedOnesTokenByToken) {
  const Device dev = device();
  if (!dev.can_capture()) GTEST_SKIP() << dev.name() << " runs ops as they come: no replay";
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const TinyLlamaConfig cfg = tiny_config(QuantType::Q8_0);
  TempDir dir;
  write_tiny_llama(dir.file("tiny.gguf"), rng, cfg);
  LlamaModel replayed = LlamaModel::load_gguf(dir.file("tiny.gguf"), dev, 40);
  LlamaModel recorded = LlamaModel::load_gguf(dir.file("tiny.gguf"), dev, 40);
  recorded.set_replay(false);
  ASSERT_TRUE(replayed.replays());
  ASSERT_FALSE(recorded.replays());
  for (int round = 0; round < 2; round++) {
    SCOPED_TRACE("round " + std::to_string(round));
    replayed.reset();
    recorded.reset();
    std::vector<uint32_t> prompt;
    for (int i = 0; i < 3 + round; i++)
      prompt.push_back(static_cast<uint32_t>(rng.integer(0, cfg.vocab - 1)));
    std::vector<uint32_t> tokens = prompt;
    for (int step = 0; step < 16; step++) {
      SCOPED_TRACE("position " + std::to_string(replayed.position()));
      const Tensor a = replayed.forward(tokens), b = recorded.forward(tokens);
      const std::vector<float> va = a.to_vec<float>(), vb = b.to_vec<float>();
      ASSERT_EQ(va.size(), static_cast<size_t>(cfg.vocab));
      for (size_t i = 0; i < va.size(); i++) ASSERT_EQ(va[i], vb[i]) << "logit " << i;
      // Greedy next token (the first maximum), fed back as the next one-token step.
      tokens = {static_cast<uint32_t>(std::max_element(va.begin(), va.end()) - va.begin())};
    }
  }
}

// decode_greedy against forward() + argmax, one token at a time with replay off, on the same
// device: the same tokens, then the same logits for a next token (the cache rows the chunks wrote
// are the ones the single steps wrote). Spans chunks and a rest of single steps; the second
// round replays the chunk the first captured (the first chunk runs op by op, the second
// captures). Both a tied Q8_0 table (the lm_head's blocks) and an untied Q4_1 one (uploaded).
TEST_P(LlamaOnDevices, DecodeGreedyGivesTheTokensOfForwardAndArgmax) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  for (const auto& [type, tied] : {std::pair{QuantType::Q8_0, true}, {QuantType::Q4_1, false}}) {
    SCOPED_TRACE(quant_type_info(type)->name);
    const TinyLlamaConfig cfg = tiny_config(type, tied);
    TempDir dir;
    write_tiny_llama(dir.file("tiny.gguf"), rng, cfg);
    LlamaModel chunked = LlamaModel::load_gguf(dir.file("tiny.gguf"), dev, 64);
    LlamaModel single = LlamaModel::load_gguf(dir.file("tiny.gguf"), dev, 64);
    single.set_replay(false);
    EXPECT_EQ(single.decode_chunk(), 1);
    EXPECT_EQ(chunked.decode_chunk(), dev.can_capture() ? knobs().decode_chunk : 1);
    for (int round = 0; round < 3; round++) {
      SCOPED_TRACE("round " + std::to_string(round));
      chunked.reset();
      single.reset();
      std::vector<uint32_t> prompt;
      for (int i = 0; i < 3 + round; i++)
        prompt.push_back(static_cast<uint32_t>(rng.integer(0, cfg.vocab - 1)));
      chunked.forward(prompt);
      uint32_t tok = single.forward(prompt).argmax(0).to_vec<uint32_t>()[0];
      const uint32_t first = tok;
      const int64_t n = 2 * chunked.decode_chunk() + 3 + round;
      std::vector<uint32_t> want;
      for (int64_t i = 0; i < n; i++) {
        tok = single.forward({tok}).argmax(0).to_vec<uint32_t>()[0];
        want.push_back(tok);
      }
      EXPECT_EQ(chunked.decode_greedy(first, n), want);
      ASSERT_EQ(chunked.position(), single.position());
      // Back to an earlier position, then on from there in both.
      const int64_t back = chunked.position() - 5 - round;
      chunked.truncate(back);
      single.truncate(back);
      ASSERT_EQ(chunked.position(), back);
      const uint32_t next = static_cast<uint32_t>(rng.integer(0, cfg.vocab - 1));
      const std::vector<float> a = chunked.forward({next}).to_vec<float>(),
                               b = single.forward({next}).to_vec<float>();
      for (size_t i = 0; i < a.size(); i++) ASSERT_EQ(a[i], b[i]) << "logit " << i;
    }
    // Another chunk length (set_decode_chunk drops the captured chunk): 3 steps, 10 tokens.
    chunked.set_decode_chunk(3);
    EXPECT_EQ(chunked.decode_chunk(), dev.can_capture() ? 3 : 1);
    chunked.reset();
    single.reset();
    chunked.forward({1, 2});
    const uint32_t start = single.forward({1, 2}).argmax(0).to_vec<uint32_t>()[0];
    std::vector<uint32_t> want3;
    for (uint32_t t = start; want3.size() < 10;) {
      t = single.forward({t}).argmax(0).to_vec<uint32_t>()[0];
      want3.push_back(t);
    }
    EXPECT_EQ(chunked.decode_greedy(start, 10), want3);
    expect_error([&] { chunked.set_decode_chunk(0); }, ErrorKind::OutOfRange,
                 {"LlamaModel::set_decode_chunk"});
    expect_error([&] { chunked.decode_greedy(static_cast<uint32_t>(cfg.vocab), 2); },
                 ErrorKind::OutOfRange, {"LlamaModel::decode_greedy", "vocab"});
    expect_error([&] { chunked.decode_greedy(1, 64); }, ErrorKind::OutOfRange,
                 {"LlamaModel::decode_greedy", "exceeds the cache of 64"});
    expect_error([&] { chunked.truncate(chunked.position() + 1); }, ErrorKind::OutOfRange,
                 {"LlamaModel::truncate"});
  }
}

// generate() with a greedy sampler (decode_greedy's chunks on GPUs that replay) stops where the
// token-by-token loop stops, at an end token inside a chunk, and leaves the cache where that
// loop leaves it: the next prompt gives the same logits.
TEST_P(LlamaOnDevices, GreedyGenerationStopsInsideAChunkWhereTokenByTokenStops) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const TinyLlamaConfig cfg = tiny_config(QuantType::Q8_0);
  TempDir dir;
  write_tiny_llama(dir.file("tiny.gguf"), rng, cfg);
  LlamaModel chunked = LlamaModel::load_gguf(dir.file("tiny.gguf"), dev, 64);
  LlamaModel single = LlamaModel::load_gguf(dir.file("tiny.gguf"), dev, 64);
  single.set_replay(false);
  const std::vector<uint32_t> prompt = {3, 1, 4, 1, 5};
  std::vector<uint32_t> all;
  Sampler greedy;
  generate(single, prompt, 30, greedy, -1, [&](uint32_t t) {
    all.push_back(t);
    return true;
  });
  ASSERT_EQ(all.size(), 30u);
  for (const size_t at : {size_t{1}, size_t{6}, size_t{11}, size_t{29}}) {
    SCOPED_TRACE("end token at " + std::to_string(at));
    const auto end = static_cast<int32_t>(all[at]);
    const size_t first =
        static_cast<size_t>(std::find(all.begin(), all.end(), all[at]) - all.begin());
    std::vector<uint32_t> got[2];
    LlamaModel* models[2] = {&chunked, &single};
    GenerationStats st[2];
    for (int i = 0; i < 2; i++) {
      models[i]->reset();
      Sampler s;
      st[i] = generate(*models[i], prompt, 30, s, end, [&](uint32_t t) {
        got[i].push_back(t);
        return true;
      });
    }
    EXPECT_EQ(got[0],
              std::vector<uint32_t>(all.begin(), all.begin() + static_cast<long>(first) + 1));
    EXPECT_EQ(got[0], got[1]);
    EXPECT_TRUE(st[0].stopped_at_eos);
    EXPECT_EQ(st[0].generated_tokens, st[1].generated_tokens);
    ASSERT_EQ(chunked.position(), single.position());
    const std::vector<float> a = chunked.forward({7, 2}).to_vec<float>(),
                             b = single.forward({7, 2}).to_vec<float>();
    for (size_t i = 0; i < a.size(); i++) ASSERT_EQ(a[i], b[i]) << "logit " << i;
  }
  // A callback that stops inside a chunk, then the end of the context.
  {
    chunked.reset();
    single.reset();
    int left = 9;
    const auto stop_after_9 = [&](uint32_t) { return --left > 0; };
    Sampler s0, s1;
    EXPECT_EQ(generate(chunked, prompt, 40, s0, -1, stop_after_9).generated_tokens, 9);
    left = 9;
    EXPECT_EQ(generate(single, prompt, 40, s1, -1, stop_after_9).generated_tokens, 9);
    EXPECT_EQ(chunked.position(), single.position());
  }
  chunked.reset();
  single.reset();
  Sampler s0, s1;
  const GenerationStats a = generate(chunked, prompt, 100, s0, -1, nullptr);
  const GenerationStats b = generate(single, prompt, 100, s1, -1, nullptr);
  EXPECT_TRUE(a.stopped_at_context_end);
  EXPECT_EQ(a.generated_tokens, b.generated_tokens);
  EXPECT_EQ(chunked.position(), single.position());
}

WICK_INSTANTIATE_DEVICES(LlamaOnDevices);

}  // namespace
}  // namespace wick::testing

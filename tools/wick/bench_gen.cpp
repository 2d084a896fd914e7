// `wick bench gen`: load time, prefill and decode tokens/s of a llama model. Without --model it
// uses the fetched SmolLM2-135M-Instruct when present, else a model of the same shape with random
// Q4_1 weights written by wick's own GGUF writer (throughput does not depend on the values).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "args.h"
#include "bench.h"
#include "generate.h"
#include "gpu/gpu_device.h"
#include "report.h"
#include "wick/gguf.h"
#include "wick/quantized.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

const char* kFetchedModel = "models/SmolLM2-135M-Instruct.Q4_1.gguf";
constexpr int64_t kSynthContext = 8192;  // SmolLM2's

struct SynthShape {
  int64_t vocab, hidden, ffn, layers, heads, kv_heads;
};

// SmolLM2-135M's shape; --quick: a small model of the same family.
SynthShape synth_shape(bool quick) {
  if (quick) return {4096, 256, 512, 2, 4, 2};
  return {49152, 576, 1536, 30, 9, 3};
}

void add_quantized(GgufWriter& w, const std::string& name, const Shape& shape, QuantType type,
                   uint64_t seed) {
  Device::cpu().set_seed(seed);
  const Tensor t = Tensor::randn(0.0, 0.05, shape, DType::F32);
  const QTensor q = quantize(t, type);
  w.add_raw_tensor(name, type, shape, {reinterpret_cast<const std::byte*>(q.data()), q.nbytes()});
}

// A vocabulary of `n` tokens that other runtimes accept: <|endoftext|> (id 0, control), the 256
// byte-level tokens of GPT-2's byte-to-unicode map, then filler tokens; no merges.
void set_byte_level_vocab(GgufWriter& w, int64_t n) {
  std::vector<std::string> tokens = {"<|endoftext|>"};
  int extra = 0;
  for (int b = 0; b < 256; b++) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    const int cp = printable ? b : 256 + extra++;
    std::string utf8;  // code points below 0x800: one or two bytes
    if (cp < 0x80) {
      utf8 = static_cast<char>(cp);
    } else {
      utf8 += static_cast<char>(0xc0 | (cp >> 6));
      utf8 += static_cast<char>(0x80 | (cp & 0x3f));
    }
    tokens.push_back(utf8);
  }
  while (static_cast<int64_t>(tokens.size()) < n)
    tokens.push_back("<t" + std::to_string(tokens.size()) + ">");
  std::vector<int32_t> types(tokens.size(), 1);
  types[0] = 3;
  w.set("tokenizer.ggml.model", std::string("gpt2"));
  w.set("tokenizer.ggml.pre", std::string("default"));
  w.set("tokenizer.ggml.tokens", GgufValue::array(tokens));
  w.set("tokenizer.ggml.token_type", GgufValue::array(types));
  w.set("tokenizer.ggml.merges", GgufValue::array(std::vector<std::string>{}));
  w.set("tokenizer.ggml.bos_token_id", uint32_t{0});
  w.set("tokenizer.ggml.eos_token_id", uint32_t{0});
}

// Writes a llama GGUF of `s` with random weights (Q4_1 matrices, Q8_0 tied embeddings, f32
// norms), as SmolLM2's file has them.
void write_synthetic_model(const std::string& path, const SynthShape& s) {
  GgufWriter w;
  w.set("general.architecture", "llama");
  w.set("general.name", "synthetic (random weights)");
  w.set("llama.block_count", static_cast<uint32_t>(s.layers));
  w.set("llama.context_length", static_cast<uint32_t>(kSynthContext));
  w.set("llama.embedding_length", static_cast<uint32_t>(s.hidden));
  w.set("llama.feed_forward_length", static_cast<uint32_t>(s.ffn));
  w.set("llama.attention.head_count", static_cast<uint32_t>(s.heads));
  w.set("llama.attention.head_count_kv", static_cast<uint32_t>(s.kv_heads));
  w.set("llama.rope.freq_base", 100000.0f);
  w.set("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  set_byte_level_vocab(w, s.vocab);
  const int64_t kv = s.kv_heads * (s.hidden / s.heads);
  uint64_t seed = 1;
  add_quantized(w, "token_embd.weight", {s.vocab, s.hidden}, QuantType::Q8_0, seed++);
  for (int64_t l = 0; l < s.layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    w.add_tensor(p + "attn_norm.weight", Tensor::ones({s.hidden}, DType::F32));
    w.add_tensor(p + "ffn_norm.weight", Tensor::ones({s.hidden}, DType::F32));
    add_quantized(w, p + "attn_q.weight", {s.hidden, s.hidden}, QuantType::Q4_1, seed++);
    add_quantized(w, p + "attn_k.weight", {kv, s.hidden}, QuantType::Q4_1, seed++);
    add_quantized(w, p + "attn_v.weight", {kv, s.hidden}, QuantType::Q4_1, seed++);
    add_quantized(w, p + "attn_output.weight", {s.hidden, s.hidden}, QuantType::Q4_1, seed++);
    add_quantized(w, p + "ffn_gate.weight", {s.ffn, s.hidden}, QuantType::Q4_1, seed++);
    add_quantized(w, p + "ffn_up.weight", {s.ffn, s.hidden}, QuantType::Q4_1, seed++);
    add_quantized(w, p + "ffn_down.weight", {s.hidden, s.ffn}, QuantType::Q4_1, seed++);
  }
  w.add_tensor("output_norm.weight", Tensor::ones({s.hidden}, DType::F32));
  w.write(path);
}

// Dispatches a GPU device submitted so far, replays' included (0 on the CPU).
uint64_t dispatch_count(const Device& dev) {
  const auto* g = dynamic_cast<const gpu::GpuDevice*>(&dev.backend());
  if (!g) return 0;
  const gpu::CommandQueue::Stats q = g->stats().queue;
  return q.dispatches + q.replayed_dispatches;
}

}  // namespace

bool bench_gen(const BenchContext& ctx) {
  if (!ctx.json) print_title(ctx, "gen");
  std::string path = ctx.model;
  std::string what = path;
  std::filesystem::path synth;
  if (!ctx.save_model.empty() && !path.empty())
    throw UsageError(
        "bench gen: --save-model writes the random-weight model; it does not go with --model");
  if (path.empty() && ctx.save_model.empty() && !ctx.quick &&
      std::filesystem::exists(kFetchedModel)) {
    path = what = kFetchedModel;
  } else if (path.empty()) {
    // Refused before the model is written (the loader would refuse it after).
    if (ctx.prompt_tokens + ctx.n_predict + 1 > kSynthContext)
      throw UsageError("--prompt-tokens " + std::to_string(ctx.prompt_tokens) + " + -n " +
                       std::to_string(ctx.n_predict) + " is more than the " +
                       std::to_string(kSynthContext) +
                       " tokens of the random-weight model's context (less one)");
    const SynthShape s = synth_shape(ctx.quick);
    synth = ctx.save_model.empty() ? std::filesystem::temp_directory_path() /
                                         ("wick-bench-gen-" + std::to_string(::getpid()) + ".gguf")
                                   : std::filesystem::path(ctx.save_model);
    const double ms = time_ms([&] { write_synthetic_model(synth.string(), s); });
    path = synth.string();
    what = std::string(ctx.quick ? "small" : "SmolLM2-135M-shaped") +
           " model with random weights (" + std::to_string(s.layers) + " layers, hidden " +
           std::to_string(s.hidden) + ", Q4_1 + Q8_0 tied embeddings; written in " + fixed(ms, 0) +
           " ms)";
  }
  struct Cleanup {
    std::filesystem::path p;
    ~Cleanup() {
      std::error_code ec;
      if (!p.empty()) std::filesystem::remove(p, ec);
    }
  } cleanup{ctx.save_model.empty() ? synth : std::filesystem::path()};

  const Device dev = ctx.device();
  const int64_t prompt_len = ctx.prompt_tokens, decode_len = ctx.n_predict;
  double load_s = 0;
  LlamaModel model = load_model_with_progress(
      path, dev, prompt_len + decode_len + 1,
      "--prompt-tokens " + std::to_string(prompt_len) + " + -n " + std::to_string(decode_len),
      &load_s, ctx.kv_type);
  const int64_t vocab = model.config().vocab_size;

  std::mt19937_64 gen(7);
  std::vector<uint32_t> prompt(static_cast<size_t>(prompt_len));
  for (uint32_t& t : prompt) t = static_cast<uint32_t>(gen() % static_cast<uint64_t>(vocab));

  // One run: prefill the prompt, then decode greedily (no stop token: fixed length).
  struct Run {
    double first_token_ms, prefill_tps, decode_tps, dispatches_per_token;
  };
  auto run_once = [&] {
    model.reset();
    Sampler greedy;
    uint64_t dispatches = 0;
    int64_t decoded = 0;
    // Dispatches of the decode steps only: counted from the first sampled token on.
    const uint64_t before = dispatch_count(dev);
    uint64_t at_first = before;
    const GenerationStats st = generate(model, prompt, decode_len, greedy, -1, [&](uint32_t) {
      if (decoded++ == 0) at_first = dispatch_count(dev);
      return true;
    });
    if (decoded > 1) dispatches = dispatch_count(dev) - at_first;
    return Run{
        st.prefill_seconds * 1e3, static_cast<double>(prompt_len) / st.prefill_seconds,
        static_cast<double>(st.generated_tokens - 1) / st.decode_seconds,
        decoded > 1 ? static_cast<double>(dispatches) / static_cast<double>(decoded - 1) : 0.0};
  };
  Table t({"device", "decode step", "load", "first token after load",
           "prefill " + std::to_string(prompt_len) + " tok/s",
           "decode tok/s (" + std::to_string(decode_len) + " tokens)", "dispatches per token",
           "first run: prefill / decode"});
  // The same figures for --json: one object per row, numbers unrounded.
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  // On devices that can capture: the replayed step (the default: greedy decoding replays chunks
  // of steps, LlamaModel::decode_chunk), then one step a submission where chunks run, then op by
  // op.
  struct Mode {
    bool replay;
    int64_t chunk;
  };
  const int64_t chunk = model.decode_chunk();
  std::vector<Mode> modes = {{model.replays(), chunk}};
  if (chunk > 1) modes.push_back({true, 1});
  if (model.replays()) modes.push_back({false, 1});
  const int runs = ctx.quick ? 1 : 5;
  for (const auto [replay, steps] : modes) {
    model.set_replay(replay);
    if (replay) model.set_decode_chunk(steps);
    const std::string label = !replay     ? "recorded op by op"
                              : steps > 1 ? "replayed, " + std::to_string(steps) + " a submission"
                                          : "replayed";
    // The first token of a single-token prompt right after loading: what a chat turn waits for
    // (with replay, the step is captured at the next one-token forward, after this token).
    const double first_token_ms = time_ms([&] {
      model.reset();
      Sampler greedy;
      generate(model, {prompt[0]}, 1, greedy, -1, nullptr);
    });
    const Run cold = run_once();
    std::vector<double> prefill, decode, dispatches;
    for (int i = 0; i < runs; i++) {
      const Run r = run_once();
      prefill.push_back(r.prefill_tps);
      decode.push_back(r.decode_tps);
      dispatches.push_back(r.dispatches_per_token);
    }
    t.add_row({dev.name(), label, fixed(load_s * 1e3, 1) + " ms", fixed(first_token_ms, 1) + " ms",
               fixed(median(prefill), 1), fixed(median(decode), 1),
               dev.is_cpu() ? "-" : fixed(median(dispatches), 1),
               fixed(cold.prefill_tps, 1) + " / " + fixed(cold.decode_tps, 1)});
    nlohmann::ordered_json row;
    row["device"] = dev.name();
    row["decode_step"] = replay ? "replayed" : "recorded";
    row["steps_per_submission"] = replay ? steps : 1;
    row["load_ms"] = load_s * 1e3;
    row["first_token_ms"] = first_token_ms;
    row["prefill_tokens_per_s"] = median(prefill);
    row["decode_tokens_per_s"] = median(decode);
    row["dispatches_per_token"] =
        dev.is_cpu() ? nlohmann::ordered_json() : nlohmann::ordered_json(median(dispatches));
    row["first_run_prefill_tokens_per_s"] = cold.prefill_tps;
    row["first_run_decode_tokens_per_s"] = cold.decode_tps;
    rows.push_back(std::move(row));
  }
  model.set_replay(true);
  model.set_decode_chunk(chunk);
  // After every run of one sequence: the peak covers loading, prefill and decode (not the
  // batched sequences' caches below).
  const ProcessMemory mem = process_memory();
  const auto mib = [](int64_t b) { return b < 0 ? std::string("?") : fixed(b / 1048576.0, 1); };

  // --batch: b sequences decoding together through forward_batch, as `wick serve` runs its
  // slots. Each run: every sequence's own prompt in one pass, then one-token passes of all b
  // whose greedy tokens come from one argmax on the device.
  Table bt({"device", "sequences", "ms per pass", "aggregate decode tok/s", "/ 1 sequence",
            "dispatches per pass"});
  nlohmann::ordered_json batched = nlohmann::ordered_json::array();
  if (ctx.batch > 0) {
    std::vector<int64_t> sizes = {1};
    for (int64_t b = 2; b < ctx.batch; b *= 2) sizes.push_back(b);
    sizes.push_back(ctx.batch);
    std::vector<std::vector<uint32_t>> prompts(static_cast<size_t>(ctx.batch));
    for (auto& p : prompts) {
      p.resize(static_cast<size_t>(prompt_len));
      for (uint32_t& t : p) t = static_cast<uint32_t>(gen() % static_cast<uint64_t>(vocab));
    }
    std::vector<LlamaSequence> seqs;
    const int64_t passes = decode_len - 1;
    double one_tps = 0;
    for (const int64_t b : sizes) {
      while (static_cast<int64_t>(seqs.size()) < b) seqs.push_back(model.new_sequence());
      std::vector<double> pass_ms, dispatches;
      for (int r = 0; r <= runs; r++) {  // run 0: kernels compiled, steps captured
        std::vector<LlamaModel::SequenceStep> steps;
        for (int64_t i = 0; i < b; i++) {
          seqs[static_cast<size_t>(i)].reset();
          steps.push_back({&seqs[static_cast<size_t>(i)], prompts[static_cast<size_t>(i)]});
        }
        std::vector<uint32_t> next = model.forward_batch(steps).argmax(1).to_vec<uint32_t>();
        const uint64_t d0 = dispatch_count(dev);
        const double ms = time_ms([&] {
          for (int64_t p = 0; p < passes; p++) {
            for (int64_t i = 0; i < b; i++)
              steps[static_cast<size_t>(i)].tokens = {next[static_cast<size_t>(i)]};
            next = model.forward_batch(steps).argmax(1).to_vec<uint32_t>();
          }
        });
        if (r == 0) continue;
        pass_ms.push_back(ms / static_cast<double>(passes));
        dispatches.push_back(static_cast<double>(dispatch_count(dev) - d0) /
                             static_cast<double>(passes));
      }
      const double ms = median(pass_ms), tps = static_cast<double>(b) * 1e3 / ms;
      if (b == 1) one_tps = tps;
      bt.add_row({dev.name(), std::to_string(b), fixed(ms, 3), fixed(tps, 1),
                  fixed(tps / one_tps, 2) + "x",
                  dev.is_cpu() ? "-" : fixed(median(dispatches), 1)});
      nlohmann::ordered_json row;
      row["sequences"] = b;
      row["pass_ms"] = ms;
      row["decode_tokens_per_s"] = tps;
      row["ratio_to_one_sequence"] = tps / one_tps;
      row["dispatches_per_pass"] =
          dev.is_cpu() ? nlohmann::ordered_json() : nlohmann::ordered_json(median(dispatches));
      batched.push_back(std::move(row));
    }
  }
  if (ctx.json) {
    const MachineFacts m = machine_facts();
    nlohmann::ordered_json j;
    j["benchmark"] = "gen";
    j["command"] = ctx.command;
    j["date"] = utc_now();
    j["machine"] = {{"cpu", m.cpu_model},
                    {"hardware_threads", m.hardware_threads},
                    {"cpu_threads", m.cpu_threads},
                    {"load_average", m.load_average}};
    j["model"] = what;
    j["prompt_tokens"] = prompt_len;
    j["decode_tokens"] = decode_len;
    j["runs"] = runs;
    j["kv_cache_type"] = kv_cache_type_name(model.kv_cache_type());
    j["kv_cache_bytes"] = model.kv_cache_bytes();
    j["context"] = model.max_seq();
    j["peak_rss_bytes"] = mem.peak_rss;
    j["rss_bytes"] = mem.rss;
    j["rows"] = std::move(rows);
    if (ctx.batch > 0) j["batched"] = std::move(batched);
    ctx.os() << j.dump(2) << "\n";
    return true;
  }
  ctx.os() << "model: " << what << "\n";
  ctx.os() << "memory: peak RSS " << mib(mem.peak_rss) << " MiB (VmHWM), RSS now " << mib(mem.rss)
           << " MiB; KV cache " << mib(model.kv_cache_bytes()) << " MiB ("
           << kv_cache_type_name(model.kv_cache_type()) << ", " << model.max_seq()
           << " positions)\n\n";
  t.print(ctx.os());
  ctx.os() << "\nMedians of " << runs
           << " runs after a first run (each run: reset the cache, prefill the "
           << "prompt of random token ids, decode greedily). Dispatches per token: the kernels "
           << "(and library calls) a decode step launches, a replay's included. \"N a "
           << "submission\": greedy tokens picked and fed back on the device, N steps replayed "
           << "between two host waits (LlamaModel::decode_greedy, WICK_DECODE_CHUNK).\n\n";
  if (ctx.batch > 0) {
    bt.print(ctx.os());
    ctx.os() << "\nSequences decoding together (LlamaModel::forward_batch, as wick serve's "
             << "slots): each run prefills every sequence's own prompt in one pass, then times "
             << decode_len - 1 << " one-token passes of all of them, greedy tokens from one "
             << "argmax on the device; medians of " << runs << " runs after a first.\n\n";
  }
  return true;
}

}  // namespace wick::cli

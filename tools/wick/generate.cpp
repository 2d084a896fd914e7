#include "generate.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "progress.h"
#include "report.h"
#include "stop_strings.h"
#include "wick/gguf.h"
#include "wick/wick.h"

namespace wick::cli {

LlamaModel load_model_with_progress(const std::string& path, const Device& dev, int64_t max_seq,
                                    const std::string& max_seq_flags, double* seconds,
                                    KvCacheType kv_type) {
  const auto t0 = Clock::now();
  ProgressLine bar(stderr, path, 250, ::isatty(::fileno(stderr)) != 0);
  try {
    LlamaOptions opts;
    opts.max_seq = max_seq;
    opts.kv_cache = kv_type;
    LlamaModel m = LlamaModel::load(path, dev, opts, [&](uint64_t done, uint64_t total) {
      bar.update(done, total, ms_since(t0));
    });
    bar.finish();
    if (seconds) *seconds = ms_since(t0) / 1e3;
    return m;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::OutOfRange) throw;
    throw UsageError(max_seq_flags + ": " + e.what());
  }
}

std::string ctx_flag_text(const Args& args) {
  return args.max_seq > 0 ? "--ctx " + std::to_string(args.max_seq)
                          : std::string("--ctx (default: the model's context, at most 4096)");
}

SamplingOptions sampling_options(const Args& args) {
  SamplingOptions so;
  so.temperature = args.temperature;
  so.top_k = args.top_k;
  so.top_p = args.top_p;
  so.min_p = args.min_p;
  so.repeat_penalty = args.repeat_penalty;
  so.repeat_last_n = args.repeat_last_n;
  so.frequency_penalty = args.frequency_penalty;
  so.presence_penalty = args.presence_penalty;
  so.logit_bias = args.logit_bias;
  so.seed = args.seed;
  return so;
}

std::vector<int32_t> end_of_turn_ids(const Tokenizer& tok, const GgufFile& f) {
  std::vector<int32_t> ids;
  if (tok.eos_id() >= 0) ids.push_back(tok.eos_id());
  if (const GgufValue* eot = f.find("tokenizer.ggml.eot_token_id");
      eot && eot->is<uint32_t>() && eot->as<uint32_t>() < static_cast<uint32_t>(tok.vocab_size()))
    ids.push_back(static_cast<int32_t>(eot->as<uint32_t>()));
  for (const char* t : {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>"})
    if (const int32_t id = tok.token_id(t); id >= 0 && tok.is_control(id)) ids.push_back(id);
  return ids;
}

std::string read_text_file(const std::string& path, const char* command) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::Io, command, "cannot open --file '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().empty()) throw UsageError("--file '" + path + "' is empty");
  return text.str();
}

int run_generate(const Args& args) {
  const std::string prompt_text =
      args.prompt_file.empty() ? args.prompt : read_text_file(args.prompt_file, "wick generate");
  const Device dev = device_from_flag(args.device);
  double load_s = 0;
  const std::string ctx_flag = ctx_flag_text(args);
  LlamaModel model =
      load_model_with_progress(args.model, dev, args.max_seq, ctx_flag, &load_s, args.kv_type);
  const Tokenizer tok = load_gguf_tokenizer(model.gguf());

  std::string text = prompt_text;
  if (args.chat) {
    const ChatTemplate tmpl = load_gguf_chat_template(model.gguf());
    const ChatMessage user{"user", prompt_text};
    text = tmpl.apply({&user, 1}, /*add_generation_prompt=*/true);
  }
  // Control tokens written in a chat-formatted prompt are meant as such; in a plain prompt they
  // are text.
  std::vector<uint32_t> prompt;
  if (gguf_adds_bos(model.gguf()) && tok.bos_id() >= 0)
    prompt.push_back(static_cast<uint32_t>(tok.bos_id()));
  for (int32_t id : tok.encode(text, /*allow_special=*/args.chat))
    prompt.push_back(static_cast<uint32_t>(id));
  if (prompt.empty()) fail(ErrorKind::Shape, "wick generate", "the prompt encodes to no tokens");
  if (static_cast<int64_t>(prompt.size()) > model.max_seq())
    throw UsageError("--prompt is " + std::to_string(prompt.size()) +
                     " tokens, more than the context of " + std::to_string(model.max_seq()) + " (" +
                     ctx_flag + "; the model's context length is " +
                     std::to_string(model.config().context_length) + ")");

  // A chat turn ends at any of the model's end-of-turn tokens; plain text at eos.
  std::vector<int32_t> ends =
      args.chat ? end_of_turn_ids(tok, model.gguf()) : std::vector<int32_t>{tok.eos_id()};
  if (args.ignore_eos && !args.chat) ends.clear();
  const auto is_end = [&](uint32_t id) {
    return std::find(ends.begin(), ends.end(), static_cast<int32_t>(id)) != ends.end();
  };
  Sampler sampler(sampling_options(args));
  TokenStreamer stream(tok, /*skip_special=*/true);
  StopStrings stops(args.stops);
  bool at_end = false;

  if (!args.chat) std::cout << prompt_text << std::flush;
  const GenerationStats st = generate(model, prompt, args.n_predict, sampler, -1, [&](uint32_t id) {
    if (is_end(id)) {
      at_end = true;
      return false;
    }
    std::cout << stops.push(stream.push(static_cast<int32_t>(id))) << std::flush;
    return !stops.stopped();
  });
  std::cout << stops.push(stream.finish()) << stops.finish() << "\n" << std::flush;
  if (st.stopped_at_context_end)
    std::fprintf(stderr,
                 "wick: the context is full (%lld tokens): stopped after %lld of %lld tokens "
                 "(--ctx sets the context, up to the model's %lld)\n",
                 static_cast<long long>(model.max_seq()),
                 static_cast<long long>(st.generated_tokens),
                 static_cast<long long>(args.n_predict),
                 static_cast<long long>(model.config().context_length));

  const double decode_tokens = static_cast<double>(st.generated_tokens - 1);
  std::fprintf(stderr, "\n%s on %s\n", args.model.c_str(), dev.name().c_str());
  std::fprintf(stderr, "load:       %8.1f ms\n", load_s * 1e3);
  std::fprintf(
      stderr, "prompt:     %8lld tokens  %8.1f ms  %8.1f tokens/s (to the first new token)\n",
      static_cast<long long>(st.prompt_tokens), st.prefill_seconds * 1e3,
      st.prefill_seconds > 0 ? static_cast<double>(st.prompt_tokens) / st.prefill_seconds : 0.0);
  std::fprintf(stderr, "generation: %8lld tokens  %8.1f ms  %8.1f tokens/s%s\n",
               static_cast<long long>(st.generated_tokens), st.decode_seconds * 1e3,
               st.decode_seconds > 0 ? decode_tokens / st.decode_seconds : 0.0,
               at_end            ? " (stopped at end of sequence)"
               : stops.stopped() ? " (stopped at a stop string)"
                                 : "");
  return 0;
}

}  // namespace wick::cli

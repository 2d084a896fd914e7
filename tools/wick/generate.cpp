#include "generate.h"

#include <cstdio>
#include <iostream>

#include "report.h"
#include "wick/gguf.h"
#include "wick/wick.h"

namespace wick::cli {

LlamaModel load_model_with_progress(const std::string& path, const Device& dev, int64_t max_seq,
                                    double* seconds) {
  const auto t0 = Clock::now();
  bool drawn = false;
  int last_percent = -1;
  auto progress = [&](uint64_t done, uint64_t total) {
    // Quiet for quick loads; a bar once loading has taken a moment.
    if (!drawn && ms_since(t0) < 250) return;
    const int percent = total ? static_cast<int>(100 * done / total) : 100;
    if (percent == last_percent) return;
    last_percent = percent;
    drawn = true;
    constexpr int kWidth = 30;
    const int filled = percent * kWidth / 100;
    std::fprintf(stderr, "\rloading %s [%.*s%*s] %3d%%", path.c_str(), filled,
                 "##############################", kWidth - filled, "", percent);
    std::fflush(stderr);
  };
  LlamaModel m = LlamaModel::load_gguf(path, dev, max_seq, progress);
  if (drawn) std::fprintf(stderr, "\n");
  if (seconds) *seconds = ms_since(t0) / 1e3;
  return m;
}

int run_generate(const Args& args) {
  const Device dev = args.device.empty() ? Device::default_device() : Device::parse(args.device);
  double load_s = 0;
  LlamaModel model = load_model_with_progress(args.model, dev, args.max_seq, &load_s);
  const Tokenizer tok = load_gguf_tokenizer(model.gguf());

  std::string text = args.prompt;
  if (args.chat) {
    const ChatTemplate tmpl = load_gguf_chat_template(model.gguf());
    const ChatMessage user{"user", args.prompt};
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

  int32_t eos = tok.eos_id();
  if (args.chat) {  // a chat turn ends at <|im_end|>
    const int32_t im_end = tok.token_id("<|im_end|>");
    if (im_end >= 0) eos = im_end;
  }
  SamplingOptions so;
  so.temperature = args.temperature;
  so.top_k = args.top_k;
  so.top_p = args.top_p;
  so.seed = args.seed;
  Sampler sampler(so);
  TokenStreamer stream(tok, /*skip_special=*/true);

  if (!args.chat) std::cout << args.prompt << std::flush;
  const GenerationStats st =
      generate(model, prompt, args.n_predict, sampler, eos, [&](uint32_t id) {
        std::cout << stream.push(static_cast<int32_t>(id)) << std::flush;
        return true;
      });
  std::cout << stream.finish() << "\n" << std::flush;

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
               st.stopped_at_eos ? " (stopped at end of sequence)" : "");
  return 0;
}

}  // namespace wick::cli

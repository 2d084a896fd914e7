// `wick perplexity`: the perplexity of a model over a text, computed as llama.cpp's
// llama-perplexity computes it, so that the two can be compared on the same file: the text's
// tokens (BOS first when the model adds one) cut into chunks of --ctx tokens, each chunk run from
// position 0 in one pass (LlamaModel::forward_all) with its first token replaced by BOS when the
// model adds one, and only the second half of each chunk scored (each of those tokens has at
// least ctx/2 tokens before it).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "generate.h"

namespace wick::cli {

int run_perplexity(const Args& args) {
  using Clock = std::chrono::steady_clock;
  const std::string text = read_text_file(args.prompt_file, "wick perplexity");
  const Device dev = device_from_flag(args.device);
  if (args.max_seq > 0 && args.max_seq < 4)
    throw UsageError("--ctx " + std::to_string(args.max_seq) + " is too short: at least 4");
  double load_s = 0;
  LlamaModel model = load_model_with_progress(args.model, dev, args.max_seq, ctx_flag_text(args),
                                              &load_s, args.kv_type);
  // llama.cpp's default chunk, or the model's whole context where that is shorter.
  const int64_t ctx = args.max_seq > 0 ? args.max_seq : std::min<int64_t>(512, model.max_seq());
  const Tokenizer tok = load_gguf_tokenizer(model.gguf());
  const bool bos = gguf_adds_bos(model.gguf()) && tok.bos_id() >= 0;

  std::vector<uint32_t> tokens;
  if (bos) tokens.push_back(static_cast<uint32_t>(tok.bos_id()));
  for (const int32_t id : tok.encode(text)) tokens.push_back(static_cast<uint32_t>(id));
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  const int64_t available = n_tokens / ctx;
  if (available == 0)
    throw UsageError("--file '" + args.prompt_file + "' is " + std::to_string(n_tokens) +
                     " tokens, less than one chunk of --ctx " + std::to_string(ctx));
  const int64_t chunks = args.chunks > 0 ? std::min(args.chunks, available) : available;
  const int64_t first = ctx / 2;
  std::fprintf(stderr, "wick perplexity: %lld tokens, %lld chunks of %lld (the last %lld scored)\n",
               static_cast<long long>(n_tokens), static_cast<long long>(chunks),
               static_cast<long long>(ctx), static_cast<long long>(ctx - first - 1));

  double nll = 0, nll2 = 0;  // sums of -log p and its square over the scored tokens
  int64_t count = 0;
  const auto t0 = Clock::now();
  for (int64_t c = 0; c < chunks; c++) {
    std::vector<uint32_t> chunk(tokens.begin() + c * ctx, tokens.begin() + (c + 1) * ctx);
    if (bos) chunk[0] = static_cast<uint32_t>(tok.bos_id());
    model.reset();
    // Each scored row's log-softmax at its next token, on the device: n floats come back, not
    // n x vocab logits.
    const int64_t n = ctx - 1 - first;
    const std::vector<uint32_t> next(tokens.begin() + c * ctx + first + 1,
                                     tokens.begin() + (c + 1) * ctx);
    const Tensor ids = Tensor::from_vec(next, {n, 1}).to_device(dev);
    const std::vector<float> lps =
        model.forward_all(chunk).narrow(0, first, n).log_softmax(1).gather(ids, 1).to_vec<float>();
    for (const float lp : lps) {
      nll -= lp;
      nll2 += static_cast<double>(lp) * lp;
      count++;
    }
    std::printf("[%lld]%.4f,", static_cast<long long>(c + 1),
                std::exp(nll / static_cast<double>(count)));
    std::fflush(stdout);
  }
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double mean = nll / static_cast<double>(count);
  const double ppl = std::exp(mean);
  // llama.cpp's uncertainty: the standard error of the mean -log p, carried through exp.
  const double var = nll2 / static_cast<double>(count) - mean * mean;
  const double err = count > 1 && var > 0 ? std::sqrt(var / static_cast<double>(count - 1)) : 0;
  std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", ppl, err * ppl);
  std::fprintf(stderr, "load: %.1f ms; %lld chunks in %.2f s (%.1f tokens/s)\n", load_s * 1e3,
               static_cast<long long>(chunks), secs,
               static_cast<double>(chunks * ctx) / std::max(secs, 1e-9));
  return 0;
}

}  // namespace wick::cli

// llama.cpp's tokenizer on the text `wick bench tokenizer --save-text` writes, timed as that
// benchmark times wick's: one thread, the whole text in one call without special tokens, MB/s =
// bytes / median time of the runs after the first. The anchor for issue 12's tokenizer goal.
//
// Built against a llama.cpp source tree LLAMA and its build LLAMA_BUILD (on one line):
//   g++ -O2 -std=c++17 bench/llama_tokenize.cpp -I LLAMA/include -I LLAMA/ggml/include
//       -L LLAMA_BUILD/bin -lllama -Wl,-rpath,LLAMA_BUILD/bin -o /tmp/llama_tokenize
//   wick bench tokenizer --save-text /tmp/text.txt
//   /tmp/llama_tokenize .cache/llama-vocab/ggml-vocab-llama-bpe.gguf /tmp/text.txt [runs]
// It prints an FNV-1a hash of the ids, to compare with wick's on the same text.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s VOCAB.gguf TEXT [runs]\n", argv[0]);
    return 2;
  }
  const int runs = argc > 3 ? std::max(2, std::atoi(argv[3])) : 10;
  std::ifstream in(argv[2], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (!in || text.empty()) {
    std::fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);
  std::vector<llama_token> ids(text.size() + 16);
  std::vector<double> ms;
  int32_t n = 0;
  for (int r = 0; r < runs; r++) {
    const auto t0 = std::chrono::steady_clock::now();
    n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                       static_cast<int32_t>(ids.size()), false, false);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (n < 0) {
      std::fprintf(stderr, "llama_tokenize: %d tokens do not fit\n", -n);
      return 1;
    }
  }
  // FNV-1a over the ids, to compare with another tokenizer's on the same text.
  uint64_t hash = 1469598103934665603ull;
  for (int32_t i = 0; i < n; i++) hash = (hash ^ static_cast<uint32_t>(ids[i])) * 1099511628211ull;
  const double first = ms[0];
  ms.erase(ms.begin());
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  std::printf(
      "%s: %zu bytes, %d tokens (%.2f bytes/token), encode %.1f MB/s (median of %zu runs "
      "after a first of %.1f ms), ids FNV-1a %016llx\n",
      argv[1], text.size(), n, double(text.size()) / n, text.size() / 1e6 / (median / 1e3),
      ms.size(), first, static_cast<unsigned long long>(hash));
  llama_model_free(model);
  llama_backend_free();
  return 0;
}

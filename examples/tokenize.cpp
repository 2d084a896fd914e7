// Tokenizes text with the tokenizer of a GGUF model or an HF tokenizer.json, prints each token,
// and checks that decoding gives the text back:
//   tokenize <model.gguf | tokenizer.json> [text]
#include <wick/error.h>
#include <wick/gguf.h>
#include <wick/llama.h>
#include <wick/tokenizer.h>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <model.gguf | tokenizer.json> [text]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1], text = argc > 2 ? argv[2] : "Hello world, héllo wörld!";
  try {
    const bool gguf = path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0;
    const wick::Tokenizer tok = gguf ? wick::load_gguf_tokenizer(wick::GgufFile::open(path))
                                     : wick::Tokenizer::from_hf_json_file(path);
    const std::vector<int32_t> ids = tok.encode(text);
    std::printf("%zu tokens (vocabulary of %d):\n", ids.size(), tok.vocab_size());
    for (int32_t id : ids) std::printf("  %6d  '%s'\n", id, tok.token(id).c_str());
    const std::string back = tok.decode(ids);
    std::printf("decoded: '%s' (%s)\n", back.c_str(), back == text ? "round trip" : "DIFFERS");
    return back == text ? 0 : 1;
  } catch (const wick::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

// Generates text with a llama-family model (SmolLM2, Llama, TinyLlama, Qwen2, ...): a GGUF file or
// a Hugging Face folder (config.json, *.safetensors, tokenizer.json):
//   llama_generate <model.gguf | folder> [prompt] [device: cpu, vulkan, cuda] [max new tokens]
#include <wick/gguf.h>
#include <wick/llama.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <model.gguf | folder> [prompt] [device] [max new tokens]\n",
                 argv[0]);
    return 2;
  }
  const std::string prompt = argc > 2 ? argv[2] : "Once upon a time";
  try {
    const wick::Device dev = argc > 3 ? wick::Device::parse(argv[3]) : wick::Device::cpu();
    wick::LlamaModel model = wick::LlamaModel::load(argv[1], dev);
    const wick::Tokenizer tok = wick::load_gguf_tokenizer(model.gguf());
    std::vector<uint32_t> ids;
    if (wick::gguf_adds_bos(model.gguf()) && tok.bos_id() >= 0) ids.push_back(tok.bos_id());
    for (int32_t id : tok.encode(prompt)) ids.push_back(static_cast<uint32_t>(id));

    wick::Sampler sampler({.temperature = 0.7, .top_p = 0.9});
    wick::TokenStreamer text(tok, /*skip_special=*/true);
    std::printf("%s", prompt.c_str());
    const wick::GenerationStats s = wick::generate(
        model, ids, argc > 4 ? std::stoll(argv[4]) : 48, sampler, tok.eos_id(), [&](uint32_t t) {
          std::fputs(text.push(static_cast<int32_t>(t)).c_str(), stdout);
          std::fflush(stdout);
          return true;
        });
    std::printf("%s\n[%lld tokens on %s, %.1f tokens/s]\n", text.finish().c_str(),
                static_cast<long long>(s.generated_tokens), dev.name().c_str(),
                s.generated_tokens / (s.prefill_seconds + s.decode_seconds));
  } catch (const wick::Error& e) {  // a missing file, a model wick cannot run, a bad device
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

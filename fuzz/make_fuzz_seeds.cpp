// Writes the seed corpora for the fuzz targets: small valid files that reach every part of each
// parser. Usage: make_fuzz_seeds <folder>  (writes <folder>/gguf/, <folder>/safetensors/).
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "wick/gguf.h"

using namespace wick;

namespace {

std::mt19937_64 rng(12345);

std::vector<std::byte> random_bytes(size_t n) {
  std::vector<std::byte> b(n);
  for (std::byte& x : b) x = static_cast<std::byte>(rng());
  return b;
}

void save(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "make_fuzz_seeds: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

// A raw tensor of `type` with the row-major `shape` and random bytes.
void add(GgufWriter& w, const std::string& name, QuantType type, const Shape& shape) {
  const QuantTypeInfo* info = quant_type_info(type);
  w.add_raw_tensor(
      name, type, shape,
      random_bytes(static_cast<size_t>(shape.numel() / info->block_elems * info->block_bytes)));
}

void gguf_seeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  save(dir / "empty.gguf", GgufWriter().to_bytes());

  GgufWriter meta;  // one key of every type, arrays nested
  meta.set("u8", uint8_t{7});
  meta.set("i8", int8_t{-7});
  meta.set("u16", uint16_t{700});
  meta.set("i16", int16_t{-700});
  meta.set("u32", uint32_t{70000});
  meta.set("i32", int32_t{-70000});
  meta.set("f32", 0.5f);
  meta.set("bool", true);
  meta.set("string", "llama");
  meta.set("empty", "");
  meta.set("u64", uint64_t{1} << 40);
  meta.set("i64", -(int64_t{1} << 40));
  meta.set("f64", 0.25);
  meta.set("tokens", GgufValue::array(std::vector<std::string>{"<s>", "a", "b", "a b"}));
  meta.set("types", GgufValue::array(std::vector<int32_t>{3, 1, 1, 1}));
  meta.set("nested",
           GgufValue::array(GgufValueType::Array, {GgufValue::array(std::vector<float>{1, 2}),
                                                   GgufValue::array(std::vector<float>{})}));
  save(dir / "metadata.gguf", meta.to_bytes());

  GgufWriter model;  // llama-shaped, plain and quantized tensors
  model.set("general.architecture", "llama");
  model.set("llama.block_count", uint32_t{1});
  model.set("llama.embedding_length", uint32_t{32});
  model.set("tokenizer.ggml.tokens", GgufValue::array(std::vector<std::string>{"a", "b"}));
  add(model, "token_embd.weight", QuantType::Q8_0, Shape{2, 32});
  add(model, "blk.0.attn_norm.weight", QuantType::F32, Shape{32});
  add(model, "blk.0.attn_q.weight", QuantType::Q4_1, Shape{2, 32});
  add(model, "blk.0.ffn_down.weight", QuantType::F16, Shape{3, 5});
  add(model, "output_norm.weight", QuantType::BF16, Shape{7});
  std::vector<std::byte> v3 = model.to_bytes();
  save(dir / "model.gguf", v3);
  v3[4] = std::byte{2};  // version 2 has the same layout
  save(dir / "model_v2.gguf", v3);

  for (uint32_t align : {1u, 8u, 64u}) {
    GgufWriter w(align);
    w.set("general.name", "aligned");
    add(w, "scalar", QuantType::F64, Shape{});
    add(w, "i8", QuantType::I8, Shape{3});
    add(w, "i32", QuantType::I32, Shape{1, 2, 3, 1});
    add(w, "q4_k", QuantType::Q4_K, Shape{256});
    add(w, "iq4_nl", QuantType::IQ4_NL, Shape{2, 32});
    add(w, "iq4_xs", QuantType::IQ4_XS, Shape{256});
    save(dir / ("align" + std::to_string(align) + ".gguf"), w.to_bytes());
  }
}

// GGUF files that carry a tokenizer (and a chat template): byte-level BPE, SentencePiece with byte
// tokens and scores, and a Hugging Face tokenizer.json inside the file.
void gguf_tokenizer_seeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::string chatml =
      "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + "
      "'<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' "
      "}}{% endif %}";
  {
    GgufWriter w;
    std::vector<std::string> tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    std::vector<int32_t> types = {3, 3, 3};
    for (const char* t : {"a", "b", "c", "l", "o", "H", "e", "\xc4\xa0", "ab", "lo", "Hel",
                          "\xc4\xa0"
                          "a",
                          "1", "2", "3"}) {
      tokens.push_back(t);
      types.push_back(1);
    }
    w.set("tokenizer.ggml.model", "gpt2");
    w.set("tokenizer.ggml.pre", "smollm");
    w.set("tokenizer.ggml.tokens", GgufValue::array(tokens));
    w.set("tokenizer.ggml.token_type", GgufValue::array(types));
    w.set("tokenizer.ggml.merges",
          GgufValue::array(std::vector<std::string>{"a b", "l o", "H e", "\xc4\xa0 a"}));
    w.set("tokenizer.ggml.bos_token_id", uint32_t{0});
    w.set("tokenizer.ggml.eos_token_id", uint32_t{2});
    w.set("tokenizer.chat_template", chatml);
    save(dir / "bpe.gguf", w.to_bytes());
  }
  {
    GgufWriter w;
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};
    std::vector<float> scores = {0, 0, 0};
    for (int b = 0; b < 256; b++) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      tokens.push_back(name);
      types.push_back(6);
      scores.push_back(0);
    }
    for (const char* t : {"\xe2\x96\x81", "a", "b",
                          "\xe2\x96\x81"
                          "a",
                          "ab",
                          "\xe2\x96\x81"
                          "ab"}) {
      tokens.push_back(t);
      types.push_back(1);
      scores.push_back(-float(tokens.size()));
    }
    w.set("tokenizer.ggml.model", "llama");
    w.set("tokenizer.ggml.tokens", GgufValue::array(tokens));
    w.set("tokenizer.ggml.token_type", GgufValue::array(types));
    w.set("tokenizer.ggml.scores", GgufValue::array(scores));
    w.set("tokenizer.ggml.add_space_prefix", true);
    w.set("tokenizer.chat_template",
          "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}");
    save(dir / "spm.gguf", w.to_bytes());
  }
  {
    GgufWriter w;
    w.set("tokenizer.huggingface.json",
          R"({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false}, )"
          R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})");
    w.set("tokenizer.huggingface.config", R"({"bos_token": "a", "eos_token": "b"})");
    save(dir / "hf.gguf", w.to_bytes());
  }
}

// A safetensors file: u64 header length, the JSON header padded with spaces to 8 bytes, data.
std::vector<std::byte> safetensors_file(std::string header, size_t data_bytes) {
  header.resize((header.size() + 7) / 8 * 8, ' ');
  std::vector<std::byte> out(8);
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  const std::vector<std::byte> data = random_bytes(data_bytes);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void safetensors_seeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  save(dir / "empty.safetensors", safetensors_file("{}", 0));
  save(dir / "one.safetensors",
       safetensors_file(R"({"__metadata__":{"format":"pt"},)"
                        R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})",
                        24));
  save(dir / "mixed.safetensors",
       safetensors_file(R"({"b":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},)"
                        R"("i":{"dtype":"I64","shape":[],"data_offsets":[8,16]},)"
                        R"("d":{"dtype":"F64","shape":[1],"data_offsets":[16,24]},)"
                        R"("u":{"dtype":"U32","shape":[1,1],"data_offsets":[24,28]},)"
                        R"("h":{"dtype":"F16","shape":[1,2,1],"data_offsets":[28,32]},)"
                        R"("z":{"dtype":"U8","shape":[3,0],"data_offsets":[32,32]},)"
                        R"("c":{"dtype":"U8","shape":[5],"data_offsets":[32,37]},)"
                        R"("x":{"dtype":"I8","shape":[3],"data_offsets":[37,40]}})",
                        40));
  // 10,000 one-byte tensors (640 KB): a large input to mutate from the start (libFuzzer grows
  // small ones slowly), small enough to run in well under the 10 s timeout under ASan.
  std::string many = "{";
  for (int i = 0; i < 10000; i++)
    many += (i ? ",\"t" : "\"t") + std::to_string(i) + R"(":{"dtype":"U8","shape":[1],)" +
            R"("data_offsets":[)" + std::to_string(i) + "," + std::to_string(i + 1) + "]}";
  save(dir / "many.safetensors", safetensors_file(many + "}", 10000));
}

}  // namespace

// Answers in the tool-call formats wick parses, and near misses.
void tool_calls_seeds(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const char* seeds[] = {
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>",
      "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1, 2]}\"}</tool_call>"
      "<tool_call>{\"name\": \"g\"",
      "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"x\": 1.5}}",
      "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g\"}]",
      "Paris is sunny today.",
      "x <tool_call>{broken</tool_call> y",
  };
  int i = 0;
  for (const char* s : seeds) {
    const std::string text(s);
    std::vector<std::byte> bytes(text.size());
    for (size_t j = 0; j < text.size(); j++) bytes[j] = static_cast<std::byte>(text[j]);
    save(dir / ("seed" + std::to_string(i++)), bytes);
  }
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds <folder>\n");
    return 2;
  }
  gguf_seeds(std::filesystem::path(argv[1]) / "gguf");
  safetensors_seeds(std::filesystem::path(argv[1]) / "safetensors");
  gguf_tokenizer_seeds(std::filesystem::path(argv[1]) / "gguf_tokenizer");
  tool_calls_seeds(std::filesystem::path(argv[1]) / "tool_calls");
  return 0;
}

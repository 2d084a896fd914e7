// The tokenizer's immutable state, shared by Tokenizer copies and TokenStreamers.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "wick/tokenizer.h"

namespace wick::tokenizer_detail {

struct Model {
  std::vector<std::string> tokens;  // as stored: byte-level form, or plain text for added tokens
  std::vector<std::string> token_bytes;  // what each token decodes to
  std::vector<TokenType> types;
  std::unordered_map<std::string, int32_t> token_to_id;
  std::array<int32_t, 256> byte_ids;  // single-byte token of each byte, -1 if the vocab lacks it
  MergeTable merges;
  PreTokenizerKind pre_tokenizer = PreTokenizerKind::Gpt2;
  SpecialTokens special;
  // Control and user-defined tokens, matched in text before pre-tokenization; per first byte,
  // longest first so the first hit is the leftmost-longest match.
  std::array<std::vector<int32_t>, 256> added_by_first_byte;
};

// Builds the model from GGUF-shaped data; the shared back end of every Tokenizer factory.
std::shared_ptr<const Model> build_model(
    std::vector<std::string> tokens, const std::vector<std::pair<std::string, std::string>>& merges,
    const std::vector<int32_t>& token_types, SpecialTokens special, PreTokenizerKind pre_tokenizer,
    const char* op);

}  // namespace wick::tokenizer_detail

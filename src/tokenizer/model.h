// The tokenizer's immutable state, shared by Tokenizer copies and TokenStreamers.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pre_tokenizer.h"
#include "wick/tokenizer.h"

namespace wick::tokenizer_detail {

// std::string keys looked up by string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

enum class ModelKind {
  Bpe,  // merges by rank (GPT-2 byte-level BPE; SentencePiece-style BPE of tokenizer.json)
  Spm,  // SentencePiece's BPE: adjacent pairs merged by the score of the token they make
};

// Where a ' ' is put before plain text (SentencePiece's dummy prefix).
enum class SpacePrefix {
  None,
  EverySegment,  // the text's start and after every added token (llama.cpp, HF Prepend normalizer)
  FirstSegment,  // the text's start only (HF Metaspace prepend_scheme "first")
};

// How a model reads text: everything beyond the vocabulary and its merges or scores.
struct ModelOptions {
  ModelKind kind = ModelKind::Bpe;
  bool byte_level = true;      // Bpe over GPT-2's byte alphabet; false: over UTF-8 characters
  bool escape_spaces = false;  // ' ' -> U+2581 '▁' before the model runs
  SpacePrefix space_prefix = SpacePrefix::None;
  bool byte_fallback = false;  // a character outside the vocabulary becomes its <0xNN> tokens
  bool ignore_merges = false;  // Bpe: a piece that is a whole token is that token
  PreTokenizer pre;            // Bpe only
};

struct Model {
  ModelOptions options;
  std::vector<std::string> tokens;       // as stored: "Ġthe", "▁the", "<0x0A>", "<|im_start|>"
  std::vector<std::string> token_bytes;  // what each token decodes to
  std::vector<TokenType> types;
  std::vector<float> scores;  // Spm
  TokenMap token_to_id;       // every token by its stored form
  // Normal and user-defined tokens by the text the model matches: the stored form, except for
  // byte-level BPE, where it is the bytes ("Ġthe" -> " the").
  TokenMap text_to_id;
  // byte_level: the token of each byte's symbol; otherwise each byte's fallback token <0xNN>
  // (or the one-byte token). -1 where the vocabulary has none.
  std::array<int32_t, 256> byte_ids;
  MergeTable merges;
  // Spm: no token holds a '▁' right after another character, so text may be cut before each such
  // '▁' and the words merged apart with the same result.
  bool spm_words_apart = false;
  SpecialTokens special;
  // Control, user-defined and unknown tokens, matched in text before pre-tokenization; per first
  // byte, longest first so the first hit is the leftmost-longest match.
  std::array<std::vector<int32_t>, 256> added_by_first_byte;
};

// A character outside the vocabulary: its bytes' fallback tokens when the vocabulary has all of
// them, else the unknown token, else nothing.
void append_unknown_character(std::string_view character, const Model& m,
                              std::vector<int32_t>& out);

// ' ' -> U+2581 '▁'.
std::string escape_spaces(std::string_view text);

// Builds the model; the shared back end of every Tokenizer factory. merges: Bpe only; scores:
// Spm only (one per token).
std::shared_ptr<const Model> build_model(
    ModelOptions options, std::vector<std::string> tokens,
    const std::vector<std::pair<std::string, std::string>>& merges, std::vector<float> scores,
    const std::vector<int32_t>& token_types, SpecialTokens special, const char* op);

}  // namespace wick::tokenizer_detail

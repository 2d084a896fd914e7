#include <algorithm>
#include <unordered_map>

#include "io/file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/model.h"
#include "tokenizer/unicode.h"
#include "wick/error.h"

namespace wick {
namespace tokenizer_detail {

std::shared_ptr<const Model> build_model(
    std::vector<std::string> tokens, const std::vector<std::pair<std::string, std::string>>& merges,
    const std::vector<int32_t>& token_types, SpecialTokens special, PreTokenizerKind pre_tokenizer,
    const char* op) {
  auto model = std::make_shared<Model>();
  Model& m = *model;
  const size_t n = tokens.size();
  if (n == 0) fail(ErrorKind::Parse, op, "empty vocabulary");
  if (n > size_t(INT32_MAX))
    fail(ErrorKind::Parse, op, "vocabulary of ", n, " tokens is too large");
  if (!token_types.empty() && token_types.size() != n)
    fail(ErrorKind::Parse, op, token_types.size(), " token types for ", n, " tokens");

  m.types.resize(n, TokenType::Normal);
  for (size_t i = 0; i < token_types.size(); ++i) {
    if (token_types[i] < 1 || token_types[i] > 6)
      fail(ErrorKind::Parse, op, "token ", i, " has unknown type ", token_types[i]);
    m.types[i] = TokenType(token_types[i]);
  }
  m.token_to_id.reserve(n);
  m.token_bytes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& t = tokens[i];
    if (t.empty()) continue;  // a hole in the id space: never produced by encode
    if (!m.token_to_id.emplace(t, int32_t(i)).second)
      fail(ErrorKind::Parse, op, "token ", i, " '", io::excerpt(t), "' duplicates token ",
           m.token_to_id[t]);
    // HF's ByteLevel decoder: map every character back to its byte, or keep the text as is when
    // some character is outside the alphabet (added tokens such as "<|im_start|>" are plain text).
    if (!byte_level_decode(t, m.token_bytes[i])) m.token_bytes[i] = t;
  }

  m.byte_ids.fill(-1);
  for (int b = 0; b < 256; ++b) {
    auto it = m.token_to_id.find(byte_level_encode(std::string(1, char(b))));
    if (it != m.token_to_id.end()) m.byte_ids[b] = it->second;
  }

  m.merges.reserve(merges.size());
  const auto id_of = [&](const std::string& t, size_t rank) {
    auto it = m.token_to_id.find(t);
    if (it == m.token_to_id.end())
      fail(ErrorKind::Parse, op, "merge ", rank, " uses '", io::excerpt(t),
           "', which is not in the vocabulary");
    return it->second;
  };
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    if (left.empty() || right.empty())
      fail(ErrorKind::Parse, op, "merge ", rank, " '", io::excerpt(left), " ", io::excerpt(right),
           "' has an empty side");
    const int32_t left_id = id_of(left, rank), right_id = id_of(right, rank);
    const int32_t merged_id = id_of(left + right, rank);
    // Like HF, a repeated pair keeps its first (lowest) rank.
    m.merges.insert(left_id, right_id, int32_t(rank), merged_id);
  }

  const auto check_id = [&](int32_t id, const char* role) {
    if (id < -1 || id >= int32_t(n))
      fail(ErrorKind::Parse, op, role, " token id ", id, " outside the vocabulary of ", n);
  };
  check_id(special.bos, "bos");
  check_id(special.eos, "eos");
  check_id(special.pad, "pad");
  check_id(special.unk, "unk");
  m.special = special;

  for (size_t i = 0; i < n; ++i) {
    if (tokens[i].empty()) continue;
    if (m.types[i] == TokenType::Control || m.types[i] == TokenType::UserDefined)
      m.added_by_first_byte[uint8_t(tokens[i][0])].push_back(int32_t(i));
  }
  for (auto& ids : m.added_by_first_byte)
    std::stable_sort(ids.begin(), ids.end(),
                     [&](int32_t a, int32_t b) { return tokens[a].size() > tokens[b].size(); });
  m.pre_tokenizer = pre_tokenizer;
  m.tokens = std::move(tokens);
  return model;
}

namespace {

// Pieces already merged in this call; natural text repeats most of its words.
class PieceCache {
 public:
  // Appends the ids of `piece`, merging it only the first time it is seen.
  void encode(std::string_view piece, const Model& m, BpeMerger& merger,
              std::vector<int32_t>& out) {
    if (piece.size() == 1) {  // no merge possible
      if (const int32_t id = m.byte_ids[uint8_t(piece[0])]; id >= 0) out.push_back(id);
      return;
    }
    auto [it, inserted] = spans_.try_emplace(piece, 0, 0);
    if (!inserted) {
      out.insert(out.end(), ids_.begin() + it->second.first,
                 ids_.begin() + it->second.first + it->second.second);
      return;
    }
    const size_t begin = ids_.size();
    merger.merge(piece, m.byte_ids, m.merges, ids_);
    it->second = {begin, ids_.size() - begin};
    out.insert(out.end(), ids_.begin() + begin, ids_.end());
  }

 private:
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> spans_;
  std::vector<int32_t> ids_;
};

// Id of the added token at text[pos], or -1.
int32_t match_added(const Model& m, std::string_view text, size_t pos, bool allow_special) {
  for (int32_t id : m.added_by_first_byte[uint8_t(text[pos])]) {
    if (!allow_special && m.types[id] == TokenType::Control) continue;
    if (text.compare(pos, m.tokens[id].size(), m.tokens[id]) == 0) return id;
  }
  return -1;
}

}  // namespace
}  // namespace tokenizer_detail

using tokenizer_detail::Model;

Tokenizer::Tokenizer(std::shared_ptr<const Model> model) : model_(std::move(model)) {}

Tokenizer Tokenizer::from_vocab(std::vector<std::string> tokens, std::vector<std::string> merges,
                                std::vector<int32_t> token_types, SpecialTokens special,
                                std::string_view pre_tokenizer) {
  constexpr const char* op = "Tokenizer::from_vocab";
  const auto kind = tokenizer_detail::pre_tokenizer_from_name(pre_tokenizer);
  if (!kind)
    fail(ErrorKind::Unsupported, op, "unknown pre-tokenizer '", io::excerpt(pre_tokenizer), "'");
  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& s = merges[rank];
    const size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
      fail(ErrorKind::Parse, op, "merge ", rank, " '", io::excerpt(s),
           "' is not two tokens split by one space");
    pairs.emplace_back(s.substr(0, space), s.substr(space + 1));
  }
  return Tokenizer(
      tokenizer_detail::build_model(std::move(tokens), pairs, token_types, special, *kind, op));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool allow_special) const {
  using namespace tokenizer_detail;
  const Model& m = *model_;
  std::string valid;
  if (!utf8_is_valid(text)) {
    valid = utf8_make_valid(text);
    text = valid;
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  PreTokenizer pre(m.pre_tokenizer);
  BpeMerger merger;
  PieceCache cache;
  std::vector<std::pair<size_t, size_t>> pieces;
  const auto encode_plain = [&](std::string_view segment) {
    pieces.clear();
    pre.split(segment, pieces);
    for (const auto& [b, e] : pieces) cache.encode(segment.substr(b, e - b), m, merger, out);
  };
  size_t plain_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    const int32_t id = match_added(m, text, pos, allow_special);
    if (id < 0) {
      ++pos;
      continue;
    }
    encode_plain(text.substr(plain_start, pos - plain_start));
    out.push_back(id);
    pos += m.tokens[id].size();
    plain_start = pos;
  }
  encode_plain(text.substr(plain_start));
  return out;
}

std::string Tokenizer::decode_bytes(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size())
      fail(ErrorKind::OutOfRange, "Tokenizer::decode", "token id ", id,
           " outside the vocabulary of ", vocab_size());
    if (skip_special && model_->types[id] == TokenType::Control) continue;
    out += model_->token_bytes[id];
  }
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes = decode_bytes(ids, skip_special);
  if (tokenizer_detail::utf8_is_valid(bytes)) return bytes;
  return tokenizer_detail::utf8_make_valid(bytes);
}

int32_t Tokenizer::vocab_size() const {
  return int32_t(model_->tokens.size());
}

const SpecialTokens& Tokenizer::special_tokens() const {
  return model_->special;
}

const std::string& Tokenizer::token(int32_t id) const {
  if (id < 0 || id >= vocab_size())
    fail(ErrorKind::OutOfRange, "Tokenizer::token", "token id ", id, " outside the vocabulary of ",
         vocab_size());
  return model_->tokens[id];
}

int32_t Tokenizer::token_id(std::string_view token) const {
  auto it = model_->token_to_id.find(std::string(token));
  return it == model_->token_to_id.end() ? -1 : it->second;
}

TokenType Tokenizer::token_type(int32_t id) const {
  if (id < 0 || id >= vocab_size())
    fail(ErrorKind::OutOfRange, "Tokenizer::token_type", "token id ", id,
         " outside the vocabulary of ", vocab_size());
  return model_->types[id];
}

TokenStreamer::TokenStreamer(const Tokenizer& tokenizer, bool skip_special)
    : model_(tokenizer.model_), skip_special_(skip_special) {}

std::string TokenStreamer::push(int32_t id) {
  using namespace tokenizer_detail;
  if (id < 0 || id >= int32_t(model_->tokens.size()))
    fail(ErrorKind::OutOfRange, "TokenStreamer::push", "token id ", id,
         " outside the vocabulary of ", model_->tokens.size());
  if (skip_special_ && model_->types[id] == TokenType::Control) return {};
  pending_ += model_->token_bytes[id];
  const size_t complete = utf8_complete_prefix(pending_);
  std::string out = utf8_make_valid(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string TokenStreamer::finish() {
  std::string out = tokenizer_detail::utf8_make_valid(pending_);
  pending_.clear();
  return out;
}

}  // namespace wick

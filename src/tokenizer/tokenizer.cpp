#include <algorithm>
#include <unordered_map>

#include "io/file.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/model.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"
#include "wick/error.h"

namespace wick {
namespace tokenizer_detail {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581 '▁'

// "<0x0A>" -> 10; -1 if the text is not of that form.
int parse_byte_token(std::string_view t) {
  const auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0;;) {
    const size_t j = s.find(from, i);
    out += s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    if (j == std::string_view::npos) return out;
    out += to;
    i = j + from.size();
  }
}

std::string unescape_spaces(std::string_view t) {
  return replace_all(t, kSpaceMarker, " ");
}

}  // namespace

std::string escape_spaces(std::string_view text) {
  return replace_all(text, " ", kSpaceMarker);
}

std::shared_ptr<const Model> build_model(
    ModelOptions options, std::vector<std::string> tokens,
    const std::vector<std::pair<std::string, std::string>>& merges, std::vector<float> scores,
    const std::vector<int32_t>& token_types, SpecialTokens special, const char* op) {
  auto model = std::make_shared<Model>();
  Model& m = *model;
  m.options = std::move(options);
  const bool byte_level = m.options.kind == ModelKind::Bpe && m.options.byte_level;
  const size_t n = tokens.size();
  if (n == 0) fail(ErrorKind::Parse, op, "empty vocabulary");
  if (n > size_t(INT32_MAX))
    fail(ErrorKind::Parse, op, "vocabulary of ", n, " tokens is too large");
  if (!token_types.empty() && token_types.size() != n)
    fail(ErrorKind::Parse, op, token_types.size(), " token types for ", n, " tokens");
  if (m.options.kind == ModelKind::Spm && scores.size() != n)
    fail(ErrorKind::Parse, op, scores.size(), " scores for ", n, " tokens");
  if (m.options.kind == ModelKind::Spm && !merges.empty())
    fail(ErrorKind::Parse, op, "a SentencePiece vocabulary takes scores, not merges");

  m.types.resize(n, TokenType::Normal);
  for (size_t i = 0; i < token_types.size(); ++i) {
    if (token_types[i] < 1 || token_types[i] > 6)
      fail(ErrorKind::Parse, op, "token ", i, " has unknown type ", token_types[i]);
    m.types[i] = TokenType(token_types[i]);
  }
  m.token_to_id.reserve(n);
  m.text_to_id.reserve(n);
  m.token_bytes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& t = tokens[i];
    if (t.empty()) continue;  // a hole in the id space: never produced by encode
    if (!m.token_to_id.emplace(t, int32_t(i)).second)
      fail(ErrorKind::Parse, op, "token ", i, " '", io::excerpt(t), "' duplicates token ",
           m.token_to_id.find(t)->second);
    m.token_bytes[i] = t;
    if (byte_level) {
      // HF's ByteLevel decoder: map every character back to its byte, or keep the text as is
      // when some character is outside the alphabet (added tokens such as "<|im_start|>").
      byte_level_decode(t, m.token_bytes[i]);
    } else if (m.types[i] == TokenType::Byte) {
      const int b = parse_byte_token(t);
      if (b < 0)
        fail(ErrorKind::Parse, op, "byte token ", i, " '", io::excerpt(t), "' is not <0xNN>");
      m.token_bytes[i] = std::string(1, char(b));
    } else if (m.types[i] == TokenType::Normal && m.options.escape_spaces) {
      m.token_bytes[i] = unescape_spaces(t);
    }
    if (m.types[i] == TokenType::Normal || m.types[i] == TokenType::UserDefined)
      m.text_to_id.emplace(byte_level ? m.token_bytes[i] : t, int32_t(i));
  }

  m.byte_ids.fill(-1);
  for (int b = 0; b < 256; ++b) {
    if (byte_level) {
      auto it = m.token_to_id.find(byte_level_encode(std::string(1, char(b))));
      if (it != m.token_to_id.end()) m.byte_ids[b] = it->second;
      continue;
    }
    // llama.cpp's byte_to_token: <0xNN>, else the one-byte token.
    static const char* hex = "0123456789ABCDEF";
    const std::string name = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
    auto it = m.token_to_id.find(name);
    if (it == m.token_to_id.end()) it = m.token_to_id.find(std::string(1, char(b)));
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
  m.scores = std::move(scores);
  m.spm_words_apart = true;
  for (const auto& [text, id] : m.text_to_id) {
    for (size_t at = text.find(kSpaceMarker, 1); at != std::string::npos;
         at = text.find(kSpaceMarker, at + 1))
      if (at < kSpaceMarker.size() ||
          text.compare(at - kSpaceMarker.size(), kSpaceMarker.size(), kSpaceMarker) != 0)
        m.spm_words_apart = false;
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
    if (m.types[i] == TokenType::Control || m.types[i] == TokenType::UserDefined ||
        m.types[i] == TokenType::Unknown)
      m.added_by_first_byte[uint8_t(tokens[i][0])].push_back(int32_t(i));
  }
  for (auto& ids : m.added_by_first_byte)
    std::stable_sort(ids.begin(), ids.end(),
                     [&](int32_t a, int32_t b) { return tokens[a].size() > tokens[b].size(); });
  m.tokens = std::move(tokens);
  return model;
}

void append_unknown_character(std::string_view character, const Model& m,
                              std::vector<int32_t>& out) {
  bool all_bytes = m.options.byte_fallback;
  for (const unsigned char b : character) all_bytes = all_bytes && m.byte_ids[b] >= 0;
  if (all_bytes) {
    for (const unsigned char b : character) out.push_back(m.byte_ids[b]);
  } else if (m.special.unk >= 0) {
    out.push_back(m.special.unk);
  }
}

namespace {

// Pieces already encoded in this call; natural text repeats most of its words.
class PieceCache {
 public:
  // Appends the ids of `piece`; encode_piece(piece, ids) appends them the first time it is seen.
  template <typename F>
  void encode(std::string_view piece, std::vector<int32_t>& out, F&& encode_piece) {
    if (const auto it = spans_.find(piece); it != spans_.end()) {
      const auto [begin, size] = it->second;
      out.insert(out.end(), ids_.begin() + begin, ids_.begin() + begin + size);
      return;
    }
    const size_t begin = ids_.size();
    encode_piece(piece, ids_);
    spans_.emplace(std::string(piece), std::pair{begin, ids_.size() - begin});
    out.insert(out.end(), ids_.begin() + begin, ids_.end());
  }

 private:
  std::unordered_map<std::string, std::pair<size_t, size_t>, StringHash, std::equal_to<>> spans_;
  std::vector<int32_t> ids_;
};

// BPE of one pre-tokenizer piece.
void encode_bpe_piece(std::string_view piece, const Model& m, BpeMerger& merger,
                      std::vector<int32_t>& initial, std::vector<int32_t>& out) {
  if (m.options.ignore_merges) {
    if (const auto whole = m.text_to_id.find(piece); whole != m.text_to_id.end()) {
      out.push_back(whole->second);
      return;
    }
  }
  initial.clear();
  if (m.options.byte_level) {
    for (const unsigned char b : piece)
      if (m.byte_ids[b] >= 0) initial.push_back(m.byte_ids[b]);
  } else {
    size_t subpart;
    for (size_t i = 0; i < piece.size();) {
      const size_t len = utf8_sequence_length(piece, i, &subpart);
      WICK_ASSERT(len != 0);  // the caller made the text valid
      const std::string_view c = piece.substr(i, len);
      if (const auto t = m.text_to_id.find(c); t != m.text_to_id.end())
        initial.push_back(t->second);
      else
        append_unknown_character(c, m, initial);
      i += len;
    }
  }
  merger.merge(initial, m.merges, out);
}

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

namespace {

std::vector<std::pair<std::string, std::string>> split_merges(
    const std::vector<std::string>& merges, const char* op) {
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
  return pairs;
}

}  // namespace

Tokenizer Tokenizer::from_vocab(std::vector<std::string> tokens, std::vector<std::string> merges,
                                std::vector<int32_t> token_types, SpecialTokens special,
                                std::string_view pre_tokenizer) {
  using namespace tokenizer_detail;
  constexpr const char* op = "Tokenizer::from_vocab";
  const auto pre = llama_cpp_pre_tokenizer(pre_tokenizer);
  if (!pre)
    fail(ErrorKind::Unsupported, op, "unknown pre-tokenizer '", io::excerpt(pre_tokenizer),
         "' (known: ", llama_cpp_pre_tokenizer_names(), ")");
  ModelOptions options;
  options.ignore_merges = pre->ignore_merges;
  options.pre = make_regex_pre_tokenizer(pre->regexes);
  return Tokenizer(build_model(std::move(options), std::move(tokens), split_merges(merges, op), {},
                               token_types, special, op));
}

Tokenizer Tokenizer::from_spm_vocab(std::vector<std::string> tokens, std::vector<float> scores,
                                    std::vector<int32_t> token_types, SpecialTokens special,
                                    bool add_space_prefix) {
  using namespace tokenizer_detail;
  ModelOptions options;
  options.kind = ModelKind::Spm;
  options.byte_level = false;
  options.escape_spaces = true;
  options.byte_fallback = true;
  options.space_prefix = add_space_prefix ? SpacePrefix::EverySegment : SpacePrefix::None;
  return Tokenizer(build_model(std::move(options), std::move(tokens), {}, std::move(scores),
                               token_types, special, "Tokenizer::from_spm_vocab"));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool allow_special) const {
  using namespace tokenizer_detail;
  const Model& m = *model_;
  const ModelOptions& o = m.options;
  std::string valid;
  if (!utf8_is_valid(text)) {
    valid = utf8_make_valid(text);
    text = valid;
  }
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  BpeMerger bpe;
  SpmMerger spm;
  PieceCache cache;
  std::vector<std::pair<size_t, size_t>> pieces, scratch;
  std::vector<int32_t> initial;
  std::string normalized;
  const auto encode_plain = [&](size_t begin, size_t end) {
    if (begin == end) return;
    std::string_view segment = text.substr(begin, end - begin);
    const bool prefix = o.space_prefix == SpacePrefix::EverySegment ||
                        (o.space_prefix == SpacePrefix::FirstSegment && begin == 0);
    if (prefix || o.escape_spaces) {
      normalized.clear();
      if (prefix) normalized += ' ';
      normalized += segment;
      if (o.escape_spaces) normalized = escape_spaces(normalized);
      segment = normalized;
    }
    if (o.kind == ModelKind::Spm) {
      if (!m.spm_words_apart) {
        spm.encode(segment, m, out);
        return;
      }
      // No token holds a '▁' after another character, so no merge crosses the place before such
      // a '▁': each word is merged alone (and once per distinct word).
      for (size_t start = 0; start < segment.size();) {
        size_t end = segment.find(kSpaceMarker, start + 1);
        while (end != std::string_view::npos && end >= kSpaceMarker.size() &&
               segment.compare(end - kSpaceMarker.size(), kSpaceMarker.size(), kSpaceMarker) == 0)
          end = segment.find(kSpaceMarker, end + 1);
        if (end == std::string_view::npos) end = segment.size();
        cache.encode(
            segment.substr(start, end - start), out,
            [&](std::string_view word, std::vector<int32_t>& ids) { spm.encode(word, m, ids); });
        start = end;
      }
      return;
    }
    pieces.clear();
    o.pre.split(segment, pieces, scratch);
    for (const auto& [b, e] : pieces) {
      const std::string_view piece = segment.substr(b, e - b);
      if (piece.size() == 1 && o.byte_level) {  // no merge possible
        if (const int32_t id = m.byte_ids[uint8_t(piece[0])]; id >= 0) out.push_back(id);
        continue;
      }
      cache.encode(piece, out, [&](std::string_view p, std::vector<int32_t>& ids) {
        encode_bpe_piece(p, m, bpe, initial, ids);
      });
    }
  };
  size_t plain_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    const int32_t id = match_added(m, text, pos, allow_special);
    if (id < 0) {
      ++pos;
      continue;
    }
    encode_plain(plain_start, pos);
    out.push_back(id);
    pos += m.tokens[id].size();
    plain_start = pos;
  }
  encode_plain(plain_start, text.size());
  return out;
}

namespace tokenizer_detail {

// The bytes token `id` adds to a decoding. `at_start`: nothing has been emitted yet, so the space
// a SentencePiece-style vocabulary put before the text is dropped (as its decoders do).
std::string_view token_output(const Model& m, int32_t id, bool& at_start) {
  std::string_view bytes = m.token_bytes[id];
  if (at_start && m.options.space_prefix != SpacePrefix::None && m.types[id] == TokenType::Normal &&
      !bytes.empty() && bytes[0] == ' ')
    bytes.remove_prefix(1);
  at_start = false;
  return bytes;
}

}  // namespace tokenizer_detail

std::string Tokenizer::decode_bytes(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  bool at_start = true;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size())
      fail(ErrorKind::OutOfRange, "Tokenizer::decode", "token id ", id,
           " outside the vocabulary of ", vocab_size());
    if (skip_special && model_->types[id] == TokenType::Control) continue;
    out += tokenizer_detail::token_output(*model_, id, at_start);
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
  auto it = model_->token_to_id.find(token);
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
  pending_ += token_output(*model_, id, at_start_);
  const size_t complete = utf8_complete_prefix(pending_);
  std::string out = utf8_make_valid(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string TokenStreamer::finish() {
  std::string out = tokenizer_detail::utf8_make_valid(pending_);
  pending_.clear();
  at_start_ = true;
  return out;
}

}  // namespace wick

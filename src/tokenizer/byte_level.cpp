#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/unicode.h"

namespace wick::tokenizer_detail {
namespace {

bool stands_for_itself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Alphabet {
  std::array<char32_t, 256> to_cp{};
  std::array<int16_t, 324> to_byte{};  // every alphabet code point is < 256 + 68
  Alphabet() {
    to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      to_cp[b] = stands_for_itself(b) ? char32_t(b) : next++;
      to_byte[to_cp[b]] = int16_t(b);
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

char32_t byte_to_codepoint(uint8_t byte) {
  return alphabet().to_cp[byte];
}

int codepoint_to_byte(char32_t cp) {
  return cp < alphabet().to_byte.size() ? alphabet().to_byte[cp] : -1;
}

bool byte_level_decode(std::string_view s, std::string& out) {
  std::string bytes;
  bytes.reserve(s.size());
  size_t subpart;
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence_length(s, i, &subpart);
    if (len == 0) return false;
    const int b = codepoint_to_byte(utf8_decode(s, i, len));
    if (b < 0) return false;
    bytes += char(b);
    i += len;
  }
  out = std::move(bytes);
  return true;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) utf8_append(out, byte_to_codepoint(b));
  return out;
}

}  // namespace wick::tokenizer_detail

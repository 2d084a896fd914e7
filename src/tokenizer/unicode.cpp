#include "tokenizer/unicode.h"

#include <algorithm>

namespace wick::tokenizer_detail {

CodepointClass codepoint_class(char32_t cp) {
  // ASCII first: most text is, and a table lookup beats the binary search.
  static const auto ascii = [] {
    struct Table {
      CodepointClass cls[128];
    } t{};
    for (char32_t c = 0; c < 128; ++c) {
      auto it = std::upper_bound(kCodepointRanges, kCodepointRanges + kCodepointRangeCount, c,
                                 [](char32_t v, const CodepointRange& r) { return v < r.first; });
      t.cls[c] = (it - 1)->cls;
    }
    return t;
  }();
  if (cp < 128) return ascii.cls[cp];
  auto it = std::upper_bound(kCodepointRanges, kCodepointRanges + kCodepointRangeCount, cp,
                             [](char32_t v, const CodepointRange& r) { return v < r.first; });
  return (it - 1)->cls;
}

bool is_digits_numeric(char32_t cp, CodepointClass cls) {
  if (cls == kNumber) return true;
  if (cp < 0x11DE0) return false;
  return std::find(kDigitsOnlyNumbers, kDigitsOnlyNumbers + kDigitsOnlyNumberCount, cp) !=
         kDigitsOnlyNumbers + kDigitsOnlyNumberCount;
}

namespace {
inline bool is_continuation(unsigned char b) {
  return (b & 0xC0) == 0x80;
}
}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t i, size_t* subpart) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  const unsigned char b0 = p[i];
  *subpart = 1;
  if (b0 < 0x80) return 1;
  size_t need;
  // The second byte's allowed range excludes overlongs, surrogates and code points past U+10FFFF
  // (Unicode Table 3-7), so a bad second byte ends the ill-formed subpart at one byte.
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;  // 0x80..0xC1, 0xF5..0xFF never start a sequence
  }
  for (size_t k = 1; k < need; ++k) {
    if (i + k >= n) return 0;
    const unsigned char b = p[i + k];
    const bool ok = k == 1 ? (b >= lo && b <= hi) : is_continuation(b);
    if (!ok) return 0;
    *subpart = k + 1;
  }
  return need;
}

char32_t utf8_decode(std::string_view s, size_t i, size_t len) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  switch (len) {
    case 1:
      return p[0];
    case 2:
      return (char32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F);
    case 3:
      return (char32_t(p[0] & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    default:
      return (char32_t(p[0] & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) |
             (char32_t(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
  }
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

bool utf8_is_valid(std::string_view s) {
  size_t subpart;
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const size_t len = utf8_sequence_length(s, i, &subpart);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string utf8_make_valid(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  size_t subpart;
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence_length(s, i, &subpart);
    if (len == 0) {
      utf8_append(out, kReplacementChar);
      i += subpart;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

size_t utf8_complete_prefix(std::string_view s) {
  // Only the last three bytes can belong to a sequence that is cut short.
  const size_t n = s.size();
  const size_t from = n > 3 ? n - 3 : 0;
  size_t subpart;
  for (size_t i = from; i < n; ++i) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    if (b < 0xC2 || b > 0xF4) continue;  // not a lead byte
    const size_t len = utf8_sequence_length(s, i, &subpart);
    // Invalid only for lack of bytes: every byte so far fits, the sequence runs past the end.
    if (len == 0 && i + subpart == n) return i;
  }
  return n;
}

}  // namespace wick::tokenizer_detail

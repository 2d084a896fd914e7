// UTF-8 decoding with the standard replacement policy, and the code point classes the GPT-2 split
// regex needs (\p{L}, \p{N}, \s), from the generated unicode_tables.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wick::tokenizer_detail {

enum CodepointClass : uint8_t { kOther = 0, kLetter = 1, kNumber = 2, kSpace = 3 };

struct CodepointRange {
  char32_t first;  // the class holds from here to the next range's first
  CodepointClass cls;
};
extern const CodepointRange kCodepointRanges[];
extern const size_t kCodepointRangeCount;
// Numbers that HF's Digits step (Rust char::is_numeric, a newer Unicode) knows but the regex does
// not.
extern const char32_t kDigitsOnlyNumbers[];
extern const size_t kDigitsOnlyNumberCount;

CodepointClass codepoint_class(char32_t cp);
// Rust's char::is_numeric, as HF's Digits pre-tokenizer uses it.
bool is_digits_numeric(char32_t cp, CodepointClass cls);

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Length of the valid UTF-8 sequence at s[i], or 0 if the bytes there are not one. `subpart` gets
// the length of the maximal ill-formed subpart (>= 1) when invalid: the bytes one U+FFFD replaces.
size_t utf8_sequence_length(std::string_view s, size_t i, size_t* subpart);
// Decodes the valid sequence of length len at s[i].
char32_t utf8_decode(std::string_view s, size_t i, size_t len);
void utf8_append(std::string& out, char32_t cp);
// True if every byte of s belongs to a valid sequence.
bool utf8_is_valid(std::string_view s);
// s with each maximal ill-formed subpart replaced by U+FFFD.
std::string utf8_make_valid(std::string_view s);
// Length of the longest prefix of s that does not end inside a sequence that may still complete.
size_t utf8_complete_prefix(std::string_view s);

}  // namespace wick::tokenizer_detail

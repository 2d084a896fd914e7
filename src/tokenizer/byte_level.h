// GPT-2's byte-level alphabet: each byte 0..255 stands for one printable code point, so that a BPE
// vocabulary of printable strings covers arbitrary bytes. Printable Latin-1 bytes stand for
// themselves; the other 68 take U+0100.. in byte order (space -> 'Ġ' U+0120, '\n' -> 'Ċ' U+010A).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wick::tokenizer_detail {

char32_t byte_to_codepoint(uint8_t byte);
// The byte a code point stands for, or -1 if it is not in the alphabet.
int codepoint_to_byte(char32_t cp);
// "Ġthe" -> " the". False (out untouched) if some character is outside the alphabet or s is not
// UTF-8.
bool byte_level_decode(std::string_view s, std::string& out);
// " the" -> "Ġthe".
std::string byte_level_encode(std::string_view bytes);

}  // namespace wick::tokenizer_detail

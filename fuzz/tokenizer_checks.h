// What the tokenizer fuzz targets ask of every tokenizer that loads: a fixed text (ASCII, spaces,
// tabs, digits, special-token spellings, multi-byte and invalid UTF-8) encodes, with and without
// special tokens, to ids inside the vocabulary, and those ids decode.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "wick/tokenizer.h"

inline void check_encode_decode(const wick::Tokenizer& tok, const char* target) {
  static const std::string text =
      "Hello, world! 12345 <|im_start|>user\n  tabs\tand   spaces \xc3\xa9\xe4\xb8\xad\xf0\x9f\x98"
      "\x80 ok\xff<s></s>";
  for (const bool special : {false, true}) {
    const std::vector<int32_t> ids = tok.encode(text, special);
    for (const int32_t id : ids) {
      if (id < 0 || id >= tok.vocab_size()) {
        std::fprintf(stderr, "%s: encode gave id %d, outside the vocabulary of %d\n", target, id,
                     tok.vocab_size());
        std::abort();
      }
    }
    (void)tok.decode(ids, !special);
  }
}

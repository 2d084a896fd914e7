// Checked reads of GGUF metadata for the model loaders. Every value is range-checked as read (in
// int64 or double), before anything narrows it; each failure is Error(Parse) naming the op, the
// file, the key and the value as stored ("i32 -1", "f32 nan").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "wick/gguf.h"

namespace wick::models {

// An integer key (any GGUF integer type; bool is refused) in [lo, hi]. Absent: `fallback`, or
// Error(Parse) when there is none.
int64_t int_key(const GgufFile& f, const char* op, std::string_view key, int64_t lo, int64_t hi,
                std::optional<int64_t> fallback = std::nullopt);

// A float key (f32 or f64) that is finite and in [lo, hi] (lo excluded when `lo_open`; hi may be
// infinity).
double float_key(const GgufFile& f, const char* op, std::string_view key, double lo, double hi,
                 bool lo_open, std::optional<double> fallback = std::nullopt);

// True for the keys naming a special token: tokenizer.ggml.<role>_token_id.
bool is_token_id_key(std::string_view key);

}  // namespace wick::models

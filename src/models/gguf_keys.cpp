#include "models/gguf_keys.h"

#include <cmath>

namespace wick::models {

int64_t int_key(const GgufFile& f, const char* op, std::string_view key, int64_t lo, int64_t hi,
                std::optional<int64_t> fallback) {
  const GgufValue* v = f.find(key);
  if (!v) {
    if (fallback) return *fallback;
    fail(ErrorKind::Parse, op, f.name(), ": no key ", key);
  }
  const auto bad = [&] {
    fail(ErrorKind::Parse, op, f.name(), ": ", key, " is ", v->str(2), ", want an integer in [", lo,
         ", ", hi, "]");
  };
  if (v->is<bool>() || v->is<float>() || v->is<double>() || v->is<std::string>() ||
      v->is<GgufArray>())
    bad();
  if (v->is<uint64_t>() && v->as<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) bad();
  const int64_t x = v->to_int();
  if (x < lo || x > hi) bad();
  return x;
}

double float_key(const GgufFile& f, const char* op, std::string_view key, double lo, double hi,
                 bool lo_open, std::optional<double> fallback) {
  const GgufValue* v = f.find(key);
  if (!v) {
    if (fallback) return *fallback;
    fail(ErrorKind::Parse, op, f.name(), ": no key ", key);
  }
  const auto bad = [&] {
    if (std::isinf(hi))
      fail(ErrorKind::Parse, op, f.name(), ": ", key, " is ", v->str(2), ", want a finite number ",
           lo_open ? "> " : ">= ", lo);
    fail(ErrorKind::Parse, op, f.name(), ": ", key, " is ", v->str(2), ", want a finite number in ",
         lo_open ? "(" : "[", lo, ", ", hi, "]");
  };
  if (!v->is<float>() && !v->is<double>()) bad();
  const double x = v->to_float();
  if (!std::isfinite(x) || x < lo || (lo_open && x == lo) || x > hi) bad();
  return x;
}

bool is_token_id_key(std::string_view key) {
  constexpr std::string_view prefix = "tokenizer.ggml.", suffix = "_token_id";
  return key.size() > prefix.size() + suffix.size() && key.starts_with(prefix) &&
         key.ends_with(suffix);
}

}  // namespace wick::models

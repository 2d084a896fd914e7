#include "wick/config.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace wick {

#ifndef WICK_VERSION
#define WICK_VERSION "0.1.0"
#endif

const char* version() {
  return WICK_VERSION;
}

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

// "a,b,..." as integers (parse_int each); nothing when any piece is not one.
std::optional<std::vector<int64_t>> parse_int_list(std::string_view s) {
  std::vector<int64_t> out;
  for (;;) {
    const size_t comma = s.find(',');
    int64_t x = 0;
    if (!parse_int(s.substr(0, comma), x)) return std::nullopt;
    out.push_back(x);
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}

uint64_t parse_bytes(std::string_view s) {
  if (s.empty()) return 0;
  uint64_t mul = 1;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
  if (last == 'K' || last == 'M' || last == 'G') {
    mul = last == 'K' ? (1ull << 10) : last == 'M' ? (1ull << 20) : (1ull << 30);
    s.remove_suffix(1);
  }
  int64_t v;
  return parse_int(s, v) ? static_cast<uint64_t>(v) * mul : 0;
}

Knobs read_knobs() {
  Knobs k;
  // A value a knob does not take leaves its default, and is said once (knobs()).
  const auto ignore = [&k](const char* name, const char* value, const char* takes) {
    k.ignored.push_back(std::string(name) + "=" + value + " (it takes " + takes + ")");
  };
  if (const char* v = env("WICK_COMPUTE_PER_BUFFER")) {
    int64_t n;
    k.compute_per_buffer = parse_int(v, n) ? n : -1;
    if (k.compute_per_buffer < 0) ignore("WICK_COMPUTE_PER_BUFFER", v, "an op count >= 0");
  }
  const auto off = [](std::string_view s) {
    return s == "0" || s == "false" || s == "off" || s == "no";
  };
  if (const char* v = env("WICK_FAST_MATH")) k.fast_math = !off(v);
  if (const char* v = env("WICK_REPLAY")) k.replay = !off(v);
  if (const char* v = env("WICK_DECODE_CHUNK")) {
    int64_t n;
    if (off(v))
      k.decode_chunk = 1;
    else if (parse_int(v, n) && n >= 1 && n <= 256)
      k.decode_chunk = n;
    else
      ignore("WICK_DECODE_CHUNK", v, "a step count from 1 to 256, or 0/off");
  }
  if (const char* v = env("WICK_PROMPT_ROWS")) {
    int64_t n;
    if (off(v))
      k.prompt_rows = 0;
    else if (parse_int(v, n) && n >= 1)
      k.prompt_rows = n;
    else
      ignore("WICK_PROMPT_ROWS", v, "a token count >= 1, or 0/off");
  }
  if (const char* v = env("WICK_KERNEL_CACHE")) k.kernel_cache = v;
  if (const char* v = env("WICK_POOL_LIMIT")) {
    k.pool_limit = parse_bytes(v);
    if (k.pool_limit == 0 && std::string_view(v) != "0")
      ignore("WICK_POOL_LIMIT", v, "bytes with an optional K, M or G");
  }
  if (const char* v = env("WICK_DEVICE")) k.device = v;
  if (const char* v = env("WICK_QMATVEC_ROWS")) {
    int64_t n;
    k.qmatvec_rows = parse_int(v, n) && n >= 0 ? n : -1;
    if (k.qmatvec_rows < 0) ignore("WICK_QMATVEC_ROWS", v, "a row count");
  }
  if (const char* v = env("WICK_QMATVEC_SHAPE")) {
    const std::vector<int64_t> n = parse_int_list(v).value_or(std::vector<int64_t>{});
    auto shape_ok = [](int64_t t, int64_t r) {
      return t >= 32 && t <= 256 && t % 32 == 0 && r >= 1 && r <= 8 && t * r <= 1024;
    };
    if ((n.size() == 2 || n.size() == 4 || n.size() == 6) && shape_ok(n[0], n[1]) &&
        (n.size() < 4 || shape_ok(n[2], n[3])) && (n.size() < 6 || shape_ok(n[4], n[5]))) {
      k.qmatvec_threads = n[0];
      k.qmatvec_rows_per_group = n[1];
      if (n.size() >= 4) {
        k.qmatvec_wide_threads = n[2];
        k.qmatvec_wide_rows = n[3];
      }
      if (n.size() == 6) {
        k.qmatvec_mid_threads = n[4];
        k.qmatvec_mid_rows = n[5];
      }
    } else {
      ignore("WICK_QMATVEC_SHAPE", v,
             "threads,rows, threads,rows,wide_threads,wide_rows or those and mid_threads,mid_rows: "
             "threads 32..256 by 32, rows 1..8, threads x rows <= 1024");
    }
  }
  if (const char* v = env("WICK_QMATMUL_F16")) {
    int64_t n;
    k.qmatmul_f16_rows = off(v) ? 0 : std::string_view(v) == "on" ? -2 : parse_int(v, n) ? n : -1;
    if (k.qmatmul_f16_rows == -1) ignore("WICK_QMATMUL_F16", v, "a row count, on or 0/off");
  }
  if (const char* v = env("WICK_QMATVEC_FUSE")) {
    const std::vector<int64_t> n = parse_int_list(v).value_or(std::vector<int64_t>{});
    if (n.size() == 2 && n[0] >= 0 && n[1] >= 1) {
      k.qmatvec_fuse_rows = n[0];
      k.qmatvec_fuse_max_k = n[1];
    } else {
      k.qmatvec_fuse_rows = off(v) ? 0 : std::numeric_limits<int64_t>::max();
      k.qmatvec_fuse_max_k = -2;
    }
  }
  if (const char* v = env("WICK_QMATVEC_STAGE")) {
    int64_t n;
    k.qmatvec_stage_rows = off(v)                        ? 0
                           : std::string_view(v) == "on" ? 2
                           : parse_int(v, n) && n >= 1   ? n
                                                         : -1;
    if (k.qmatvec_stage_rows < 0) ignore("WICK_QMATVEC_STAGE", v, "a row count >= 1, on or 0/off");
  }
  if (const char* v = env("WICK_QMATVEC_MMA")) {
    const std::vector<int64_t> n = parse_int_list(v).value_or(std::vector<int64_t>{});
    const bool threads_ok =
        n.size() == 2 && (n[1] == 32 || n[1] == 64 || n[1] == 128 || n[1] == 256 || n[1] == 512);
    if (off(v)) {
      k.qmatvec_mma_rows = 0;
    } else if (std::string_view(v) == "on") {
      k.qmatvec_mma_rows = 2;
    } else if ((n.size() == 1 || threads_ok) && n[0] >= 1) {
      k.qmatvec_mma_rows = n[0];
      k.qmatvec_mma_threads = n.size() == 2 ? n[1] : 0;
    } else {
      ignore("WICK_QMATVEC_MMA", v,
             "rows or rows,threads (threads 32, 64, 128, 256 or 512), on or 0/off");
    }
  }
  if (const char* v = env("WICK_QMATVEC_ROPE")) k.qmatvec_rope = !off(v);
  if (const char* v = env("WICK_QMATVEC_ARGMAX")) k.qmatvec_argmax = off(v) ? 0 : 1;
  if (const char* v = env("WICK_QMATVEC_SWIGLU")) k.qmatvec_swiglu = off(v) ? 0 : 1;
  if (const char* v = env("WICK_ATTENTION_BLOCK")) {
    int64_t n;
    if (parse_int(v, n) && (n == 32 || n == 64 || n == 128 || n == 256))
      k.attention_block = n;
    else
      ignore("WICK_ATTENTION_BLOCK", v, "32, 64, 128 or 256");
  }
  if (const char* v = env("WICK_CUDA_PDL")) k.cuda_dependent_launch = !off(v);
  if (const char* v = env("WICK_VK_PROFILE")) k.vk_profile = !off(v);
  if (const char* v = env("WICK_VK_INT_DOT")) k.vk_int_dot = !off(v);
  if (const char* v = env("WICK_VK_COOP_SHAPE")) {
    const std::vector<int64_t> n = parse_int_list(v).value_or(std::vector<int64_t>{});
    if (n.size() == 2 && (n[0] == 64 || n[0] == 128) && (n[1] == 128 || n[1] == 256)) {
      k.vk_coop_tile = n[0];
      k.vk_coop_threads = n[1];
    } else {
      ignore("WICK_VK_COOP_SHAPE", v, "tile,threads: tile 64 or 128, threads 128 or 256");
    }
  }
  if (const char* v = env("WICK_VK_QUEUE")) {
    k.vk_universal_queue = std::string_view(v) == "universal";
    if (!k.vk_universal_queue && std::string_view(v) != "compute")
      ignore("WICK_VK_QUEUE", v, "universal or compute");
  }
  return k;
}

}  // namespace

const Knobs& knobs() {
  static const Knobs k = [] {
    Knobs read = read_knobs();
    for (const std::string& what : read.ignored)
      std::fprintf(stderr, "wick: ignoring %s\n", what.c_str());
    return read;
  }();
  return k;
}

std::vector<std::pair<std::string, std::string>> describe_knobs() {
  const Knobs& k = knobs();
  return {
      {"WICK_COMPUTE_PER_BUFFER",
       k.compute_per_buffer < 0 ? "default" : std::to_string(k.compute_per_buffer)},
      {"WICK_FAST_MATH", k.fast_math ? "on" : "off"},
      {"WICK_REPLAY", k.replay ? "on" : "off"},
      {"WICK_DECODE_CHUNK", std::to_string(k.decode_chunk)},
      {"WICK_PROMPT_ROWS", k.prompt_rows == 0 ? "off" : std::to_string(k.prompt_rows)},
      {"WICK_KERNEL_CACHE", k.kernel_cache.empty() ? "default" : k.kernel_cache},
      {"WICK_POOL_LIMIT", k.pool_limit == 0 ? "default" : std::to_string(k.pool_limit)},
      {"WICK_DEVICE", k.device.empty() ? "cpu" : k.device},
      {"WICK_QMATVEC_ROWS", k.qmatvec_rows < 0 ? "default" : std::to_string(k.qmatvec_rows)},
      {"WICK_QMATVEC_SHAPE",
       k.qmatvec_threads == 0
           ? "default"
           : std::to_string(k.qmatvec_threads) + "," + std::to_string(k.qmatvec_rows_per_group) +
                 (k.qmatvec_wide_threads == 0 ? ""
                                              : "," + std::to_string(k.qmatvec_wide_threads) + "," +
                                                    std::to_string(k.qmatvec_wide_rows)) +
                 (k.qmatvec_mid_threads == 0 ? ""
                                             : "," + std::to_string(k.qmatvec_mid_threads) + "," +
                                                   std::to_string(k.qmatvec_mid_rows))},
      {"WICK_QMATMUL_F16", k.qmatmul_f16_rows == -1   ? "default"
                           : k.qmatmul_f16_rows == -2 ? "on"
                           : k.qmatmul_f16_rows == 0  ? "off"
                                                      : std::to_string(k.qmatmul_f16_rows)},
      {"WICK_QMATVEC_FUSE",
       k.qmatvec_fuse_rows < 0    ? "default"
       : k.qmatvec_fuse_rows == 0 ? "off"
       : k.qmatvec_fuse_max_k == -2
           ? "on"
           : std::to_string(k.qmatvec_fuse_rows) + "," + std::to_string(k.qmatvec_fuse_max_k)},
      {"WICK_QMATVEC_STAGE", k.qmatvec_stage_rows < 0    ? "default"
                             : k.qmatvec_stage_rows == 0 ? "off"
                                                         : std::to_string(k.qmatvec_stage_rows)},
      {"WICK_QMATVEC_MMA",
       k.qmatvec_mma_rows < 0 ? "default"
       : k.qmatvec_mma_rows == 0
           ? "off"
           : std::to_string(k.qmatvec_mma_rows) +
                 (k.qmatvec_mma_threads > 0 ? "," + std::to_string(k.qmatvec_mma_threads) : "")},
      {"WICK_QMATVEC_ROPE", k.qmatvec_rope ? "on" : "off"},
      {"WICK_QMATVEC_ARGMAX", k.qmatvec_argmax < 0 ? "default"
                              : k.qmatvec_argmax   ? "on"
                                                   : "off"},
      {"WICK_QMATVEC_SWIGLU", k.qmatvec_swiglu < 0 ? "default"
                              : k.qmatvec_swiglu   ? "on"
                                                   : "off"},
      {"WICK_ATTENTION_BLOCK",
       k.attention_block == 0 ? "default" : std::to_string(k.attention_block)},
      {"WICK_CUDA_PDL", k.cuda_dependent_launch ? "on" : "off"},
      {"WICK_VK_PROFILE", k.vk_profile ? "on" : "off"},
      {"WICK_VK_COOP_SHAPE", k.vk_coop_tile == 0 ? "default"
                                                 : std::to_string(k.vk_coop_tile) + "," +
                                                       std::to_string(k.vk_coop_threads)},
      {"WICK_VK_INT_DOT", k.vk_int_dot ? "on" : "off"},
      {"WICK_VK_QUEUE", k.vk_universal_queue ? "universal" : "compute"},
  };
}

}  // namespace wick

// The benchmarks of `wick bench`: the seed's experiment programs (batch_mm, storage, queue,
// first) and wick's own speed goals (matmul, qmatmul, elementwise, overhead).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "args.h"
#include "wick/device.h"

namespace wick::cli {

struct BenchContext {
  std::string device_spec;      // "cpu", "vulkan:0", ...: parsed here and handed to child processes
  bool full = false;            // slow sizes too
  bool quick = false;           // small sizes, few runs
  std::string command;          // the command line as typed, for the report lines
  std::string model;            // gen: --model
  std::string save_model;       // gen: --save-model
  int64_t prompt_tokens = 128;  // gen: --prompt-tokens
  int64_t n_predict = 128;      // gen: -n
  bool json = false;            // gen: --json
  KvCacheType kv_type = KvCacheType::F16;  // gen: --kv-type
  int64_t batch = 0;                       // gen: --batch (0: one sequence only)
  std::string save_text;                   // tokenizer: --save-text
  std::ostream* out = nullptr;

  Device device() const { return Device::parse(device_spec); }
  std::ostream& os() const { return *out; }
};

// Each prints its title, report line and table(s); returns false when a check found a wrong
// answer. wick errors propagate.
bool bench_batch_mm(const BenchContext& ctx);
bool bench_storage(const BenchContext& ctx);
bool bench_queue(const BenchContext& ctx);
bool bench_first(const BenchContext& ctx);
bool bench_matmul(const BenchContext& ctx);
bool bench_gemm(const BenchContext& ctx);
bool bench_qmatmul(const BenchContext& ctx);
bool bench_elementwise(const BenchContext& ctx);
bool bench_overhead(const BenchContext& ctx);
bool bench_gen(const BenchContext& ctx);
bool bench_tokenizer(const BenchContext& ctx);

// The re-executed children of queue and first: tab-separated result lines on stdout.
void queue_worker(const BenchContext& ctx);
void first_worker(const BenchContext& ctx);

// `wick bench ...`: runs args.benches; the exit status.
int run_bench(const Args& args, const std::string& command);

// ---- helpers shared by the benchmarks ---------------------------------------------------------

// The spec that names `dev` on a command line ("cpu", "vulkan:0").
std::string device_spec(const Device& dev);
// "## name" and the report line.
void print_title(const BenchContext& ctx, const std::string& name);
// Arguments that re-run benchmark `name` as a worker on the same device.
std::vector<std::string> worker_args(const BenchContext& ctx, const std::string& name);
// Standard-normal floats from a fixed seed (host side, so creating inputs runs no device kernel).
std::vector<float> random_floats(size_t n, uint64_t seed);
// Runs f and returns ""; when the device lacks the op (Error of kind Unsupported) returns the
// error message instead, so a table shows it in its row and goes on. Other errors propagate.
std::string unsupported_reason(const std::function<void()>& f);
// Notes printed under a table ("Note: ...."), each once.
void add_note(std::vector<std::string>& notes, const std::string& note);
void print_notes(std::ostream& os, const std::vector<std::string>& notes);  // and a blank line
// Splits a worker's output into lines of tab-separated fields.
std::vector<std::vector<std::string>> parse_worker_output(const std::string& text);

}  // namespace wick::cli

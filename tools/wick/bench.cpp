// The `wick bench` driver and the helpers the benchmarks share.
#include "bench.h"

#include <algorithm>
#include <iostream>
#include <random>
#include <sstream>

#include "report.h"
#include "wick/wick.h"

namespace wick::cli {

std::string device_spec(const Device& dev) {
  if (dev.is_cpu()) return "cpu";
  return std::string(device_kind_name(dev.kind())) + ":" + std::to_string(dev.ordinal());
}

void print_title(const BenchContext& ctx, const std::string& name) {
  ctx.os() << "## " << name << "\n\n" << report_line(ctx.device().name(), ctx.command) << "\n\n";
}

std::vector<std::string> worker_args(const BenchContext& ctx, const std::string& name) {
  std::vector<std::string> a = {"bench", name, "--worker", "--device", ctx.device_spec};
  if (ctx.quick) a.push_back("--quick");
  return a;
}

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

std::string unsupported_reason(const std::function<void()>& f) {
  try {
    f();
    return "";
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Unsupported) throw;
    return e.what();
  }
}

void add_note(std::vector<std::string>& notes, const std::string& note) {
  if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
}

void print_notes(std::ostream& os, const std::vector<std::string>& notes) {
  for (const std::string& n : notes) os << "Note: " << n << ".\n";
  os << "\n";
}

std::vector<std::vector<std::string>> parse_worker_output(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
      fields.push_back(line.substr(start, tab - start));
    fields.push_back(line.substr(start));
    rows.push_back(std::move(fields));
  }
  return rows;
}

namespace {

using BenchFn = bool (*)(const BenchContext&);

BenchFn bench_by_name(const std::string& name) {
  if (name == "batch_mm") return bench_batch_mm;
  if (name == "storage") return bench_storage;
  if (name == "queue") return bench_queue;
  if (name == "first") return bench_first;
  if (name == "matmul") return bench_matmul;
  if (name == "gemm") return bench_gemm;
  if (name == "qmatmul") return bench_qmatmul;
  if (name == "elementwise") return bench_elementwise;
  if (name == "overhead") return bench_overhead;
  if (name == "gen") return bench_gen;
  if (name == "tokenizer") return bench_tokenizer;
  throw UsageError("unknown benchmark '" + name + "'");
}

}  // namespace

int run_bench(const Args& args, const std::string& command) {
  BenchContext ctx;
  ctx.full = args.full;
  ctx.quick = args.quick;
  ctx.command = command;
  ctx.model = args.model;
  ctx.save_model = args.save_model;
  ctx.kv_type = args.kv_type;
  ctx.batch = args.batch;
  ctx.save_text = args.save_text;
  ctx.prompt_tokens = args.prompt_tokens;
  ctx.n_predict = args.n_predict;
  ctx.json = args.json;
  ctx.out = &std::cout;
  if (args.worker) {
    // A child times its own device opening: do not open it here.
    ctx.device_spec = args.device;
    if (args.benches[0] == "queue")
      queue_worker(ctx);
    else
      first_worker(ctx);
    return 0;
  }
  ctx.device_spec = device_spec(device_from_flag(args.device));
  bool all_ok = true;
  for (const std::string& name : args.benches) {
    try {
      if (!bench_by_name(name)(ctx)) {
        all_ok = false;
        std::cerr << "wick: bench " << name << ": a check found a wrong result\n";
      }
    } catch (const Error& e) {
      all_ok = false;
      std::cout << "FAILED: " << e.what() << "\n\n";
      std::cout.flush();
      std::cerr << "wick: bench " << name << ": " << e.what() << "\n";
    }
    std::cout.flush();
  }
  return all_ok ? 0 : 1;
}

}  // namespace wick::cli

// The seed's metal_queue: x = x.add(y) in a loop, then synchronize, then read back, timed in
// three phases, under each WICK_COMPUTE_PER_BUFFER setting. The knob is read once per process,
// so each setting runs in a re-executed child (`wick bench queue --worker`).
#include <cstdio>
#include <iostream>
#include <optional>

#include "bench.h"
#include "process.h"
#include "report.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

constexpr const char* kKnob = "WICK_COMPUTE_PER_BUFFER";

struct Phases {
  double encode = 0, sync = 0, read = 0, total = 0;
  float x0 = 0;
};

Phases run_chain(const Device& dev, int64_t len, int steps, bool sync_first) {
  Tensor x = Tensor::zeros({len}, DType::F32, dev);
  const Tensor y = Tensor::ones({len}, DType::F32, dev);
  dev.synchronize();
  Phases p;
  const auto t0 = Clock::now();
  for (int i = 0; i < steps; i++) x = x.add(y);
  p.encode = ms_since(t0);
  const auto t1 = Clock::now();
  if (sync_first) dev.synchronize();
  p.sync = ms_since(t1);
  const auto t2 = Clock::now();
  const std::vector<float> v = x.to_vec<float>();
  p.read = ms_since(t2);
  p.total = p.encode + p.sync + p.read;
  p.x0 = v[0];
  return p;
}

struct Case {
  int64_t len;
  int steps;
  bool sync_first;
  int later_runs;
};

std::vector<Case> queue_cases(bool quick) {
  if (quick) return {{16384, 20, false, 1}, {16384, 20, true, 1}, {1024, 200, false, 1}};
  return {{1 << 20, 500, false, 2}, {1 << 20, 500, true, 2}, {1024, 5000, false, 5}};
}

std::string knob_value_read() {
  for (const auto& [name, value] : describe_knobs())
    if (name == kKnob) return value;
  return "?";
}

// The seed's line: "len=1048576  steps=500   encode     0.78 ms  synchronize ..."
std::string seed_line(const std::vector<std::string>& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "len=%-8s steps=%-5s encode %8.2f ms  synchronize %8.2f ms  to_vec %8.2f ms  "
                "total %8.2f ms  x[0]=%s",
                r[1].c_str(), r[2].c_str(), std::stod(r[9]), std::stod(r[10]), std::stod(r[11]),
                std::stod(r[12]), r[13].c_str());
  return buf;
}

}  // namespace

void queue_worker(const BenchContext& ctx) {
  const Device dev = ctx.device();
  std::cout << "knob\t" << knob_value_read() << "\n";
  run_chain(dev, 1024, 10, true);  // warm-up: compiles/loads what the chain needs
  for (const Case& c : queue_cases(ctx.quick)) {
    const Phases first = run_chain(dev, c.len, c.steps, c.sync_first);
    std::vector<double> enc, syn, rd, tot;
    float x0 = first.x0;
    int runs = 0;
    // On a busy machine one run can take seconds: stop once the budget is spent (with no later
    // run at all when the first alone spent it; the "median" is then the first run's).
    const double budget_ms = ctx.quick ? 50 : 2000;
    double spent = first.total;
    for (int r = 0; r < c.later_runs && spent < budget_ms; r++) {
      const Phases p = run_chain(dev, c.len, c.steps, c.sync_first);
      enc.push_back(p.encode);
      syn.push_back(p.sync);
      rd.push_back(p.read);
      tot.push_back(p.total);
      spent += p.total;
      if (p.x0 != static_cast<float>(c.steps)) x0 = p.x0;  // report a wrong run, if any
    }
    if (tot.empty()) {
      enc.push_back(first.encode);
      syn.push_back(first.sync);
      rd.push_back(first.read);
      tot.push_back(first.total);
    } else {
      runs = static_cast<int>(tot.size());
    }
    std::cout << "row\t" << c.len << '\t' << c.steps << '\t' << c.sync_first << '\t' << runs << '\t'
              << first.encode << '\t' << first.sync << '\t' << first.read << '\t' << first.total
              << '\t' << median(enc) << '\t' << median(syn) << '\t' << median(rd) << '\t'
              << median(tot) << '\t' << x0 << "\n";
  }
}

bool bench_queue(const BenchContext& ctx) {
  print_title(ctx, "queue");
  std::ostream& os = ctx.os();
  const std::vector<std::optional<std::string>> settings = {std::nullopt, "1",    "0",
                                                            "10",         "1000", "abc"};
  const std::vector<Case> cases = queue_cases(ctx.quick);
  const Case& big = cases[1];
  const Case& small = cases[2];
  Table summary(
      {kKnob, "read as",
       std::to_string(big.steps) + " × add " + std::to_string(big.len) + ": encode / total",
       "first run total",
       std::to_string(small.steps) + " × add " + std::to_string(small.len) + ": total", "µs/op",
       "first run total"});
  bool ok = true;
  for (const auto& setting : settings) {
    const std::string label = setting ? "\"" + *setting + "\"" : "unset";
    const auto rows =
        parse_worker_output(run_self(worker_args(ctx, "queue"), {{kKnob, setting}},
                                     std::string("queue with ") + kKnob + "=" + label));
    std::string read_as = "?";
    std::vector<std::vector<std::string>> results;
    for (const auto& r : rows) {
      if (r[0] == "knob" && r.size() == 2) read_as = r[1];
      if (r[0] == "row" && r.size() == 14) results.push_back(r);
    }
    if (results.size() != cases.size())
      fail(ErrorKind::Internal, "bench queue", "worker for ", kKnob, "=", label, " printed ",
           results.size(), " result rows, expected ", cases.size());
    os << kKnob << "=" << label << " (wick read: " << read_as << ")\n";
    for (size_t i = 0; i < results.size(); i++) {
      const auto& r = results[i];
      const bool right = std::stod(r[13]) == cases[i].steps;
      ok &= right;
      const double per_op_us = std::stod(r[12]) * 1000.0 / cases[i].steps;
      os << seed_line(r) << (right ? "" : " WRONG") << "  (" << fixed(per_op_us, 2) << " µs/op; "
         << (r[4] == "0" ? "first run only" : "median of " + r[4]) << "; first run total "
         << fixed(std::stod(r[8]), 2) << " ms)\n";
    }
    const auto& b = results[1];
    const auto& s = results[2];
    summary.add_row(
        {label, read_as, fixed(std::stod(b[9]), 2) + " / " + fixed(std::stod(b[12]), 2) + " ms",
         fixed(std::stod(b[8]), 2) + " ms", fixed(std::stod(s[12]), 2) + " ms",
         fixed(std::stod(s[12]) * 1000.0 / small.steps, 2), fixed(std::stod(s[8]), 2) + " ms"});
  }
  os << "\nMedians of up to " << big.later_runs << " (large) and " << small.later_runs
     << " (small) runs after a first run, each phase's median taken on its own; each setting in"
        " a fresh process. µs/op = median total / steps.\n\n";
  summary.print(os);
  os << "\n";
  return ok;
}

}  // namespace wick::cli

// What every benchmark shares: timing (steady_clock, medians, first run apart from the rest),
// number formatting, markdown tables, and the line naming machine, device, date and command.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace wick::cli {

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Milliseconds taken by f() (f must wait for the device itself).
template <typename F>
double time_ms(F&& f) {
  const auto t0 = Clock::now();
  f();
  return ms_since(t0);
}

double median(std::vector<double> v);

// The first (cold) run of something, and the median of the runs after it.
struct Timing {
  double first_ms = 0;
  double median_ms = 0;  // of the later runs (the first run when there were none)
  int later_runs = 0;
};

// Runs f once, then again until `max_later` more runs or until `budget_ms` is spent (at least
// `min_later` more runs whatever the budget). warm_ms > 0: between the first run and the timed
// ones, f runs untimed for that long (GPUs clock down while the host works and take that long to
// clock up again).
template <typename F>
Timing measure(F&& f, int min_later, int max_later, double budget_ms, double warm_ms = 0) {
  Timing t;
  t.first_ms = time_ms(f);
  for (double warm = 0; warm < warm_ms;) warm += time_ms(f);
  std::vector<double> later;
  double spent = t.first_ms;
  while (static_cast<int>(later.size()) < max_later &&
         (static_cast<int>(later.size()) < min_later || spent < budget_ms)) {
    later.push_back(time_ms(f));
    spent += later.back();
  }
  t.later_runs = static_cast<int>(later.size());
  t.median_ms = later.empty() ? t.first_ms : median(later);
  return t;
}

// Fixed-point text of v with `decimals` digits.
std::string fixed(double v, int decimals);

// A markdown table whose columns are padded to line up in a terminal too.
class Table {
 public:
  explicit Table(std::vector<std::string> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells);
  void print(std::ostream& os) const;

 private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> rows_;
};

struct MachineFacts {
  std::string cpu_model;  // from /proc/cpuinfo
  unsigned hardware_threads = 0;
  int cpu_threads = 0;       // threads wick's CPU kernels use
  std::string load_average;  // 1-minute load from /proc/loadavg: other work on a shared machine
};
MachineFacts machine_facts();
// "Intel(R) Xeon(R) ..., 2 hardware threads, 2 CPU threads, load 0.31"
std::string describe_machine();
// The BLAS wick's CPU matmul uses (and the bench's anchor): "OpenBLAS 0.3.21 ... (core Prescott,
// 2 threads)". OpenBLAS picks its kernels by CPU model; an unknown model gets slow generic ones.
std::string describe_blas();
// This process's resident memory from /proc/self/status, in bytes: the peak (VmHWM) and now
// (VmRSS); -1 where the file or the line is missing.
struct ProcessMemory {
  int64_t peak_rss = -1, rss = -1;
};
ProcessMemory process_memory();
// Current UTC time, "2026-11-30 14:05 UTC".
std::string utc_now();

// The line printed under every benchmark's title:
// "machine: ... · device: ... · date: ... · command: ...".
std::string report_line(const std::string& device_name, const std::string& command);

}  // namespace wick::cli

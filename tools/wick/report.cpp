#include "report.h"

#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include "cpu/parallel.h"

namespace wick::cli {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  if (v.size() % 2) return v[mid];
  const double hi = v[mid];
  return (*std::max_element(v.begin(), v.begin() + static_cast<long>(mid)) + hi) / 2;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void Table::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

namespace {
// Display width: UTF-8 continuation bytes take no column.
size_t width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}
}  // namespace

void Table::print(std::ostream& os) const {
  std::vector<size_t> w(columns_.size());
  for (size_t i = 0; i < columns_.size(); i++) {
    w[i] = std::max<size_t>(3, width(columns_[i]));
    for (const auto& r : rows_) w[i] = std::max(w[i], width(r[i]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    os << '|';
    for (size_t i = 0; i < cells.size(); i++)
      os << ' ' << cells[i] << std::string(w[i] - width(cells[i]), ' ') << " |";
    os << '\n';
  };
  line(columns_);
  os << '|';
  for (size_t i = 0; i < w.size(); i++) os << ' ' << std::string(w[i], '-') << " |";
  os << '\n';
  for (const auto& r : rows_) line(r);
}

MachineFacts machine_facts() {
  MachineFacts f;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos)
        f.cpu_model = line.substr(line.find_first_not_of(' ', colon + 1));
      break;
    }
  }
  if (f.cpu_model.empty()) f.cpu_model = "unknown CPU";
  f.hardware_threads = std::thread::hardware_concurrency();
  f.cpu_threads = wick::cpu::max_threads();
  std::ifstream load("/proc/loadavg");
  if (!(load >> f.load_average)) f.load_average = "unknown";
  return f;
}

std::string describe_machine() {
  const MachineFacts f = machine_facts();
  return f.cpu_model + ", " + std::to_string(f.hardware_threads) + " hardware threads, " +
         std::to_string(f.cpu_threads) + " CPU threads, load " + f.load_average;
}

std::string describe_blas() {
  std::string config = openblas_get_config();
  while (!config.empty() && config.back() == ' ') config.pop_back();
  return config + " (core " + openblas_get_corename() + ", " +
         std::to_string(openblas_get_num_threads()) + " threads)";
}

ProcessMemory process_memory() {
  ProcessMemory m;
  std::ifstream in("/proc/self/status");
  std::string key;
  int64_t kib = 0;
  // Lines "VmHWM:   123456 kB".
  while (in >> key) {
    if (key == "VmHWM:" && in >> kib) m.peak_rss = kib * 1024;
    if (key == "VmRSS:" && in >> kib) m.rss = kib * 1024;
  }
  return m;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string report_line(const std::string& device_name, const std::string& command) {
  return "machine: " + describe_machine() + " · device: " + device_name + " · date: " + utc_now() +
         " · command: " + command;
}

}  // namespace wick::cli

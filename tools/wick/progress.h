// The "loading PATH [#####     ]  42%" line a slow model load draws on stderr. It is ended with
// a newline however the load ends (the destructor runs while a failure unwinds), so that an error
// printed next starts on its own line rather than after the bar.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

namespace wick::cli {

class ProgressLine {
 public:
  // Draws nothing for loads quicker than `delay_ms`, and nothing at all unless `enabled` (the CLI
  // passes whether `out` is a terminal: a bar in a log or a pipe is noise).
  ProgressLine(std::FILE* out, std::string label, double delay_ms = 250, bool enabled = true)
      : out_(out), label_(std::move(label)), delay_ms_(delay_ms), enabled_(enabled) {}
  ~ProgressLine() { finish(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // (done, total) bytes after `elapsed_ms` since the load began; redraws when the percent changes.
  void update(uint64_t done, uint64_t total, double elapsed_ms) {
    if (!enabled_ || (!drawn_ && elapsed_ms < delay_ms_)) return;
    const int percent = total ? static_cast<int>(100 * done / total) : 100;
    if (percent == last_percent_) return;
    last_percent_ = percent;
    drawn_ = true;
    constexpr int kWidth = 30;
    const int filled = percent * kWidth / 100;
    std::fprintf(out_, "\rloading %s [%.*s%*s] %3d%%", label_.c_str(), filled,
                 "##############################", kWidth - filled, "", percent);
    std::fflush(out_);
  }

  // Ends the line when one was drawn; later calls do nothing.
  void finish() {
    if (!drawn_) return;
    std::fputc('\n', out_);
    std::fflush(out_);
    drawn_ = false;
  }

 private:
  std::FILE* out_;
  std::string label_;
  double delay_ms_;
  bool enabled_;
  bool drawn_ = false;
  int last_percent_ = -1;
};

}  // namespace wick::cli

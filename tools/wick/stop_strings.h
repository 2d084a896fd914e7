// --stop: generation ends when the decoded text contains one of the stop strings, and the stop
// string is not printed. Text is held back while its end could be the beginning of a stop string,
// so that nothing of a stop string split across tokens is printed before it is recognised.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace wick::cli {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops) : stops_(std::move(stops)) {
    std::erase(stops_, std::string());
  }

  // Adds decoded text; returns what may be printed now. After a stop string is found, returns the
  // text before it and stopped() is true; later calls return nothing.
  std::string push(const std::string& text) {
    if (stopped_) return {};
    held_ += text;
    size_t first = std::string::npos;
    for (const std::string& s : stops_) first = std::min(first, held_.find(s));
    if (first != std::string::npos) {
      stopped_ = true;
      std::string out = held_.substr(0, first);
      held_.clear();
      return out;
    }
    // Hold the longest end of the text that begins a stop string.
    size_t keep = 0;
    for (const std::string& s : stops_)
      for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; n--)
        if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
          keep = n;
          break;
        }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }

  // The text still held back (generation ended without completing a stop string).
  std::string finish() {
    std::string out;
    out.swap(held_);
    return out;
  }

  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace wick::cli

// Tensor::to_string: the values as PyTorch prints them (nested brackets, elision, one format
// for every element), then Tensor::str().
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/tensor_impl.h"

namespace wick {

namespace {

constexpr int64_t kThreshold = 1000;  // more elements than this print summarised
constexpr int64_t kEdgeItems = 3;     // per end of a summarised dim
constexpr size_t kLineWidth = 80;

// The values to print: the whole tensor, or (summarised) every dim longer than 2 * kEdgeItems
// cut to its first and last kEdgeItems, so only those are read from the device.
Tensor printed_part(const Tensor& t, bool summarise) {
  Tensor part = t;
  if (!summarise) return part;
  for (size_t d = 0; d < t.rank(); d++) {
    const int64_t n = t.dim(static_cast<int64_t>(d));
    if (n <= 2 * kEdgeItems) continue;
    const auto dim = static_cast<int64_t>(d);
    part = Tensor::cat(
        {part.narrow(dim, 0, kEdgeItems), part.narrow(dim, n - kEdgeItems, kEdgeItems)}, dim);
  }
  return part;
}

// One format for every printed element, chosen from all of them as PyTorch's _Formatter does.
class Formatter {
 public:
  explicit Formatter(const std::vector<double>& v) {
    double lo = INFINITY, hi = 0;
    bool integral = true;
    for (double x : v) {
      if (!std::isfinite(x)) continue;
      integral = integral && x == std::nearbyint(x);
      const double a = std::abs(x);
      if (a == 0) continue;
      lo = std::min(lo, a);
      hi = std::max(hi, a);
    }
    if (hi == 0) lo = hi;  // only zeros (or no finite values)
    if (integral) {
      style_ = hi > 1e8 ? Style::Sci : Style::Integral;
    } else {
      style_ = hi / lo > 1000 || hi > 1e8 || lo < 1e-4 ? Style::Sci : Style::Fixed;
    }
  }

  std::string format(double x) const {
    char buf[64];
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    switch (style_) {
      case Style::Integral:
        std::snprintf(buf, sizeof buf, "%.0f.", x);
        break;
      case Style::Fixed:
        std::snprintf(buf, sizeof buf, "%.4f", x);
        break;
      case Style::Sci:
        std::snprintf(buf, sizeof buf, "%.4e", x);
        break;
    }
    return buf;
  }

 private:
  enum class Style { Integral, Fixed, Sci };
  Style style_ = Style::Fixed;
};

struct Printer {
  const Shape& shape;  // of the printed part
  std::vector<std::string> cells;
  size_t width = 0;
  bool summarise;
  const Shape& full;  // of the tensor: which dims were cut

  // Elements of `dim` starting at flat index `offset` of the printed part, indented by `indent`.
  std::string block(size_t dim, int64_t offset, size_t indent) const {
    const int64_t n = shape[dim];
    const bool cut = summarise && full[dim] > 2 * kEdgeItems;
    int64_t inner = 1;
    for (size_t d = dim + 1; d < shape.rank(); d++) inner *= shape[d];
    std::vector<std::string> items;
    for (int64_t i = 0; i < n; i++) {
      if (cut && i == kEdgeItems) items.push_back("...");
      items.push_back(dim + 1 == shape.rank() ? pad(cells[static_cast<size_t>(offset + i)])
                                              : block(dim + 1, offset + i * inner, indent + 1));
    }
    std::string out = "[";
    if (dim + 1 == shape.rank()) {
      // Last dim: as many elements per line as fit the line width.
      const size_t per_line =
          std::max<size_t>(1, (kLineWidth - std::min(kLineWidth, indent)) / (width + 2));
      for (size_t i = 0; i < items.size(); i++) {
        if (i > 0 && i % per_line == 0)
          out.append(",\n").append(indent + 1, ' ');
        else if (i > 0)
          out.append(", ");
        out.append(items[i]);
      }
    } else {
      // Rows of a matrix on consecutive lines, matrices a blank line apart, and so on.
      for (size_t i = 0; i < items.size(); i++) {
        if (i > 0) out.append(",").append(shape.rank() - dim - 1, '\n').append(indent + 1, ' ');
        out.append(items[i]);
      }
    }
    return out + "]";
  }

  std::string pad(const std::string& s) const {
    return s == "..." || s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
  }
};

}  // namespace

std::string Tensor::to_string() const {
  if (!impl_) return str();
  const bool summarise = numel() > kThreshold;
  const Tensor part = printed_part(*this, summarise);
  std::vector<std::string> cells;
  if (is_float(dtype())) {
    const std::vector<double> v = part.to_vec<double>();
    const Formatter f(v);
    for (double x : v) cells.push_back(f.format(x));
  } else {
    // i64 beyond 2^53 would not survive a double.
    for (int64_t x : part.to_vec<int64_t>()) cells.push_back(std::to_string(x));
  }
  size_t width = 0;
  for (const std::string& c : cells) width = std::max(width, c.size());
  std::string body;
  if (rank() == 0) {
    body = cells.at(0);
  } else if (numel() == 0) {
    body = "[]";
  } else {
    const Printer p{part.shape(), std::move(cells), width, summarise, shape()};
    body = p.block(0, 0, 0);
  }
  return body + "\n" + str();
}

}  // namespace wick

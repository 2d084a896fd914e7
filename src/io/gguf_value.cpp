// GgufValue: the metadata variant (construction checks, conversions, printing, equality).
#include <cstring>
#include <limits>
#include <sstream>

#include "io/file.h"
#include "io/gguf_format.h"

namespace wick {

const char* gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
      return "u8";
    case GgufValueType::I8:
      return "i8";
    case GgufValueType::U16:
      return "u16";
    case GgufValueType::I16:
      return "i16";
    case GgufValueType::U32:
      return "u32";
    case GgufValueType::I32:
      return "i32";
    case GgufValueType::F32:
      return "f32";
    case GgufValueType::Bool:
      return "bool";
    case GgufValueType::String:
      return "string";
    case GgufValueType::Array:
      return "array";
    case GgufValueType::U64:
      return "u64";
    case GgufValueType::I64:
      return "i64";
    case GgufValueType::F64:
      return "f64";
  }
  return "unknown";
}

GgufValue GgufValue::array(GgufValueType elem, std::vector<GgufValue> items) {
  if (!gguf::valid_value_type(static_cast<uint32_t>(elem)))
    fail(ErrorKind::DType, "GgufValue::array", "unknown element type id ",
         static_cast<uint32_t>(elem));
  for (size_t i = 0; i < items.size(); i++)
    if (items[i].type() != elem)
      fail(ErrorKind::DType, "GgufValue::array", "item ", i, " has type ",
           gguf_value_type_name(items[i].type()), " in an array of ", gguf_value_type_name(elem));
  return GgufValue(GgufArray{elem, std::move(items)});
}

void GgufValue::type_mismatch(GgufValueType wanted) const {
  fail(ErrorKind::Parse, "gguf", "value ", str(2), " has type ", gguf_value_type_name(type()),
       ", expected ", gguf_value_type_name(wanted));
}

void GgufValue::array_type_mismatch(GgufValueType wanted) const {
  fail(ErrorKind::Parse, "gguf", "value ", str(2), " is not an array of ",
       gguf_value_type_name(wanted));
}

int64_t GgufValue::to_int() const {
  return std::visit(
      [&](const auto& x) -> int64_t {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, uint64_t>) {
          if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            fail(ErrorKind::Parse, "gguf", "u64 value ", x, " does not fit in an i64");
          return static_cast<int64_t>(x);
        } else if constexpr (std::is_integral_v<T>) {
          return static_cast<int64_t>(x);
        } else {
          fail(ErrorKind::Parse, "gguf", "value ", str(2), " is not an integer");
        }
      },
      v_);
}

double GgufValue::to_float() const {
  if (const float* f = std::get_if<float>(&v_)) return *f;
  if (const double* d = std::get_if<double>(&v_)) return *d;
  fail(ErrorKind::Parse, "gguf", "value ", str(2), " is not a float");
}

namespace {

void print_item(std::ostream& os, const GgufValue& v, size_t max_items) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          os << '"' << io::excerpt(x) << '"';
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          os << "array<" << gguf_value_type_name(x.type) << ">[" << x.items.size() << "] {";
          for (size_t i = 0; i < x.items.size() && i < max_items; i++) {
            if (i) os << ", ";
            print_item(os, x.items[i], max_items);
          }
          if (x.items.size() > max_items) os << ", ...";
          os << "}";
        } else if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "true" : "false");
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
          os << static_cast<int>(x);
        } else if constexpr (std::is_floating_point_v<T>) {
          os.precision(std::numeric_limits<T>::max_digits10);
          os << x;
        } else {
          os << x;
        }
      },
      v.variant());
}

template <typename T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace

std::string GgufValue::str(size_t max_items) const {
  std::ostringstream os;
  if (type() != GgufValueType::Array) os << gguf_value_type_name(type()) << ' ';
  print_item(os, *this, max_items);
  return os.str();
}

bool GgufValue::operator==(const GgufValue& o) const {
  if (v_.index() != o.v_.index()) return false;
  return std::visit(
      [&](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(o.v_);
        if constexpr (std::is_same_v<T, GgufArray>)
          return x.type == y.type && x.items == y.items;
        else if constexpr (std::is_floating_point_v<T>)
          return same_bits(x, y);
        else
          return x == y;
      },
      v_);
}

bool GgufTensorInfo::is_quantized() const {
  const QuantTypeInfo* info = quant_type_info(type);
  return info && info->block_elems > 1;
}

}  // namespace wick

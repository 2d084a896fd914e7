#include "wick/error.h"

namespace wick {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Shape:
      return "shape";
    case ErrorKind::DType:
      return "dtype";
    case ErrorKind::Device:
      return "device";
    case ErrorKind::OutOfRange:
      return "out of range";
    case ErrorKind::Unsupported:
      return "unsupported";
    case ErrorKind::Io:
      return "io";
    case ErrorKind::Parse:
      return "parse";
    case ErrorKind::OutOfMemory:
      return "out of memory";
    case ErrorKind::Internal:
      return "internal";
  }
  return "unknown";
}

Error::Error(ErrorKind kind, const std::string& message)
    : std::runtime_error(std::string(error_kind_name(kind)) + " error: " + message), kind_(kind) {}

}  // namespace wick

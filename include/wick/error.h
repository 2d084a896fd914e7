// wick's one exception type. Every failure a user can cause (bad shapes, dtypes, devices, indices,
// files) is reported as wick::Error with a kind and a message naming the op and the shapes involved.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace wick {

enum class ErrorKind {
  Shape,        // shapes do not fit the op
  DType,        // dtype not taken by the op, or dtypes disagree
  Device,       // tensors on different devices, or device not available
  OutOfRange,   // index, dim or narrow range outside the tensor
  Unsupported,  // the op/dtype is not implemented by this backend
  Io,           // file system errors
  Parse,        // malformed file contents, or a custom kernel's source that does not compile
  OutOfMemory,  // an allocation the device (or wick's size limit, 2^62 bytes) cannot hold;
                // the message names the bytes asked for and the limit where one is known
  Internal,     // a wick bug or a driver failure
};

const char* error_kind_name(ErrorKind kind);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message);
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}
}  // namespace detail

// Throws wick::Error(kind, "<op>: <message parts...>").
template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, const char* op, Args&&... parts) {
  throw Error(kind, detail::concat(op, ": ", std::forward<Args>(parts)...));
}

}  // namespace wick

// Checks an invariant that only a wick bug can break.
#define WICK_ASSERT(cond)                                                                    \
  do {                                                                                       \
    if (!(cond))                                                                             \
      ::wick::fail(::wick::ErrorKind::Internal, "assertion", #cond, " at ", __FILE__, ":", \
                   __LINE__);                                                                \
  } while (0)

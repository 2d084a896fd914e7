// Shared libraries opened at run time (the CUDA driver, NVRTC): wick links neither, so one binary
// runs on machines without them and can say why CUDA is absent.
#pragma once

#include <initializer_list>
#include <string>

namespace wick::cuda {

class DynamicLibrary {
 public:
  // Opens the first of `names` (sonames or paths) that loads; otherwise loaded() is false and
  // why() lists what each attempt said. A loaded library stays loaded until the process exits
  // (threads and kernels may use it until then).
  DynamicLibrary(std::initializer_list<const char*> names);
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  const std::string& name() const { return name_; }  // the name that loaded
  const std::string& why() const { return why_; }

  // Points `fn` at the library's function `symbol`; false (and why() says so) when it is missing.
  template <typename F>
  bool bind(F*& fn, const char* symbol) {
    fn = reinterpret_cast<F*>(address(symbol));
    return fn != nullptr;
  }

 private:
  void* address(const char* symbol);

  void* handle_ = nullptr;
  std::string name_, why_;
};

}  // namespace wick::cuda

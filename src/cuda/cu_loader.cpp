#include "cuda/cu_loader.h"

#include <dlfcn.h>

namespace wick::cuda {

DynamicLibrary::DynamicLibrary(std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (!n || !*n) continue;
    handle_ = dlopen(n, RTLD_NOW | RTLD_LOCAL);
    if (handle_) {
      name_ = n;
      return;
    }
    const char* err = dlerror();
    why_ += why_.empty() ? "" : "; ";
    why_ += err ? err : n;
  }
  if (why_.empty()) why_ = "no library name to try";
}

void* DynamicLibrary::address(const char* symbol) {
  if (!handle_) return nullptr;
  void* p = dlsym(handle_, symbol);
  if (!p) {
    why_ += why_.empty() ? "" : "; ";
    why_ += name_ + " has no " + symbol;
  }
  return p;
}

}  // namespace wick::cuda

#include "backend/backend.h"

#include <atomic>

#include "wick/custom_kernel.h"

namespace wick::backend {

namespace {
std::atomic<uint64_t> g_next_device_id{1};
std::atomic<bool> g_poison{false};
}  // namespace

BackendDevice::BackendDevice() : id_(g_next_device_id.fetch_add(1)) {}

void set_poison_allocations(bool on) {
  g_poison.store(on);
}
bool poison_allocations() {
  return g_poison.load(std::memory_order_relaxed);
}

std::unique_ptr<CapturedWork> BackendDevice::capture(const std::function<void()>&) {
  fail(ErrorKind::Unsupported, "capture", name(),
       " runs ops as they come: there is nothing to record for replay (GPU devices only)");
}

void BackendDevice::custom_kernel(const KernelSpec& spec, const std::vector<const Storage*>&,
                                  const std::vector<Storage*>&, const std::vector<uint32_t>&,
                                  uint64_t) {
  fail(ErrorKind::Unsupported, ("custom kernel " + spec.name).c_str(),
       "custom kernels need a GPU device, not ", name());
}

void BackendDevice::qmatmul_rows(View, const Storage&, QuantType, int64_t, int64_t, Storage&) {
  fail(ErrorKind::Unsupported, "QMatMul::rows", name(),
       " has no kernel for rows of quantized weights (QMatMul dequantizes them on the host)");
}

StoragePtr BackendDevice::adopt_memory(DType, size_t, std::byte*, std::shared_ptr<void>) {
  fail(ErrorKind::Device, "from_blob", name(),
       " cannot use other code's memory in place (its memory has no address other code can "
       "use): wrap host memory on the cpu and copy it with to_device");
}

const char* unary_op_name(UnaryOp op) {
  static const char* names[] = {"neg",      "abs",  "exp",    "log",     "sin",   "cos",
                                "tanh",     "sqrt", "sqr",    "recip",   "relu",  "gelu",
                                "gelu_erf", "erf",  "silu",   "sigmoid", "floor", "ceil",
                                "round",    "sign", "affine", "powf",    "elu",   "clamp"};
  return names[static_cast<int>(op)];
}

const char* binary_op_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "maximum", "minimum", "pow"};
  return names[static_cast<int>(op)];
}

const char* cmp_op_name(CmpOp op) {
  static const char* names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return names[static_cast<int>(op)];
}

const char* reduce_op_name(ReduceOp op) {
  static const char* names[] = {"sum", "max", "min", "argmax", "argmin", "mean"};
  return names[static_cast<int>(op)];
}

void check_span(const Layout& l, const Storage& s, const char* op) {
  const auto [lo, hi] = l.storage_span();
  if (l.numel() > 0 && (lo < 0 || hi > static_cast<int64_t>(s.numel())))
    fail(ErrorKind::Internal, op, "layout ", l.str(), " outside storage of ", s.numel(),
         " elements");
}

}  // namespace wick::backend

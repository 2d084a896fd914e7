// The CPU backend: the default device and the reference every other backend is tested against.
// Op families live in their own files: memory.cpp (alloc, copies, casts, fill, random),
// unary.cpp and binary.cpp (element-wise), reduce.cpp (reductions, softmax, norms, rope, sort),
// attention.cpp (decode attention), matmul.cpp, indexing.cpp.
#pragma once

#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>

#include "backend/backend.h"

namespace wick::cpu {

// Host memory: a heap block this storage frees, or external memory (a memory-mapped file) that
// `owner` keeps alive.
class CpuStorage final : public backend::Storage {
 public:
  // Takes ownership of a block from malloc/aligned_alloc.
  CpuStorage(backend::BackendDevice* dev, DType dt, size_t numel, std::byte* heap_block)
      : Storage(dev, dt, numel), data_(heap_block), owns_(true) {}
  CpuStorage(backend::BackendDevice* dev, DType dt, size_t numel, std::shared_ptr<void> owner,
             std::byte* data)
      : Storage(dev, dt, numel), owner_(std::move(owner)), data_(data) {}
  ~CpuStorage() override {
    if (owns_) std::free(data_);
  }
  std::byte* data() const { return data_; }
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }

 private:
  std::shared_ptr<void> owner_;
  std::byte* data_;
  bool owns_ = false;
};

inline const CpuStorage& cpu_storage(const backend::Storage& s) {
  return static_cast<const CpuStorage&>(s);
}
inline CpuStorage& cpu_storage(backend::Storage& s) {
  return static_cast<CpuStorage&>(s);
}

// Typed pointer to a view's storage (element 0 of the storage, not of the view).
template <typename T>
const T* data_of(backend::View v) {
  return cpu_storage(v.storage).as<T>();
}

// Element offset of batch b's matrix in l: the last two dims are the matrix, the batches count
// the others in row-major order.
inline int64_t matrix_batch_offset(const Layout& l, int64_t b) {
  int64_t off = l.start_offset;
  for (size_t i = l.rank() - 2; i-- > 0 && b > 0;) {
    off += (b % l.shape[i]) * l.strides[i];
    b /= l.shape[i];
  }
  return off;
}

// f16/bf16 a @ b for at most a few dozen rows of a, where b is the transpose of a matrix with
// contiguous rows (x @ W^T): dot products over W's rows as stored (half_matmul.cpp). False, and
// nothing written, where it does not apply.
bool half_matmul_few_rows(backend::View a, backend::View b, const backend::MatmulDims& d,
                          backend::Storage& dst);

class CpuDevice final : public backend::BackendDevice {
 public:
  CpuDevice();
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  int ordinal() const override { return 0; }
  std::string name() const override { return "cpu"; }

  // Wraps existing host memory (e.g. a mapped file) without copying; `owner` keeps it alive.
  backend::StoragePtr wrap(DType dt, size_t numel, std::shared_ptr<void> owner, std::byte* data);

  backend::StoragePtr adopt_memory(DType dt, size_t numel, std::byte* data,
                                   std::shared_ptr<void> owner) override {
    return wrap(dt, numel, std::move(owner), data);
  }
  std::byte* memory_address(const backend::Storage& s) override { return cpu_storage(s).data(); }
  backend::StoragePtr alloc(DType dt, size_t numel) override;
  backend::StoragePtr from_host(DType dt, const void* data, size_t numel) override;
  void to_host(backend::View src, void* dst, DType dst_dt) override;
  void synchronize() override {}

  void unary(backend::UnaryOp op, backend::UnaryParams p, backend::View x,
             backend::Storage& dst) override;
  void binary(backend::BinaryOp op, backend::View a, backend::View b,
              backend::Storage& dst) override;
  void compare(backend::CmpOp op, backend::View a, backend::View b, backend::Storage& dst) override;
  void where_cond(backend::View cond, backend::View on_true, backend::View on_false,
                  backend::Storage& dst) override;
  void cast(backend::View x, backend::Storage& dst) override;
  void copy_strided(backend::View src, backend::Storage& dst, const Layout& dst_layout) override;
  void fill(backend::Storage& dst, const Layout& dst_layout, double value) override;

  void reduce(backend::ReduceOp op, backend::View x, const std::vector<size_t>& dims,
              backend::Storage& dst) override;
  void softmax_last_dim(backend::View x, backend::Storage& dst) override;
  void log_softmax_last_dim(backend::View x, backend::Storage& dst) override;
  void rms_norm(backend::View x, backend::View alpha, double eps, backend::Storage& dst) override;
  void layer_norm(backend::View x, backend::View alpha, backend::View beta, double eps,
                  backend::Storage& dst) override;
  void rope(backend::View x, backend::View cos, backend::View sin, bool interleaved,
            backend::Storage& dst) override;
  void arg_sort_last_dim(backend::View x, bool ascending, backend::Storage& dst) override;

  void rope_kv_cache(backend::View q, backend::View k, backend::View v,
                     const backend::CacheView& k_cache, const backend::CacheView& v_cache,
                     const backend::RopeTableViews& tables, backend::View pos,
                     const backend::View* slots, bool interleaved,
                     backend::Storage& q_out) override;
  void attention_cached(backend::View q, backend::View k_cache, backend::View v_cache,
                        backend::View pos, const backend::View* slots,
                        const AttentionOptions& options, backend::Storage& dst) override;

  void matmul(backend::View a, backend::View b, const backend::MatmulDims& d,
              backend::Storage& dst) override;
  // Unsupported: QMatMul computes on the CPU itself (see backend.h).
  bool runs_qmatmul() const override { return false; }
  void qmatmul(backend::View x, const backend::QPrologue& prologue, const backend::Storage& wblocks,
               QuantType type, int64_t n_out, int64_t k, const backend::View* residual,
               backend::Storage& dst) override;

  void index_select(backend::View src, backend::View ids, size_t dim,
                    backend::Storage& dst) override;
  void gather(backend::View src, backend::View ids, size_t dim, backend::Storage& dst) override;
  void scatter_add(backend::Storage& dst, const Shape& dst_shape, backend::View ids,
                   backend::View src, size_t dim) override;
  void index_add(backend::Storage& dst, const Shape& dst_shape, backend::View ids,
                 backend::View src, size_t dim) override;

  void set_seed(uint64_t seed) override;
  void rand_uniform(backend::Storage& dst, double lo, double hi) override;
  void rand_normal(backend::Storage& dst, double mean, double std) override;

 private:
  std::mutex rng_mu_;
  std::mt19937_64 rng_;
};

}  // namespace wick::cpu

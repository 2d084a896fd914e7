// CPU matmul. f32/f64 go to OpenBLAS; f16/bf16 are widened to f32 for sgemm and rounded back
// once (x @ W^T for a few rows: dot products over W's rows, half_matmul.cpp); u8/u32/i64 use a
// plain i-k-j loop that wraps in the dtype, as numpy and PyTorch do.
//
// Operands arrive as (batch..., rows, cols) views with any strides. Each batch's matrix is found
// through the per-dim batch strides (the seed used one batch stride and read wrong memory for a
// narrowed batch dim). A matrix BLAS cannot read in place is first copied to a contiguous buffer.
// Debian 12's OpenBLAS (0.3.21) exports neither cblas_sgemm_batch nor cblas_sbgemm, so batches
// are separate calls and bf16 takes the f32 path.
#include <cblas.h>

#include <climits>
#include <optional>
#include <type_traits>

#include "cpu/cpu_device.h"
#include "cpu/parallel.h"

namespace wick::cpu {

using backend::MatmulDims;
using backend::Storage;
using backend::StoragePtr;
using backend::View;

namespace {

// Batches are spread over threads only for GEMMs that OpenBLAS 0.3.21 runs on one thread
// (m * n * k <= 65536 * 4, interface/gemm.c), so its threads and ours never share the cores,
// and that are not tiny: each call takes a lock inside OpenBLAS, and two threads issuing
// 8^3 or 16^3 GEMMs measured slower than one, while 28^3..64^3 ran 1.7-1.9x faster.
constexpr int64_t kBlasSingleThreadMnk = 65536 * 4;
constexpr int64_t kMinThreadedGemmMacs = 1 << 14;
// Multiply-adds per thread before batches are split over threads.
constexpr int64_t kBatchGrainMacs = 1 << 20;

// One operand as the kernels read it: its layout (the view's, or that of a packed copy) locates
// each batch's matrix through the per-dim batch strides.
struct MatrixOperand {
  const std::byte* data = nullptr;  // element 0 of the storage
  const Layout* layout = nullptr;
  int64_t row_stride = 0, col_stride = 0;
  StoragePtr packed;                        // a contiguous copy, when one was made
  std::shared_ptr<const Layout> packed_at;  // and its layout

  // Element offset of batch b's matrix, batches counted in row-major order of the batch dims.
  int64_t batch_offset(int64_t b) const { return matrix_batch_offset(*layout, b); }
};

MatrixOperand in_place(View v) {
  const size_t r = v.layout.rank();
  MatrixOperand op;
  op.data = cpu_storage(v.storage).data();
  op.layout = &v.layout;
  op.row_stride = v.layout.strides[r - 2];
  op.col_stride = v.layout.strides[r - 1];
  return op;
}

// A contiguous copy of v's distinct matrices, converted to dt. A broadcast batch dim is copied
// once and keeps stride 0, so a weight shared by every batch is not replicated.
MatrixOperand packed(CpuDevice& dev, View v, DType dt) {
  const Layout& l = v.layout;
  const size_t r = l.rank();
  Layout distinct = l;
  for (size_t i = 0; i + 2 < r; i++)
    if (l.strides[i] == 0) distinct.shape[i] = 1;
  StoragePtr s = dev.alloc(dt, static_cast<size_t>(distinct.numel()));
  dev.cast(View{v.storage, distinct}, *s);
  std::vector<int64_t> strides = distinct.shape.contiguous_strides();
  for (size_t i = 0; i + 2 < r; i++)
    if (l.strides[i] == 0) strides[i] = 0;
  auto at = std::make_shared<const Layout>(l.shape, strides, 0);
  return {cpu_storage(*s).data(), at.get(), strides[r - 2], strides[r - 1], s, at};
}

// How BLAS reads a rows x cols matrix: row-major with leading dim ld, or (transposed) its
// columns stored as rows. A size-1 dim is never stepped, so its stride may be anything.
struct BlasForm {
  bool transposed;
  int ld;
};

std::optional<BlasForm> blas_form(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const int64_t row_major_rs = rows == 1 ? cols : rs, row_major_cs = cols == 1 ? 1 : cs;
  if (row_major_cs == 1 && row_major_rs >= std::max<int64_t>(1, cols) && row_major_rs <= INT_MAX)
    return BlasForm{false, static_cast<int>(row_major_rs)};
  const int64_t trans_rs = rows == 1 ? 1 : rs, trans_cs = cols == 1 ? rows : cs;
  if (trans_rs == 1 && trans_cs >= std::max<int64_t>(1, rows) && trans_cs <= INT_MAX)
    return BlasForm{true, static_cast<int>(trans_cs)};
  return std::nullopt;
}

// v as T matrices BLAS can read: in place when the dtype and strides allow, else packed.
MatrixOperand blas_operand(CpuDevice& dev, View v, DType t, int64_t rows, int64_t cols,
                           BlasForm& form) {
  const size_t r = v.layout.rank();
  if (v.storage.dtype() == t) {
    if (auto f = blas_form(rows, cols, v.layout.strides[r - 2], v.layout.strides[r - 1])) {
      form = *f;
      return in_place(v);
    }
  }
  MatrixOperand op = packed(dev, v, t);
  form = *blas_form(rows, cols, op.row_stride, op.col_stride);
  return op;
}

template <typename T>
void blas_gemv(CBLAS_TRANSPOSE trans, int rows, int cols, const T* mat, int ld, const T* x,
               int incx, T* y) {
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemv(CblasRowMajor, trans, rows, cols, 1.0f, mat, ld, x, incx, 0.0f, y, 1);
  else
    cblas_dgemv(CblasRowMajor, trans, rows, cols, 1.0, mat, ld, x, incx, 0.0, y, 1);
}

// c = a @ b for one batch. A one-row or one-column product goes to GEMV: OpenBLAS 0.3.21 does
// not forward such GEMMs itself, and its GEMV measured 1.2-2.2x faster for them here.
template <typename T>
void blas_product(BlasForm fa, BlasForm fb, int m, int n, int k, const T* a, const T* b, T* c) {
  if (m == 1) {  // c = B^T a over a's one row; a's elements step by 1, or by ld if transposed
    const int inc = fa.transposed ? fa.ld : 1;
    if (fb.transposed)
      blas_gemv<T>(CblasNoTrans, n, k, b, fb.ld, a, inc, c);
    else
      blas_gemv<T>(CblasTrans, k, n, b, fb.ld, a, inc, c);
    return;
  }
  if (n == 1) {  // c = A b over b's one column
    const int inc = fb.transposed ? 1 : fb.ld;
    if (fa.transposed)
      blas_gemv<T>(CblasTrans, k, m, a, fa.ld, b, inc, c);
    else
      blas_gemv<T>(CblasNoTrans, m, k, a, fa.ld, b, inc, c);
    return;
  }
  const auto ta = fa.transposed ? CblasTrans : CblasNoTrans;
  const auto tb = fb.transposed ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, fa.ld, b, fb.ld, 0.0f, c, n);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, fa.ld, b, fb.ld, 0.0, c, n);
}

// c (contiguous batch x m x n, T = float or double) = a @ b through BLAS.
template <typename T>
void blas_matmul(CpuDevice& dev, View a, View b, const MatmulDims& d, T* c) {
  if (d.m > INT_MAX || d.n > INT_MAX || d.k > INT_MAX)
    fail(ErrorKind::Unsupported, "matmul", "dims m=", d.m, " n=", d.n, " k=", d.k,
         " exceed the BLAS int range");
  constexpr DType t = dtype_of<T>::value;
  BlasForm fa{}, fb{};
  const MatrixOperand oa = blas_operand(dev, a, t, d.m, d.k, fa);
  const MatrixOperand ob = blas_operand(dev, b, t, d.k, d.n, fb);
  const auto* pa = reinterpret_cast<const T*>(oa.data);
  const auto* pb = reinterpret_cast<const T*>(ob.data);
  const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = static_cast<int>(d.k);
  const auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; i++)
      blas_product<T>(fa, fb, m, n, k, pa + oa.batch_offset(i), pb + ob.batch_offset(i),
                      c + i * d.m * d.n);
  };
  const int64_t macs = d.m * d.n * d.k;
  if (d.batch > 1 && macs >= kMinThreadedGemmMacs && macs <= kBlasSingleThreadMnk)
    parallel_for(d.batch, std::max<int64_t>(1, kBatchGrainMacs / macs), run);
  else
    run(0, d.batch);
}

// f16/bf16: both operands widened to f32, one sgemm per batch into an f32 buffer, then one
// rounding per output element (no rounding of partial sums).
void widened_matmul(CpuDevice& dev, View a, View b, const MatmulDims& d, Storage& dst) {
  const size_t numel = static_cast<size_t>(d.batch * d.m * d.n);
  StoragePtr c32 = dev.alloc(DType::F32, numel);
  blas_matmul<float>(dev, a, b, d, cpu_storage(*c32).as<float>());
  const Layout flat = Layout::contiguous(Shape{static_cast<int64_t>(numel)});
  dev.cast(View{*c32, flat}, dst);
}

// Integer matmul wraps modulo 2^bits of the dtype. u8/u32 accumulate in u32 and i64 in u64:
// unsigned arithmetic wraps without UB, and the low bits of the sum are the same either way.
template <typename T>
using WrapAcc = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;

template <typename T>
void int_matmul(CpuDevice& dev, View a, View b, const MatmulDims& d, T* c) {
  using Acc = WrapAcc<T>;
  // a is read through its strides; b's rows must be contiguous for the inner loop.
  const MatrixOperand oa = in_place(a);
  const size_t rb = b.layout.rank();
  const MatrixOperand ob =
      b.layout.strides[rb - 1] == 1 || d.n == 1 ? in_place(b) : packed(dev, b, b.storage.dtype());
  const auto* pa = reinterpret_cast<const T*>(oa.data);
  const auto* pb = reinterpret_cast<const T*>(ob.data);
  const int64_t m = d.m, n = d.n, k = d.k;
  // Rows [r0, r1) of the (batch * m) x n output, one row at a time: c[r] = sum_p a[r][p] * b[p].
  const auto rows = [&](int64_t r0, int64_t r1) {
    std::vector<Acc> acc(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; r++) {
      const T* arow = pa + oa.batch_offset(r / m) + (r % m) * oa.row_stride;
      const T* bmat = pb + ob.batch_offset(r / m);
      std::fill(acc.begin(), acc.end(), Acc{0});
      for (int64_t p = 0; p < k; p++) {
        const Acc x = static_cast<Acc>(arow[p * oa.col_stride]);
        const T* brow = bmat + p * ob.row_stride;
        for (int64_t j = 0; j < n; j++)
          acc[static_cast<size_t>(j)] += x * static_cast<Acc>(brow[j]);
      }
      T* crow = c + r * n;
      for (int64_t j = 0; j < n; j++) crow[j] = static_cast<T>(acc[static_cast<size_t>(j)]);
    }
  };
  parallel_for(d.batch * m, std::max<int64_t>(1, kBatchGrainMacs / (n * k)), rows);
}

}  // namespace

void CpuDevice::matmul(View a, View b, const MatmulDims& d, Storage& dst) {
  WICK_ASSERT(a.storage.dtype() == b.storage.dtype() && a.storage.dtype() == dst.dtype());
  WICK_ASSERT(a.layout.rank() >= 2 && a.layout.rank() == b.layout.rank());
  auto& out = cpu_storage(dst);
  switch (dst.dtype()) {
    case DType::F32:
      return blas_matmul<float>(*this, a, b, d, out.as<float>());
    case DType::F64:
      return blas_matmul<double>(*this, a, b, d, out.as<double>());
    case DType::F16:
    case DType::BF16:
      if (half_matmul_few_rows(a, b, d, dst)) return;
      return widened_matmul(*this, a, b, d, dst);
    case DType::U8:
      return int_matmul<uint8_t>(*this, a, b, d, out.as<uint8_t>());
    case DType::U32:
      return int_matmul<uint32_t>(*this, a, b, d, out.as<uint32_t>());
    case DType::I64:
      return int_matmul<int64_t>(*this, a, b, d, out.as<int64_t>());
    case DType::I32:
      return int_matmul<int32_t>(*this, a, b, d, out.as<int32_t>());
  }
  fail(ErrorKind::Unsupported, "matmul", "dtype ", dst.dtype(), " on cpu");
}

void CpuDevice::qmatmul(View, const backend::QPrologue&, const Storage&, QuantType type,
                        int64_t n_out, int64_t k, const View*, Storage&) {
  const QuantTypeInfo* info = quant_type_info(type);
  fail(ErrorKind::Unsupported, "qmatmul", "the cpu backend has no quantized matmul for weight [",
       n_out, ", ", k, "] of ", info ? info->name : "an unknown type",
       ": QMatMul multiplies on the cpu itself, with the weights it prepared");
}

}  // namespace wick::cpu

// NumPy and DLPack interop without copies on the CPU: wick.from_numpy / wick.from_dlpack adopt
// the other array's memory (Tensor::from_blob, the array kept alive by the tensor), and
// np.asarray(t), t.numpy() and t.__dlpack__() view the tensor's storage (the tensor kept alive by
// the view).
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include "wick_py.h"

namespace wick::py {

namespace {

namespace dl = nb::dlpack;

DType dtype_from_dlpack(dl::dtype t, const char* op) {
  using C = dl::dtype_code;
  if (t.lanes == 1) {
    const auto code = static_cast<C>(t.code);
    if (code == C::Float && t.bits == 32) return DType::F32;
    if (code == C::Float && t.bits == 16) return DType::F16;
    if (code == C::Float && t.bits == 64) return DType::F64;
    if (code == C::Bfloat && t.bits == 16) return DType::BF16;
    if (code == C::UInt && t.bits == 8) return DType::U8;
    if (code == C::UInt && t.bits == 32) return DType::U32;
    if (code == C::Int && t.bits == 64) return DType::I64;
    if (code == C::Int && t.bits == 32) return DType::I32;
  }
  fail(ErrorKind::DType, op, "no wick dtype for DLPack type code ", int(t.code), ", ", int(t.bits),
       " bits, ", t.lanes, " lanes (wick has f32, f16, bf16, f64, u8, u32, i64, i32)");
}

dl::dtype dlpack_dtype(DType dt) {
  using C = dl::dtype_code;
  const auto bits = static_cast<uint8_t>(dtype_size(dt) * 8);
  switch (dt) {
    case DType::F32:
    case DType::F16:
    case DType::F64:
      return {static_cast<uint8_t>(C::Float), bits, 1};
    case DType::BF16:
      return {static_cast<uint8_t>(C::Bfloat), bits, 1};
    case DType::U8:
    case DType::U32:
      return {static_cast<uint8_t>(C::UInt), bits, 1};
    case DType::I64:
    case DType::I32:
      return {static_cast<uint8_t>(C::Int), bits, 1};
  }
  return {};
}

using Imported = nb::ndarray<nb::ro>;

// A CPU tensor over the imported array's memory, any strides (negative ones too): from_blob over
// the span the strides reach, viewed with the array's layout.
Tensor adopt(const Imported& a, const char* op) {
  if (a.device_type() != nb::device::cpu::value)
    fail(ErrorKind::Device, op, "the array is on DLPack device type ", a.device_type(),
         "; wick adopts CPU memory only (copy it to the host first)");
  const DType dt = dtype_from_dlpack(a.dtype(), op);
  std::vector<int64_t> dims(a.ndim()), strides(a.ndim());
  int64_t lo = 0, hi = 0, numel = 1;
  for (size_t i = 0; i < a.ndim(); i++) {
    dims[i] = static_cast<int64_t>(a.shape(i));
    strides[i] = a.stride(i);
    numel *= dims[i];
    if (dims[i] > 0) (strides[i] < 0 ? lo : hi) += (dims[i] - 1) * strides[i];
  }
  auto* base = static_cast<char*>(const_cast<void*>(static_cast<const void*>(a.data())));
  if (numel == 0) return Tensor::zeros(Shape(dims), dt);
  // The tensor holds a reference to the array until its last view goes, whatever thread drops it.
  auto* keep = new Imported(a);
  Tensor blob = Tensor::from_blob(base + lo * static_cast<int64_t>(dtype_size(dt)),
                                  Shape{hi - lo + 1}, dt, [keep](void*) {
                                    if (!Py_IsInitialized()) return;  // exiting: leave it
                                    nb::gil_scoped_acquire gil;
                                    delete keep;
                                  });
  Layout layout(Shape(dims), strides, -lo);
  if (layout.is_contiguous() && lo == 0) return blob.reshape(Shape(dims));
  return Tensor(blob.storage(), std::move(layout), dt, Device::cpu());
}

// A view of a CPU tensor's storage for NumPy/DLPack, holding the tensor.
template <typename Framework>
nb::ndarray<Framework> view(const Tensor& t, const char* op) {
  if (!t.device().is_cpu())
    fail(ErrorKind::Device, op, "tensor ", t.str(), " is on ", t.device().name(),
         ", not the CPU: t.cpu() copies it to the host");
  if (std::is_same_v<Framework, nb::numpy> && t.dtype() == DType::BF16)
    fail(ErrorKind::DType, op, "NumPy has no bfloat16: t.to(wick.f32) converts it first");
  void* data = const_cast<void*>(t.data_ptr());
  std::vector<size_t> shape(t.dims().begin(), t.dims().end());
  const std::vector<int64_t>& strides = t.layout().strides;
  nb::capsule owner(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  return nb::ndarray<Framework>(data, shape.size(), shape.data(), owner, strides.data(),
                                dlpack_dtype(t.dtype()), nb::device::cpu::value, 0);
}

}  // namespace

void bind_interop(nb::module_& m, nb::class_<Tensor>& c) {
  m.def(
      "from_numpy", [](Imported a) { return adopt(a, "from_numpy"); }, nb::arg("array").noconvert(),
      "A CPU tensor over the NumPy array's memory, without a copy (writes are shared; the "
      "array stays alive as long as the tensor).");
  m.def(
      "from_dlpack", [](Imported a) { return adopt(a, "from_dlpack"); }, nb::arg("obj").noconvert(),
      "A CPU tensor over the memory of any object with __dlpack__ (or the buffer protocol), "
      "without a copy.");
  c.def(
       "numpy", [](const Tensor& t) { return view<nb::numpy>(t, "numpy"); },
       nb::rv_policy::reference,
       "A NumPy array over this CPU tensor's storage (no copy; keeps the tensor alive).")
      .def(
          "__array__",
          [](const Tensor& t, nb::handle dtype, nb::handle copy) {
            const bool on_cpu = t.device().is_cpu();
            if (!on_cpu && copy.ptr() == Py_False)
              throw nb::value_error("np.asarray(t, copy=False) of a GPU tensor: it must be copied");
            nb::object a =
                nb::cast(view<nb::numpy>(on_cpu ? t : t.to_device(Device::cpu()), "__array__"),
                         nb::rv_policy::reference);
            if (!dtype.is_none()) a = a.attr("astype")(dtype, nb::arg("copy") = false);
            if (copy.ptr() == Py_True && on_cpu) a = a.attr("copy")();
            return a;
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none(),
          nb::sig("def __array__(self, dtype: object | None = None, copy: bool | None = None) -> "
                  "numpy.ndarray"))
      // nanobind exports an ndarray without a framework as a DLPack capsule. The keywords of the
      // array API (stream, max_version, dl_device, copy) change nothing on the CPU.
      .def("__dlpack__",
           [](const Tensor& t, nb::kwargs) {
             return nb::cast(view<nb::no_framework>(t, "__dlpack__"), nb::rv_policy::reference);
           })
      .def("__dlpack_device__",
           [](const Tensor& t) {
             const Device& d = t.device();
             const int type = d.kind() == DeviceKind::Cuda     ? nb::device::cuda::value
                              : d.kind() == DeviceKind::Vulkan ? nb::device::vulkan::value
                                                               : nb::device::cpu::value;
             return nb::make_tuple(type, d.is_cpu() ? 0 : d.ordinal());
           })
      .def(
          "data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); },
          "The address of the first element (CPU tensors).");
}

}  // namespace wick::py

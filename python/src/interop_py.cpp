// NumPy and DLPack interop without copies: wick.from_numpy / wick.from_dlpack adopt the other
// array's memory (Tensor::from_blob, the array kept alive by the tensor), and np.asarray(t),
// t.numpy() and t.__dlpack__() view the tensor's storage (the tensor kept alive by the view).
// CPU memory goes both ways, and so does CUDA device memory through DLPack: exporting waits for
// the device's queue (Tensor::data_ptr), importing asks the producer to make its data ready on
// the legacy default stream, which from_blob waits for. Vulkan memory has no address to share.
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

#include <memory>
#include <utility>

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

// The wick device of an imported array: the CPU, or the process's shared CUDA device of its id.
Device device_of(const Imported& a, const char* op) {
  if (a.device_type() == nb::device::cpu::value) return Device::cpu();
  if (a.device_type() != nb::device::cuda::value)
    fail(ErrorKind::Device, op, "the array is on DLPack device type ", a.device_type(),
         "; wick adopts CPU and CUDA memory only (copy it to the host first)");
  try {
    return Device::parse("cuda:" + std::to_string(a.device_id()));
  } catch (const Error& e) {
    fail(ErrorKind::Device, op, "the array is on CUDA device ", a.device_id(),
         ", which wick cannot open: ", e.what());
  }
}

// A tensor over the imported array's memory, any strides (negative ones too): from_blob over
// the span the strides reach, viewed with the array's layout.
Tensor adopt(const Imported& a, const char* op) {
  const Device dev = device_of(a, op);
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
  if (numel == 0) return Tensor::zeros(Shape(dims), dt, dev);
  // The tensor holds a reference to the array until its last view goes (on a GPU: and no queued
  // op uses it), whatever thread drops it.
  auto keep = std::make_unique<Imported>(a);
  auto release = [p = keep.get()](void*) {
    if (!Py_IsInitialized()) return;  // exiting: leave it
    nb::gil_scoped_acquire gil;
    delete p;
  };
  Tensor blob;
  {
    // A CUDA import waits for the producer's stream: without the GIL, so other threads run.
    nb::gil_scoped_release unlocked;
    blob = Tensor::from_blob(base + lo * static_cast<int64_t>(dtype_size(dt)), Shape{hi - lo + 1},
                             dt, dev, release);
  }
  keep.release();  // the tensor's now
  Layout layout(Shape(dims), strides, -lo);
  if (layout.is_contiguous() && lo == 0) return blob.reshape(Shape(dims));
  return Tensor(blob.storage(), std::move(layout), dt, dev);
}

nb::object export_dlpack(const Tensor& t, nb::handle stream, nb::handle max_version,
                         nb::handle dl_device, nb::handle copy);

// What to import: a wick tensor's capsule (a Vulkan tensor raises its own error); a CUDA
// producer's capsule, asked for its data on the legacy default stream (stream=1), which
// Tensor::from_blob waits for (producers that predate the keywords are asked again with fewer);
// anything else as it is, for nanobind to import (CPU producers, capsules, the buffer protocol).
nb::object dlpack_capsule(nb::handle obj, const char* op) {
  if (nb::isinstance<Tensor>(obj))
    return export_dlpack(nb::cast<const Tensor&>(obj), nb::none(), nb::none(), nb::none(),
                         nb::none());
  if (PyCapsule_CheckExact(obj.ptr()) || !nb::hasattr(obj, "__dlpack__") ||
      !nb::hasattr(obj, "__dlpack_device__"))
    return nb::borrow(obj);
  nb::tuple device = nb::cast<nb::tuple>(obj.attr("__dlpack_device__")());
  const int type = nb::len(device) == 2 ? nb::cast<int>(device[0]) : -1;
  if (type == nb::device::cpu::value) return nb::borrow(obj);
  if (type != nb::device::cuda::value)
    fail(ErrorKind::Device, op, "the array is on DLPack device type ", type,
         "; wick adopts CPU and CUDA memory only (copy it to the host first)");
  nb::object dlpack = obj.attr("__dlpack__");
  try {
    return dlpack(nb::arg("stream") = 1, nb::arg("max_version") = nb::make_tuple(1, 0));
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
  }
  try {
    return dlpack(nb::arg("stream") = 1);
  } catch (nb::python_error& e) {
    if (!e.matches(PyExc_TypeError)) throw;
  }
  return dlpack();
}

Imported imported(nb::handle obj, const char* op) {
  nb::object src = dlpack_capsule(obj, op);
  Imported a;
  if (!nb::try_cast<Imported>(src, a, /*convert=*/false))
    throw nb::type_error((std::string(op) + ": expected a DLPack capsule or an object with " +
                          "__dlpack__ or the buffer protocol, got " +
                          nb::type_name(obj.type()).c_str())
                             .c_str());
  return a;
}

// A view of a CPU or CUDA tensor's storage for NumPy/DLPack, holding the tensor. CUDA: the
// device's queue is waited for first (Tensor::data_ptr), so the consumer reads final values.
template <typename Framework>
nb::ndarray<Framework> view(const Tensor& t, const char* op) {
  const Device& dev = t.device();
  if (dev.kind() == DeviceKind::Vulkan)
    fail(ErrorKind::Device, op, "tensor ", t.str(), " is on ", dev.name(),
         ", not the CPU: Vulkan memory cannot be exported (wick's Vulkan buffers have no "
         "address other code can use); t.to('cpu') copies it to the host");
  const bool host = std::is_same_v<Framework, nb::numpy>;
  if (host && !dev.is_cpu())
    fail(ErrorKind::Device, op, "tensor ", t.str(), " is on ", dev.name(),
         ", not the CPU: t.cpu() copies it to the host");
  if (host && t.dtype() == DType::BF16)
    fail(ErrorKind::DType, op, "NumPy has no bfloat16: t.to(wick.f32) converts it first");
  void* data = nullptr;
  {
    nb::gil_scoped_release unlocked;  // CUDA waits for the device
    data = const_cast<void*>(t.data_ptr());
  }
  std::vector<size_t> shape(t.dims().begin(), t.dims().end());
  const std::vector<int64_t>& strides = t.layout().strides;
  nb::capsule owner(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  const bool cuda = dev.kind() == DeviceKind::Cuda;
  return nb::ndarray<Framework>(
      data, shape.size(), shape.data(), owner, strides.data(), dlpack_dtype(t.dtype()),
      cuda ? nb::device::cuda::value : nb::device::cpu::value, cuda ? dev.ordinal() : 0);
}

std::pair<int, int> dlpack_device(const Device& d) {
  const int type = d.kind() == DeviceKind::Cuda     ? nb::device::cuda::value
                   : d.kind() == DeviceKind::Vulkan ? nb::device::vulkan::value
                                                    : nb::device::cpu::value;
  return {type, d.is_cpu() ? 0 : d.ordinal()};
}

// __dlpack__ with the array API's keywords: `stream` is the consumer's (any value: the device's
// queue is waited for on the host, which makes the data ready for every stream); `dl_device`
// (1, 0) copies a GPU tensor to the host; `copy` True exports a copy, False refuses one.
nb::object export_dlpack(const Tensor& t, nb::handle stream, nb::handle max_version,
                         nb::handle dl_device, nb::handle copy) {
  (void)max_version;  // the capsule is DLPack 0.x's, which every consumer takes
  if (!stream.is_none() && !PyLong_Check(stream.ptr()))
    throw nb::type_error("__dlpack__: stream must be an int or None");
  Tensor src = t;
  bool copied = false;
  if (!dl_device.is_none()) {
    const auto want = nb::cast<std::pair<int, int>>(dl_device);
    if (want != dlpack_device(t.device())) {
      if (want != std::pair<int, int>{nb::device::cpu::value, 0} || copy.ptr() == Py_False) {
        PyErr_SetString(
            PyExc_BufferError,
            ("__dlpack__: tensor " + t.str() + " cannot be exported to DLPack device (" +
             std::to_string(want.first) + ", " + std::to_string(want.second) + ")" +
             (copy.ptr() == Py_False ? " without a copy" : ""))
                .c_str());
        throw nb::python_error();
      }
      nb::gil_scoped_release unlocked;
      src = t.to_device(Device::cpu());
      copied = true;
    }
  }
  if (copy.ptr() == Py_True && !copied) {
    nb::gil_scoped_release unlocked;
    src = t.copy();
  }
  return nb::cast(view<nb::no_framework>(src, "__dlpack__"), nb::rv_policy::reference);
}

}  // namespace

void bind_interop(nb::module_& m, nb::class_<Tensor>& c) {
  m.def(
      "from_numpy", [](Imported a) { return adopt(a, "from_numpy"); }, nb::arg("array").noconvert(),
      "A CPU tensor over the NumPy array's memory, without a copy (writes are shared; the "
      "array stays alive as long as the tensor).");
  m.def(
      "from_dlpack",
      [](nb::handle obj) { return adopt(imported(obj, "from_dlpack"), "from_dlpack"); },
      nb::arg("obj"), nb::sig("def from_dlpack(obj: object) -> Tensor"),
      "A tensor over the memory of any object with __dlpack__ (or the buffer protocol, or a "
      "DLPack capsule), without a copy: CPU memory as a CPU tensor, CUDA memory as a tensor of "
      "the shared CUDA device of its id (wick.Device('cuda:N')). The object stays alive as long "
      "as the tensor. A CUDA producer is asked for its data on the legacy default stream, which "
      "is waited for before this returns.");
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
      // nanobind exports an ndarray without a framework as a DLPack capsule.
      .def("__dlpack__", &export_dlpack, nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(),
           nb::arg("copy") = nb::none(),
           nb::sig("def __dlpack__(self, *, stream: int | None = None, "
                   "max_version: tuple[int, int] | None = None, "
                   "dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> "
                   "object"),
           "A DLPack capsule over this tensor's memory, without a copy: CPU tensors, and CUDA "
           "tensors once the device's queue has finished (waited for on the host, so the data "
           "is ready on any stream). The capsule holds the tensor. Vulkan tensors raise "
           "wick.DeviceError (t.to('cpu') copies them); dl_device=(1, 0) exports a host copy.")
      .def("__dlpack_device__",
           [](const Tensor& t) {
             const auto [type, id] = dlpack_device(t.device());
             return nb::make_tuple(type, id);
           })
      .def(
          "data_ptr",
          [](const Tensor& t) {
            nb::gil_scoped_release unlocked;  // CUDA waits for the device
            return reinterpret_cast<uintptr_t>(t.data_ptr());
          },
          "The address of the first element: host memory for CPU tensors, device memory for "
          "CUDA tensors (after waiting for the device's queue); Vulkan tensors raise "
          "wick.DeviceError.");
}

}  // namespace wick::py

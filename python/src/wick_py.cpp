// wick._wick: the module's entry point, errors, dtypes and devices.
#include "wick_py.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <array>

#include "backend/backend.h"
#include "wick/error.h"

namespace wick::py {

namespace {

// One Python class per ErrorKind, each also a subclass of the builtin exception that code
// catching Python's own errors expects (a bad shape is a ValueError, a bad index an IndexError).
struct ErrorClass {
  ErrorKind kind;
  const char* name;
  PyObject* builtin;
};

std::array<PyObject*, 9> g_error_classes{};
PyObject* g_error_base = nullptr;

}  // namespace

void bind_errors(nb::module_& m) {
  g_error_base = PyErr_NewExceptionWithDoc("wick.Error",
                                           "Every error wick reports; .kind names the ErrorKind.",
                                           PyExc_Exception, nullptr);
  m.attr("Error") = nb::handle(g_error_base);
  const ErrorClass classes[] = {
      {ErrorKind::Shape, "ShapeError", PyExc_ValueError},
      {ErrorKind::DType, "DTypeError", PyExc_TypeError},
      {ErrorKind::Device, "DeviceError", PyExc_RuntimeError},
      {ErrorKind::OutOfRange, "OutOfRangeError", PyExc_IndexError},
      {ErrorKind::Unsupported, "UnsupportedError", PyExc_NotImplementedError},
      {ErrorKind::Io, "IoError", PyExc_OSError},
      {ErrorKind::Parse, "ParseError", PyExc_ValueError},
      {ErrorKind::OutOfMemory, "OutOfMemoryError", PyExc_MemoryError},
      {ErrorKind::Internal, "InternalError", PyExc_RuntimeError},
  };
  for (const ErrorClass& c : classes) {
    const std::string qualified = std::string("wick.") + c.name;
    nb::object bases = nb::make_tuple(nb::handle(g_error_base), nb::handle(c.builtin));
    PyObject* cls = PyErr_NewException(qualified.c_str(), bases.ptr(), nullptr);
    if (!cls) throw nb::python_error();
    nb::handle(cls).attr("kind") = error_kind_name(c.kind);
    g_error_classes[static_cast<size_t>(c.kind)] = cls;
    m.attr(c.name) = nb::handle(cls);
  }
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      const auto i = static_cast<size_t>(e.kind());
      PyErr_SetString(
          i < g_error_classes.size() && g_error_classes[i] ? g_error_classes[i] : g_error_base,
          e.what());
    }
  });
}

Device device_arg(nb::handle h) {
  if (h.is_none()) return Device::cpu();
  if (nb::isinstance<Device>(h)) return nb::cast<Device>(h);
  if (nb::isinstance<nb::str>(h)) return Device::parse(nb::cast<std::string>(h));
  throw nb::type_error(
      "device: expected a wick.Device, a string such as 'cpu' or 'vulkan:0', or None");
}

void bind_devices(nb::module_& m) {
  nb::enum_<DeviceKind>(m, "DeviceKind")
      .value("cpu", DeviceKind::Cpu)
      .value("vulkan", DeviceKind::Vulkan)
      .value("cuda", DeviceKind::Cuda);

  nb::class_<Device>(m, "Device", "A device: 'cpu', 'vulkan[:N]', 'cuda[:N]'.")
      .def(
          "__init__",
          [](Device* self, const std::string& spec) { new (self) Device(Device::parse(spec)); },
          nb::arg("spec"), "The process-wide device for a spec: 'cpu', 'vulkan:0', 'cuda:1'.")
      .def_static("cpu", &Device::cpu)
      .def_static("vulkan", &Device::vulkan, nb::arg("ordinal") = 0,
                  "A new Vulkan device (its own queue and id).")
      .def_static("cuda", &Device::cuda, nb::arg("ordinal") = 0, "A new CUDA device (its own id).")
      .def_static("default", &Device::default_device, "WICK_DEVICE when set, else the CPU.")
      .def_prop_ro("kind", &Device::kind)
      .def_prop_ro("ordinal", &Device::ordinal)
      .def_prop_ro("name", &Device::name)
      .def_prop_ro("is_cpu", &Device::is_cpu)
      .def("set_seed", &Device::set_seed, nb::arg("seed"))
      .def("synchronize", &Device::synchronize, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "__eq__", [](const Device& a, const Device& b) { return a == b; }, nb::is_operator())
      .def(
          "__ne__", [](const Device& a, const Device& b) { return a != b; }, nb::is_operator())
      .def("__hash__", [](const Device& d) { return d.id(); })
      .def("__repr__", [](const Device& d) { return "wick.Device('" + d.name() + "')"; })
      .def("__str__", &Device::name);
  nb::implicitly_convertible<nb::str, Device>();
  m.def("available_devices", &available_devices);
  // The C++ tests' hook, for Python's: new GPU memory is filled with 0xff bytes (NaN in floats),
  // so an output a kernel did not write shows.
  m.def("_set_poison_allocations", &backend::set_poison_allocations, nb::arg("on"),
        "Test hook: fill every new allocation with 0xff bytes (NaN) while on.");
}

}  // namespace wick::py

NB_MODULE(_wick, m) {
  using namespace wick;
  using namespace wick::py;
  m.doc() = "wick: tensors, devices and llama models (the C++ library's Python module)";
  bind_errors(m);
  nb::enum_<DType>(m, "DType", "Element types.")
      .value("f32", DType::F32)
      .value("f16", DType::F16)
      .value("bf16", DType::BF16)
      .value("f64", DType::F64)
      .value("u8", DType::U8)
      .value("u32", DType::U32)
      .value("i64", DType::I64)
      .value("i32", DType::I32);
  m.def("dtype_size", &dtype_size, nb::arg("dtype"), "Bytes per element.");
  m.def("is_float", &is_float, nb::arg("dtype"));
  bind_devices(m);
  nb::class_<Tensor> tensor(m, "Tensor",
                            "An n-dimensional array on a device (a shared handle: views share "
                            "storage; ops return new tensors).");
  bind_tensor(m, tensor);
  bind_interop(m, tensor);
  bind_custom_kernels(m);
  bind_models(m);
}

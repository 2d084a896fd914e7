// wick.CustomKernel and wick.KernelSource: wick/custom_kernel.h from Python. The spec's buffers and
// parameters are (name, dtype) pairs, or a dict in declaration order; a source is a body string
// or a KernelSource with a header. Calling the kernel is KernelLaunch's fields as keywords, and
// every check and error is the C++ front end's (wick's messages, as wick exceptions).
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <sstream>
#include <utility>

#include "wick/custom_kernel.h"
#include "wick_py.h"

namespace wick::py {

namespace {

std::string type_of(nb::handle h) {
  return nb::type_name(h.type()).c_str();
}

// (name, dtype) pairs from a sequence of pairs or a mapping (its order is the declaration's).
template <typename Decl>
std::vector<Decl> declarations(nb::handle h, const char* what) {
  std::vector<Decl> out;
  if (h.is_none()) return out;
  auto add = [&](nb::handle name, nb::handle dtype, size_t i) {
    if (!nb::isinstance<nb::str>(name) || !nb::isinstance<DType>(dtype))
      throw nb::type_error(("CustomKernel: " + std::string(what) + "[" + std::to_string(i) +
                            "] must be a (name: str, dtype: wick.DType) pair, got (" +
                            type_of(name) + ", " + type_of(dtype) + ")")
                               .c_str());
    out.push_back({nb::cast<std::string>(name), nb::cast<DType>(dtype)});
  };
  if (PyDict_Check(h.ptr())) {
    size_t i = 0;
    for (auto [name, dtype] : nb::borrow<nb::dict>(h)) add(name, dtype, i++);
    return out;
  }
  if (!PySequence_Check(h.ptr()) || nb::isinstance<nb::str>(h))
    throw nb::type_error(("CustomKernel: " + std::string(what) +
                          " must be a list of (name, dtype) pairs or a dict, got " + type_of(h))
                             .c_str());
  size_t i = 0;
  for (nb::handle item : nb::borrow<nb::sequence>(h)) {
    if (!PyTuple_Check(item.ptr()) && !PyList_Check(item.ptr()))
      throw nb::type_error(("CustomKernel: " + std::string(what) + "[" + std::to_string(i) +
                            "] must be a (name, dtype) pair, got " + type_of(item))
                               .c_str());
    nb::sequence pair = nb::borrow<nb::sequence>(item);
    if (nb::len(pair) != 2)
      throw nb::type_error(("CustomKernel: " + std::string(what) + "[" + std::to_string(i) +
                            "] must be a (name, dtype) pair, got " + std::to_string(nb::len(pair)) +
                            " items")
                               .c_str());
    add(pair[0], pair[1], i++);
  }
  return out;
}

template <typename Decl>
std::vector<std::pair<std::string, DType>> declarations_list(const std::vector<Decl>& v) {
  std::vector<std::pair<std::string, DType>> out;
  for (const Decl& d : v) out.emplace_back(d.name, d.dtype);
  return out;
}

// A source: None (none in that language), a body string, or a KernelSource.
KernelSource source_arg(nb::handle h, const char* language) {
  if (h.is_none()) return {};
  if (nb::isinstance<nb::str>(h)) return {nb::cast<std::string>(h), {}};
  if (nb::isinstance<KernelSource>(h)) return nb::cast<KernelSource>(h);
  throw nb::type_error(("CustomKernel: " + std::string(language) +
                        " must be the body (a str) or a wick.KernelSource, got " + type_of(h))
                           .c_str());
}

// Items of a Python sequence argument of __call__ (a clear TypeError otherwise).
std::vector<nb::handle> items(nb::handle h, const std::string& kernel, const char* what) {
  if (!PySequence_Check(h.ptr()) || nb::isinstance<nb::str>(h) || nb::isinstance<Tensor>(h))
    throw nb::type_error(
        ("custom kernel " + kernel + ": " + what + " must be a list, got " + type_of(h)).c_str());
  std::vector<nb::handle> out;
  for (nb::handle x : nb::borrow<nb::sequence>(h)) out.push_back(x);
  return out;
}

std::string describe(const KernelSpec& s) {
  std::ostringstream os;
  auto list = [&](const char* what, const auto& v) {
    os << ", " << what << "=[";
    for (size_t i = 0; i < v.size(); i++) os << (i ? ", " : "") << v[i].name << ": " << v[i].dtype;
    os << "]";
  };
  os << "wick.CustomKernel('" << s.name << "'";
  list("inputs", s.inputs);
  list("outputs", s.outputs);
  list("params", s.params);
  os << ")";
  return os.str();
}

std::vector<Tensor> run(const CustomKernel& k, nb::handle inputs, nb::handle output_shapes,
                        uint64_t threads, nb::handle params, nb::handle device) {
  const std::string& name = k.spec().name;
  KernelLaunch launch;
  size_t i = 0;
  for (nb::handle x : items(inputs, name, "inputs")) {
    if (!nb::isinstance<Tensor>(x))
      throw nb::type_error(("custom kernel " + name + ": inputs[" + std::to_string(i) +
                            "] must be a wick.Tensor, got " + type_of(x) +
                            " (wick.tensor or wick.from_numpy makes one)")
                               .c_str());
    launch.inputs.push_back(nb::cast<Tensor>(x));
    i++;
  }
  for (nb::handle s : items(output_shapes, name, "output_shapes"))
    launch.output_shapes.push_back(shape_arg(s, ("custom kernel " + name).c_str()));
  i = 0;
  for (nb::handle p : items(params, name, "params")) {
    if (!PyLong_Check(p.ptr()) && !PyFloat_Check(p.ptr()) && !PyIndex_Check(p.ptr()) &&
        !nb::hasattr(p, "__float__"))
      throw nb::type_error(("custom kernel " + name + ": params[" + std::to_string(i) +
                            "] must be a number, got " + type_of(p))
                               .c_str());
    launch.params.push_back(nb::cast<double>(nb::float_(p)));
    i++;
  }
  launch.threads = threads;
  if (!device.is_none()) launch.device = device_arg(device);
  nb::gil_scoped_release release;  // compiling on first use takes a while
  return k(launch);
}

}  // namespace

void bind_custom_kernels(nb::module_& m) {
  nb::class_<KernelSource>(m, "KernelSource",
                           "A custom kernel's source in one language: the body of its main "
                           "function, and an optional header placed before it at file scope.")
      .def(nb::init<>())
      .def(
          "__init__",
          [](KernelSource* self, std::string body, std::string header) {
            new (self) KernelSource{std::move(body), std::move(header)};
          },
          nb::arg("body"), nb::arg("header") = "")
      .def_rw("body", &KernelSource::body)
      .def_rw("header", &KernelSource::header)
      .def("__repr__", [](const KernelSource& s) {
        auto quoted = [](const std::string& v) {
          return nb::cast<std::string>(nb::repr(nb::str(v.data(), v.size())));
        };
        return "wick.KernelSource(body=" + quoted(s.body) +
               (s.header.empty() ? "" : ", header=" + quoted(s.header)) + ")";
      });

  nb::class_<CustomKernel>(
      m, "CustomKernel",
      "Your own GLSL (Vulkan devices) or CUDA (CUDA devices) kernel on wick tensors "
      "(wick/custom_kernel.h). Declare its inputs, outputs and parameters as (name, dtype) pairs "
      "and write the body of its main function; wick declares them around it. Compiled on first "
      "use on a device and cached like wick's kernels; a body that does not compile raises "
      "wick.ParseError with the compiler's messages.")
      .def(
          "__init__",
          [](CustomKernel* self, std::string name, nb::handle inputs, nb::handle outputs,
             nb::handle params, nb::handle glsl, nb::handle cuda, uint32_t threads_per_group) {
            KernelSpec spec;
            spec.name = std::move(name);
            spec.inputs = declarations<KernelBuffer>(inputs, "inputs");
            spec.outputs = declarations<KernelBuffer>(outputs, "outputs");
            spec.params = declarations<KernelParam>(params, "params");
            spec.glsl = source_arg(glsl, "glsl");
            spec.cuda = source_arg(cuda, "cuda");
            spec.threads_per_group = threads_per_group;
            new (self) CustomKernel(std::move(spec));
          },
          nb::arg("name"), nb::kw_only(), nb::arg("inputs") = nb::none(), nb::arg("outputs"),
          nb::arg("params") = nb::none(), nb::arg("glsl") = nb::none(),
          nb::arg("cuda") = nb::none(), nb::arg("threads_per_group") = 256,
          nb::sig("def __init__(self, name: str, *, "
                  "inputs: collections.abc.Sequence[tuple[str, DType]] | "
                  "collections.abc.Mapping[str, DType] | None = None, "
                  "outputs: collections.abc.Sequence[tuple[str, DType]] | "
                  "collections.abc.Mapping[str, DType], "
                  "params: collections.abc.Sequence[tuple[str, DType]] | "
                  "collections.abc.Mapping[str, DType] | None = None, "
                  "glsl: str | KernelSource | None = None, cuda: str | KernelSource | None = None, "
                  "threads_per_group: int = 256) -> None"),
          "Checks the spec (names, dtypes, limits: wick.UnsupportedError or wick.DTypeError "
          "naming the kernel); nothing is compiled yet. Parameters are u32, i32, f32 or f64.")
      .def(
          "__call__",
          [](const CustomKernel& k, nb::handle inputs, nb::handle output_shapes, uint64_t threads,
             nb::handle params,
             nb::handle device) { return run(k, inputs, output_shapes, threads, params, device); },
          nb::kw_only(), nb::arg("inputs") = nb::list(), nb::arg("output_shapes"),
          nb::arg("threads"), nb::arg("params") = nb::list(), nb::arg("device") = nb::none(),
          nb::sig("def __call__(self, *, inputs: collections.abc.Sequence[Tensor] = [], "
                  "output_shapes: collections.abc.Sequence[int | collections.abc.Sequence[int]], "
                  "threads: int, params: collections.abc.Sequence[float] = [], "
                  "device: Device | str | None = None) -> list[Tensor]"),
          "Runs the kernel on `threads` threads and returns its outputs: new contiguous tensors "
          "of the declared dtypes and the given shapes, on the inputs' device (or `device`, "
          "needed when there are no inputs). Inputs are given in declared order and only read "
          "(views are copied to contiguous tensors first); params are numbers in declared order "
          "(integers whole and in range). Like any op it returns without waiting; threads=0 runs "
          "nothing (the outputs are not written).")
      .def_prop_ro("name", [](const CustomKernel& k) { return k.spec().name; })
      .def_prop_ro("inputs",
                   [](const CustomKernel& k) { return declarations_list(k.spec().inputs); })
      .def_prop_ro("outputs",
                   [](const CustomKernel& k) { return declarations_list(k.spec().outputs); })
      .def_prop_ro("params",
                   [](const CustomKernel& k) { return declarations_list(k.spec().params); })
      .def_prop_ro("glsl", [](const CustomKernel& k) { return k.spec().glsl; })
      .def_prop_ro("cuda", [](const CustomKernel& k) { return k.spec().cuda; })
      .def_prop_ro("threads_per_group",
                   [](const CustomKernel& k) { return k.spec().threads_per_group; })
      .def("__repr__", [](const CustomKernel& k) { return describe(k.spec()); });
}

}  // namespace wick::py

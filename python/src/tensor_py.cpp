// wick.Tensor: creation, properties, ops, Python operators and indexing.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "wick_py.h"

namespace wick::py {

namespace {

std::vector<int64_t> int_list(nb::handle h, const char* op) {
  if (PyLong_Check(h.ptr())) return {nb::cast<int64_t>(h)};
  if (!PySequence_Check(h.ptr()) || nb::isinstance<nb::str>(h))
    fail(ErrorKind::Shape, op, "expected an int or a sequence of ints, got ",
         nb::type_name(h.type()).c_str());
  std::vector<int64_t> out;
  for (nb::handle x : nb::borrow<nb::sequence>(h)) {
    if (!PyLong_Check(x.ptr()) && !PyIndex_Check(x.ptr()))
      fail(ErrorKind::Shape, op, "expected ints, got ", nb::type_name(x.type()).c_str());
    out.push_back(nb::cast<int64_t>(x));
  }
  return out;
}

// One dim (int) or several (sequence); none means every dim.
std::vector<int64_t> dims_or_all(const Tensor& t, nb::handle dim, const char* op) {
  if (!dim.is_none()) return int_list(dim, op);
  std::vector<int64_t> all(t.rank());
  for (size_t i = 0; i < all.size(); i++) all[i] = static_cast<int64_t>(i);
  return all;
}

// A Python number as the value of a 0-d tensor's element, by its dtype.
nb::object item(const Tensor& t) {
  if (t.numel() != 1)
    fail(ErrorKind::Shape, "item", "a tensor of shape ", t.shape(), " has ", t.numel(),
         " elements, not one");
  if (is_float(t.dtype())) return nb::float_(t.to_scalar<double>());
  if (t.dtype() == DType::U32 || t.dtype() == DType::U8)
    return nb::int_(static_cast<uint64_t>(t.to_scalar<int64_t>()));
  return nb::int_(t.to_scalar<int64_t>());
}

nb::object tolist(const Tensor& t) {
  const Tensor c = t.to_device(Device::cpu());
  if (c.rank() == 0) return item(c);
  nb::list out;
  for (int64_t i = 0; i < c.dim(0); i++) out.append(tolist(c.get(i)));
  return out;
}

// The layout basic indexing builds, item by item.
struct IndexWalk {
  std::vector<int64_t> shape, strides;
  int64_t offset;
};

int64_t checked_index(int64_t i, int64_t size, size_t dim) {
  const int64_t j = i < 0 ? i + size : i;
  if (j < 0 || j >= size)
    fail(ErrorKind::OutOfRange, "index", "index ", i, " is out of range for dim ", dim, " of size ",
         size);
  return j;
}

// An int, or an object with __index__ that is not an array of more than 0 dims (NumPy's ints).
bool is_int_like(nb::handle h) {
  if (PyLong_Check(h.ptr())) return true;
  if (!PyIndex_Check(h.ptr()) || nb::isinstance<Tensor>(h)) return false;
  return !nb::hasattr(h, "ndim") || nb::cast<int64_t>(h.attr("ndim")) == 0;
}

bool is_advanced(nb::handle h) {
  return nb::isinstance<Tensor>(h) || PyList_Check(h.ptr()) || nb::hasattr(h, "__array__");
}

nb::tuple to_tuple(const std::vector<int64_t>& v) {
  nb::object l = nb::cast(v);
  return nb::steal<nb::tuple>(PySequence_Tuple(l.ptr()));
}

}  // namespace

Shape shape_arg(nb::handle h, const char* op) {
  return Shape(int_list(h, op));
}

std::vector<int64_t> dims_args(const nb::args& args, const char* op) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return int_list(args[0], op);
  std::vector<int64_t> out;
  for (nb::handle x : args) out.push_back(int_list(x, op).at(0));
  return out;
}

namespace {

// t[key]; `assign` asks for a view only (t[key] = v writes through it).
Tensor index(const Tensor& t, nb::handle key, bool assign) {
  const char* op = assign ? "index assignment" : "index";
  std::vector<nb::handle> items;
  if (PyTuple_Check(key.ptr()))
    for (nb::handle x : nb::borrow<nb::tuple>(key)) items.push_back(x);
  else
    items.push_back(key);

  size_t consumed = 0, ellipses = 0;
  for (nb::handle x : items) {
    if (x.ptr() == Py_Ellipsis)
      ellipses++;
    else if (!x.is_none())
      consumed++;
  }
  if (ellipses > 1) fail(ErrorKind::OutOfRange, op, "more than one Ellipsis");
  if (consumed > t.rank())
    fail(ErrorKind::OutOfRange, "index", "too many indices (", consumed, ") for a tensor of rank ",
         t.rank());

  const Layout& in = t.layout();
  IndexWalk w{{}, {}, in.start_offset};
  size_t d = 0;               // the input dim next item reads
  int64_t advanced_out = -1;  // the output dim an integer-array index selects on
  nb::handle advanced;
  std::vector<int64_t> flips;  // output dims to reverse (negative steps on GPUs)
  for (nb::handle x : items) {
    if (x.ptr() == Py_Ellipsis) {
      for (size_t n = t.rank() - consumed; n > 0; n--, d++) {
        w.shape.push_back(in.shape[d]);
        w.strides.push_back(in.strides[d]);
      }
    } else if (x.is_none()) {
      w.shape.push_back(1);
      w.strides.push_back(0);
    } else if (PySlice_Check(x.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(x.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      const Py_ssize_t len = PySlice_AdjustIndices(in.shape[d], &start, &stop, step);
      if (step < 0 && !t.device().is_cpu() && len > 1) {
        if (assign)
          fail(ErrorKind::Unsupported, op, "a negative step on ", t.device().name(),
               " (GPU kernels take non-negative strides)");
        // GPU kernels take non-negative strides: the elements in ascending order, reversed below.
        start += (len - 1) * step;
        step = -step;
        flips.push_back(static_cast<int64_t>(w.shape.size()));
      }
      if (len > 0) w.offset += start * in.strides[d];
      w.shape.push_back(len);
      w.strides.push_back(in.strides[d] * step);
      d++;
    } else if (is_int_like(x)) {
      w.offset += checked_index(nb::cast<int64_t>(x), in.shape[d], d) * in.strides[d];
      d++;
    } else if (is_advanced(x)) {
      if (advanced.is_valid())
        fail(ErrorKind::Unsupported, "index", "only one integer-array index per key");
      advanced = x;
      advanced_out = static_cast<int64_t>(w.shape.size());
      w.shape.push_back(in.shape[d]);
      w.strides.push_back(in.strides[d]);
      d++;
    } else {
      throw nb::type_error(("wick.Tensor indices are ints, slices, None, Ellipsis or one integer "
                            "list/tensor, not " +
                            std::string(nb::type_name(x.type()).c_str()))
                               .c_str());
    }
  }
  for (; d < t.rank(); d++) {
    w.shape.push_back(in.shape[d]);
    w.strides.push_back(in.strides[d]);
  }
  // An empty result keeps offset 0 so that its layout fits any storage.
  Layout out(Shape(w.shape), w.strides, w.offset);
  if (out.numel() == 0) out.start_offset = 0;
  Tensor view(t.storage(), std::move(out), t.dtype(), t.device());
  for (const int64_t dim : flips) {
    const int64_t n = view.dim(dim);
    const Tensor rev = Tensor::arange(static_cast<double>(n - 1), -1.0, -1.0, DType::U32);
    view = view.index_select(rev.to_device(t.device()), dim);
  }
  if (!advanced.is_valid()) return view;
  if (assign) fail(ErrorKind::Unsupported, op, "an integer-array index is not a view");
  Tensor ids = nb::isinstance<Tensor>(advanced)
                   ? nb::cast<Tensor>(advanced)
                   : nb::cast<Tensor>(nb::module_::import_("wick").attr("tensor")(
                         advanced, nb::arg("device") = t.device()));
  if (ids.rank() != 1)
    fail(ErrorKind::Unsupported, "index", "an integer-array index must be 1-D, got shape ",
         ids.shape());
  if (ids.dtype() == DType::I32) ids = ids.to_dtype(DType::I64);
  if (ids.device() != t.device()) ids = ids.to_device(t.device());
  return view.index_select(ids, advanced_out);
}

}  // namespace

Tensor getitem(const Tensor& t, nb::handle key) {
  return index(t, key, false);
}

void setitem(const Tensor& t, nb::handle key, nb::handle value) {
  Tensor view = index(t, key, true);
  if (PyFloat_Check(value.ptr()) || PyLong_Check(value.ptr())) {
    view.const_set(nb::cast<double>(value));
    return;
  }
  Tensor src = nb::isinstance<Tensor>(value) ? nb::cast<Tensor>(value)
                                             : nb::cast<Tensor>(nb::module_::import_("wick").attr(
                                                   "tensor")(value, nb::arg("dtype") = t.dtype()));
  if (src.dtype() != t.dtype()) src = src.to_dtype(t.dtype());
  if (src.device() != t.device()) src = src.to_device(t.device());
  // As NumPy: leading size-1 dims beyond the target's rank drop.
  while (src.rank() > view.rank() && src.dim(0) == 1) src = src.squeeze(0);
  src = src.broadcast_as(view.shape());
  if (view.rank() == 0) {
    view = view.unsqueeze(0);
    src = src.unsqueeze(0);
  }
  view.slice_set(src, 0, 0);
}

void bind_tensor(nb::module_& m, nb::class_<Tensor>& c) {
  using T = Tensor;
  // ---- creation
  m.def(
      "zeros",
      [](nb::handle shape, DType dt, nb::handle dev) {
        return T::zeros(shape_arg(shape, "zeros"), dt, device_arg(dev));
      },
      nb::arg("shape"), nb::arg("dtype") = DType::F32, nb::arg("device") = nb::none(),
      nb::sig("def zeros(shape: int | collections.abc.Sequence[int], dtype: DType = ..., "
              "device: Device | str | None = None) -> Tensor"));
  m.def(
      "ones",
      [](nb::handle shape, DType dt, nb::handle dev) {
        return T::ones(shape_arg(shape, "ones"), dt, device_arg(dev));
      },
      nb::arg("shape"), nb::arg("dtype") = DType::F32, nb::arg("device") = nb::none(),
      nb::sig("def ones(shape: int | collections.abc.Sequence[int], dtype: DType = ..., "
              "device: Device | str | None = None) -> Tensor"));
  m.def(
      "full",
      [](nb::handle shape, double v, DType dt, nb::handle dev) {
        return T::full(v, shape_arg(shape, "full"), dt, device_arg(dev));
      },
      nb::arg("shape"), nb::arg("value"), nb::arg("dtype") = DType::F32,
      nb::arg("device") = nb::none(),
      nb::sig("def full(shape: int | collections.abc.Sequence[int], value: float, dtype: DType = "
              "..., device: Device | str | None = None) -> Tensor"));
  m.def(
      "arange",
      [](double start, nb::handle end, double step, DType dt, nb::handle dev) {
        if (end.is_none()) return T::arange(0, start, step, dt, device_arg(dev));
        return T::arange(start, nb::cast<double>(end), step, dt, device_arg(dev));
      },
      nb::arg("start"), nb::arg("end") = nb::none(), nb::arg("step") = 1.0,
      nb::arg("dtype") = DType::F32, nb::arg("device") = nb::none(),
      nb::sig("def arange(start: float, end: float | None = None, step: float = 1.0, dtype: DType "
              "= ..., device: Device | str | None = None) -> Tensor"),
      "[start, end) by step; arange(n) is [0, n).");
  m.def(
      "linspace",
      [](double a, double b, int64_t n, DType dt, nb::handle dev) {
        return T::linspace(a, b, n, dt, device_arg(dev));
      },
      nb::arg("start"), nb::arg("end"), nb::arg("steps"), nb::arg("dtype") = DType::F32,
      nb::arg("device") = nb::none(),
      nb::sig("def linspace(start: float, end: float, steps: int, dtype: DType = ..., "
              "device: Device | str | None = None) -> Tensor"));
  m.def(
      "eye", [](int64_t n, DType dt, nb::handle dev) { return T::eye(n, dt, device_arg(dev)); },
      nb::arg("n"), nb::arg("dtype") = DType::F32, nb::arg("device") = nb::none(),
      nb::sig("def eye(n: int, dtype: DType = ..., device: Device | str | None = None) -> "
              "Tensor"));
  m.def(
      "rand",
      [](nb::handle shape, double lo, double hi, DType dt, nb::handle dev) {
        return T::rand(lo, hi, shape_arg(shape, "rand"), dt, device_arg(dev));
      },
      nb::arg("shape"), nb::arg("low") = 0.0, nb::arg("high") = 1.0, nb::arg("dtype") = DType::F32,
      nb::arg("device") = nb::none(),
      nb::sig("def rand(shape: int | collections.abc.Sequence[int], low: float = 0.0, high: float "
              "= 1.0, dtype: DType = ..., device: Device | str | None = None) -> Tensor"));
  m.def(
      "randn",
      [](nb::handle shape, double mean, double std, DType dt, nb::handle dev) {
        return T::randn(mean, std, shape_arg(shape, "randn"), dt, device_arg(dev));
      },
      nb::arg("shape"), nb::arg("mean") = 0.0, nb::arg("std") = 1.0, nb::arg("dtype") = DType::F32,
      nb::arg("device") = nb::none(),
      nb::sig("def randn(shape: int | collections.abc.Sequence[int], mean: float = 0.0, std: float "
              "= 1.0, dtype: DType = ..., device: Device | str | None = None) -> Tensor"));
  m.def("cat", &T::cat, nb::arg("tensors"), nb::arg("dim") = 0);
  m.def("stack", &T::stack, nb::arg("tensors"), nb::arg("dim") = 0);
  m.def(
      "where", [](const T& cond, const T& a, const T& b) { return cond.where_cond(a, b); },
      nb::arg("condition"), nb::arg("on_true"), nb::arg("on_false"));

  // ---- properties
  c.def(nb::init<>(), "An undefined tensor (every op on it raises wick.ShapeError).")
      .def_prop_ro("shape", [](const T& t) { return to_tuple(t.dims()); })
      .def_prop_ro("dtype", &T::dtype)
      .def_prop_ro("device", &T::device)
      .def_prop_ro("ndim", [](const T& t) { return t.rank(); })
      .def_prop_ro(
          "strides", [](const T& t) { return to_tuple(t.layout().strides); },
          "Strides in elements.")
      .def_prop_ro("T", [](const T& t) { return t.rank() < 2 ? t : t.t(); })
      .def("numel", &T::numel)
      .def(
          "size",
          [](const T& t, nb::handle dim) -> nb::object {
            if (dim.is_none()) return to_tuple(t.dims());
            return nb::int_(t.dim(nb::cast<int64_t>(dim)));
          },
          nb::arg("dim") = nb::none(),
          nb::sig("def size(self, dim: int | None = None) -> tuple[int, ...] | int"))
      .def("dim", [](const T& t) { return t.rank(); })
      .def("is_contiguous", &T::is_contiguous)
      .def("defined", &T::defined)
      .def("shares_storage_with", &T::shares_storage_with, nb::arg("other"))
      .def("__len__",
           [](const T& t) {
             if (t.rank() == 0) throw nb::type_error("len() of a 0-d tensor");
             return t.dim(0);
           })
      .def("__repr__", &T::to_string)
      .def("__str__", &T::to_string)
      .def("item", &item, nb::sig("def item(self) -> int | float"),
           "The one element as a Python int or float.")
      .def("tolist", &tolist, nb::sig("def tolist(self) -> list | int | float"))
      .def("__float__", [](const T& t) { return nb::cast<double>(item(t)); })
      .def("__int__", [](const T& t) { return nb::int_(item(t)); })
      .def("__bool__", [](const T& t) {
        if (t.numel() != 1)
          throw nb::value_error(("the truth value of a tensor of " + std::to_string(t.numel()) +
                                 " elements is ambiguous")
                                    .c_str());
        return t.to_scalar<double>() != 0;
      });

  // ---- views and copies
  c.def("narrow", &T::narrow, nb::arg("dim"), nb::arg("start"), nb::arg("length"))
      .def("chunk", &T::chunk, nb::arg("chunks"), nb::arg("dim") = 0)
      .def("transpose", &T::transpose, nb::arg("dim0"), nb::arg("dim1"))
      .def("permute", [](const T& t, nb::args a) { return t.permute(dims_args(a, "permute")); })
      .def("t", &T::t)
      .def("reshape",
           [](const T& t, nb::args a) { return t.reshape(Shape(dims_args(a, "reshape"))); })
      .def("view", [](const T& t, nb::args a) { return t.reshape(Shape(dims_args(a, "view"))); })
      .def(
          "broadcast_to",
          [](const T& t, nb::handle s) { return t.broadcast_as(shape_arg(s, "broadcast_to")); },
          nb::arg("shape"),
          nb::sig("def broadcast_to(self, shape: int | collections.abc.Sequence[int]) -> Tensor"))
      .def(
          "squeeze",
          [](const T& t, nb::handle dim) {
            return dim.is_none() ? t.squeeze() : t.squeeze(nb::cast<int64_t>(dim));
          },
          nb::arg("dim") = nb::none(),
          nb::sig("def squeeze(self, dim: int | None = None) -> Tensor"))
      .def("unsqueeze", &T::unsqueeze, nb::arg("dim"))
      .def("flatten", &T::flatten, nb::arg("start_dim") = 0, nb::arg("end_dim") = -1)
      .def("contiguous", &T::contiguous)
      .def("copy", &T::copy)
      .def("clone", &T::copy)
      .def(
          "to",
          [](const T& t, nb::handle what) {
            if (nb::isinstance<DType>(what)) return t.to_dtype(nb::cast<DType>(what));
            return t.to_device(device_arg(what));
          },
          nb::arg("dtype_or_device"),
          nb::sig("def to(self, dtype_or_device: DType | Device | str) -> Tensor"),
          "A dtype converts, a device (or 'cpu', 'vulkan:0') copies.")
      .def("to_dtype", &T::to_dtype, nb::arg("dtype"))
      .def(
          "to_device", [](const T& t, nb::handle d) { return t.to_device(device_arg(d)); },
          nb::arg("device"), nb::sig("def to_device(self, device: Device | str | None) -> Tensor"))
      .def("cpu", [](const T& t) { return t.to_device(Device::cpu()); })
      .def("zeros_like", &T::zeros_like)
      .def("ones_like", &T::ones_like)
      .def("full_like", &T::full_like, nb::arg("value"));

  // ---- element-wise
#define WICK_UNARY(name) c.def(#name, &T::name)
  WICK_UNARY(neg);
  WICK_UNARY(abs);
  WICK_UNARY(exp);
  WICK_UNARY(log);
  WICK_UNARY(sin);
  WICK_UNARY(cos);
  WICK_UNARY(tanh);
  WICK_UNARY(sqrt);
  WICK_UNARY(sqr);
  WICK_UNARY(recip);
  WICK_UNARY(relu);
  WICK_UNARY(gelu);
  WICK_UNARY(gelu_erf);
  WICK_UNARY(erf);
  WICK_UNARY(silu);
  WICK_UNARY(sigmoid);
  WICK_UNARY(floor);
  WICK_UNARY(ceil);
  WICK_UNARY(round);
  WICK_UNARY(sign);
#undef WICK_UNARY
  c.def("affine", &T::affine, nb::arg("mul"), nb::arg("add"))
      .def("clamp", &T::clamp, nb::arg("min"), nb::arg("max"))
      .def("elu", &T::elu, nb::arg("alpha") = 1.0);

  // Binary ops take a tensor or a Python number (converted to the tensor's dtype); operators
  // return NotImplemented for anything else.
#define WICK_BINARY(py, fn)                                                   \
  c.def(                                                                      \
       py, [](const T& a, const T& b) { return a.fn(b); }, nb::is_operator()) \
      .def(                                                                   \
          py, [](const T& a, double s) { return a.fn(s); }, nb::is_operator())
  WICK_BINARY("__add__", add);
  WICK_BINARY("__radd__", add);
  WICK_BINARY("__sub__", sub);
  WICK_BINARY("__mul__", mul);
  WICK_BINARY("__rmul__", mul);
  WICK_BINARY("__truediv__", div);
  WICK_BINARY("__pow__", pow);
  WICK_BINARY("__eq__", eq);
  WICK_BINARY("__ne__", ne);
  WICK_BINARY("__lt__", lt);
  WICK_BINARY("__le__", le);
  WICK_BINARY("__gt__", gt);
  WICK_BINARY("__ge__", ge);
#undef WICK_BINARY
  c.def(
       "__rsub__", [](const T& a, double s) { return a.rsub(s); }, nb::is_operator())
      .def(
          "__rtruediv__", [](const T& a, double s) { return a.rdiv(s); }, nb::is_operator())
      .def(
          "__rpow__", [](const T& a, double s) { return a.full_like(s).pow(a); }, nb::is_operator())
      .def("__neg__", &T::neg)
      .def("__pos__", [](const T& t) { return t; })
      .def("__abs__", &T::abs)
      .def("__matmul__", &T::matmul, nb::is_operator())
      // Comparison operators return tensors, so hashing goes by identity (as in PyTorch).
      .def("__hash__", [](nb::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); });
#define WICK_METHOD2(name)                                                        \
  c.def(                                                                          \
       #name, [](const T& a, const T& b) { return a.name(b); }, nb::arg("other")) \
      .def(                                                                       \
          #name, [](const T& a, double s) { return a.name(s); }, nb::arg("other"))
  WICK_METHOD2(add);
  WICK_METHOD2(sub);
  WICK_METHOD2(mul);
  WICK_METHOD2(div);
  WICK_METHOD2(maximum);
  WICK_METHOD2(minimum);
  WICK_METHOD2(pow);
  WICK_METHOD2(eq);
  WICK_METHOD2(ne);
  WICK_METHOD2(lt);
  WICK_METHOD2(le);
  WICK_METHOD2(gt);
  WICK_METHOD2(ge);
#undef WICK_METHOD2
  c.def("matmul", &T::matmul, nb::arg("other"))
      .def(
          "where", [](const T& cond, const T& a, const T& b) { return cond.where_cond(a, b); },
          nb::arg("on_true"), nb::arg("on_false"), "self (nonzero) ? on_true : on_false.");

  // ---- reductions
  c.def(
       "sum",
       [](const T& t, nb::handle dim, bool keep) {
         return dim.is_none() && !keep ? t.sum() : t.sum(dims_or_all(t, dim, "sum"), keep);
       },
       nb::arg("dim") = nb::none(), nb::arg("keepdim") = false,
       nb::sig("def sum(self, dim: int | collections.abc.Sequence[int] | None = None, keepdim: "
               "bool = False) -> Tensor"))
      .def(
          "mean",
          [](const T& t, nb::handle dim, bool keep) {
            return dim.is_none() && !keep ? t.mean() : t.mean(dims_or_all(t, dim, "mean"), keep);
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false,
          nb::sig("def mean(self, dim: int | collections.abc.Sequence[int] | None = None, keepdim: "
                  "bool = False) -> Tensor"))
      .def(
          "max",
          [](const T& t, nb::handle dim, bool keep) {
            return dim.is_none() ? t.max() : t.max(nb::cast<int64_t>(dim), keep);
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false,
          nb::sig("def max(self, dim: int | None = None, keepdim: bool = False) -> Tensor"))
      .def(
          "min",
          [](const T& t, nb::handle dim, bool keep) {
            return dim.is_none() ? t.min() : t.min(nb::cast<int64_t>(dim), keep);
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false,
          nb::sig("def min(self, dim: int | None = None, keepdim: bool = False) -> Tensor"))
      .def("argmax", &T::argmax, nb::arg("dim"), nb::arg("keepdim") = false)
      .def("argmin", &T::argmin, nb::arg("dim"), nb::arg("keepdim") = false)
      .def("var", &T::var, nb::arg("dim"), nb::arg("unbiased") = true, nb::arg("keepdim") = false)
      .def("std", &T::std, nb::arg("dim"), nb::arg("unbiased") = true, nb::arg("keepdim") = false)
      .def("cumsum", &T::cumsum, nb::arg("dim"))
      .def("topk", &T::topk, nb::arg("k"), nb::arg("dim") = -1, nb::arg("largest") = true)
      .def("softmax", &T::softmax, nb::arg("dim"))
      .def("log_softmax", &T::log_softmax, nb::arg("dim"))
      .def("rms_norm", &T::rms_norm, nb::arg("weight"), nb::arg("eps"))
      .def("layer_norm", &T::layer_norm, nb::arg("weight"), nb::arg("bias"), nb::arg("eps"))
      .def(
          "argsort", [](const T& t, bool descending) { return t.arg_sort_last_dim(!descending); },
          nb::arg("descending") = false, "Indices (u32) that sort the last dim.");

  // ---- indexing
  c.def("index_select", &T::index_select, nb::arg("ids"), nb::arg("dim"))
      .def("embedding", &T::embedding, nb::arg("ids"))
      .def("gather", &T::gather, nb::arg("ids"), nb::arg("dim"))
      .def("scatter_add", &T::scatter_add, nb::arg("ids"), nb::arg("src"), nb::arg("dim"))
      .def("index_add", &T::index_add, nb::arg("ids"), nb::arg("src"), nb::arg("dim"))
      .def("__getitem__", &getitem, nb::arg("key"))
      .def("__setitem__", &setitem, nb::arg("key"), nb::arg("value"),
           "Writes value (a number, or anything that broadcasts to t[key]) into t's storage "
           "through the view t[key]: every view of it, and an adopted NumPy array, sees it.")
      .def("slice_set", &T::slice_set, nb::arg("src"), nb::arg("dim"), nb::arg("offset"),
           "Writes src into self along dim at offset (in place: every view sees it).")
      .def(
          "zero_",
          [](const T& t) {
            t.zero_set();
            return t;
          },
          "Zeroes self in place.")
      .def(
          "fill_",
          [](const T& t, double v) {
            t.const_set(v);
            return t;
          },
          nb::arg("value"), "Sets every element in place.");
}

}  // namespace wick::py

// Shared declarations of the Python module's parts (one file per area: errors and devices,
// tensors, NumPy/DLPack interop, custom kernels, models and tokenizers).
#pragma once

#include <nanobind/nanobind.h>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/shape.h"
#include "wick/tensor.h"

namespace wick::py {

namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_devices(nb::module_& m);
void bind_tensor(nb::module_& m, nb::class_<Tensor>& cls);
void bind_interop(nb::module_& m, nb::class_<Tensor>& cls);
void bind_models(nb::module_& m);
void bind_custom_kernels(nb::module_& m);

// A shape from a Python int or a sequence of ints; `op` names the caller in errors.
Shape shape_arg(nb::handle h, const char* op);
// Positional ints or one sequence of ints: t.reshape(2, 3) and t.reshape((2, 3)).
std::vector<int64_t> dims_args(const nb::args& args, const char* op);
// The device argument: a Device, a spec string ("cpu", "vulkan:0") or None (the default device).
Device device_arg(nb::handle h);
// The result of t[key]: basic indexing (ints, slices, None, Ellipsis) as a view, one 1-D integer
// index (a list or tensor) by index_select.
Tensor getitem(const Tensor& t, nb::handle key);
// t[key] = value, through the view t[key] (basic indexing only).
void setitem(const Tensor& t, nb::handle key, nb::handle value);

}  // namespace wick::py

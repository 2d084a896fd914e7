"""wick: tensors on the CPU, Vulkan and CUDA, and llama-family models, from Python.

The native module wick._wick binds the C++ library; this file adds the few things that are
plain Python (wick.tensor, dtype aliases).
"""

from __future__ import annotations

from ._wick import (  # noqa: F401
    DType, Device, DeviceKind, Tensor, Llama, LlamaConfig, Generation, Tokenizer, GgufWriter,
    CustomKernel, KernelSource,
    Error, ShapeError, DTypeError, DeviceError, OutOfRangeError, UnsupportedError, IoError,
    ParseError, OutOfMemoryError, InternalError,
    available_devices, dtype_size, is_float,
    zeros, ones, full, arange, linspace, eye, rand, randn, cat, stack, where,
    from_numpy, from_dlpack,
)

f32 = float32 = DType.f32
f16 = float16 = DType.f16
bf16 = bfloat16 = DType.bf16
f64 = float64 = DType.f64
u8 = uint8 = DType.u8
u32 = uint32 = DType.u32
i64 = int64 = DType.i64
i32 = int32 = DType.i32

_NUMPY_DTYPES = {"float32": f32, "float16": f16, "float64": f64, "uint8": u8, "uint32": u32,
                 "int64": i64, "int32": i32}


def dtype_from_numpy(np_dtype) -> DType:
    """The wick dtype of a NumPy dtype (wick.DTypeError when wick has none)."""
    import numpy as np
    name = np.dtype(np_dtype).name
    if name not in _NUMPY_DTYPES:
        raise DTypeError(f"from_numpy: no wick dtype for NumPy's {name} "
                         "(wick has float32, float16, float64, uint8, uint32, int64, int32)")
    return _NUMPY_DTYPES[name]


def tensor(data, dtype: DType | None = None, device=None) -> Tensor:
    """A new tensor holding a copy of `data` (nested lists, numbers, NumPy arrays, wick tensors).

    Without a dtype, Python floats become f32 and ints i64 (as in PyTorch), NumPy arrays keep
    theirs (float64 stays f64); bools become u8.
    """
    import numpy as np
    if isinstance(data, Tensor):
        t = data.copy()
    else:
        a = np.asarray(data)
        if a.dtype == np.bool_:
            a = a.astype(np.uint8)
        elif not isinstance(data, np.ndarray) and a.dtype == np.float64:
            a = a.astype(np.float32)
        if dtype is not None and dtype != bf16:
            numpy_name = {v: k for k, v in _NUMPY_DTYPES.items()}[dtype]
            a = a.astype(numpy_name)
        t = from_numpy(np.array(a, copy=True, order="C"))
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    if device is not None:
        t = t.to_device(device)
    return t


__all__ = [name for name in dir() if not name.startswith("_")]

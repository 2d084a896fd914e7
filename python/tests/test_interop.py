"""NumPy and DLPack interop: no copies on the CPU, checked by pointer."""
import gc
import sys

import numpy as np
import pytest

import wick

DTYPES = [np.float32, np.float16, np.float64, np.uint8, np.uint32, np.int64, np.int32]


def addr(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_numpy_round_trip_copies_no_bytes(rng, dtype):
    a = (rng.uniform(0, 100, size=(3, 5))).astype(dtype)
    t = wick.from_numpy(a)
    assert t.dtype == wick.dtype_from_numpy(dtype) and t.shape == a.shape
    assert t.data_ptr() == addr(a)
    b = np.asarray(t)
    assert addr(b) == addr(a) and b.dtype == a.dtype
    np.testing.assert_array_equal(b, a)
    c = t.numpy()
    assert addr(c) == addr(a)
    a[1, 2] = 7  # one memory: the tensor and both views see the write
    assert t[1, 2].item() == 7 and b[1, 2] == 7


def test_lifetimes():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    refs = sys.getrefcount(a)
    t = wick.from_numpy(a)
    assert sys.getrefcount(a) > refs  # the tensor holds the array
    del t
    gc.collect()
    assert sys.getrefcount(a) == refs
    # A NumPy view keeps the tensor's storage alive after the tensor is gone.
    b = np.asarray(wick.arange(6, dtype=wick.f64))
    gc.collect()
    np.testing.assert_array_equal(b, np.arange(6.0))
    # A tensor made from an array outlives the name of the array.
    t = wick.from_numpy(np.full((4,), 3.0, dtype=np.float32))
    gc.collect()
    assert t.tolist() == [3.0] * 4


def test_strided_arrays_in_and_out(rng):
    a = rng.uniform(size=(6, 8)).astype(np.float32)
    for view in (a[::2, 1::3], a.T, a[::-1, ::-2], a[2]):
        t = wick.from_numpy(view)
        assert t.shape == view.shape
        np.testing.assert_array_equal(np.asarray(t), view)
        np.testing.assert_allclose(np.asarray(t * 2), view * 2)
        assert addr(np.asarray(t)) == addr(view)  # same first element, strides kept
    tt = wick.from_numpy(a).permute(1, 0)
    b = np.asarray(tt)
    assert addr(b) == addr(a) and b.strides == (4, 32)


def test_dlpack_both_ways(rng):
    a = rng.uniform(size=(4, 3)).astype(np.float32)
    t = wick.from_dlpack(a)
    assert t.data_ptr() == addr(a)
    b = np.from_dlpack(t)
    assert addr(b) == addr(a)
    np.testing.assert_array_equal(b, a)
    assert t.__dlpack_device__() == (1, 0)
    t2 = wick.from_dlpack(t)  # a wick tensor is a DLPack producer too
    assert t2.data_ptr() == t.data_ptr()


def test_bad_arrays():
    with pytest.raises(wick.DTypeError, match="no wick dtype"):
        wick.from_numpy(np.zeros(3, dtype=np.complex64))
    with pytest.raises(TypeError):
        wick.from_numpy([1, 2, 3])  # lists go through wick.tensor (a copy)
    with pytest.raises(wick.DTypeError, match="bfloat16"):
        np.asarray(wick.zeros(2, dtype=wick.bf16))


def test_array_dtype_and_copy_arguments():
    t = wick.arange(4, dtype=wick.i32)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    c = np.array(t, copy=True)
    assert addr(c) != t.data_ptr()

"""The tensor API against NumPy (float64 references) on random inputs."""
import math

import numpy as np
import pytest

import wick

F32_TOL = dict(rtol=2e-6, atol=2e-6)


def rand(rng, shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def check(t, ref, **tol):
    assert isinstance(t, wick.Tensor)
    got = np.asarray(t)
    assert got.shape == np.shape(ref), (got.shape, np.shape(ref))
    np.testing.assert_allclose(got.astype(np.float64), np.asarray(ref, np.float64), **(tol or F32_TOL))


UNARY = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "sin": np.sin, "cos": np.cos,
    "tanh": np.tanh, "sqr": np.square, "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "silu": lambda x: x / (1 + np.exp(-x)),
    "floor": np.floor, "ceil": np.ceil, "sign": np.sign,
    "erf": np.vectorize(math.erf),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(rng, name):
    a = rand(rng, (3, 17))
    check(getattr(wick.from_numpy(a), name)(), UNARY[name](a.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_unary_positive_domain(rng):
    a = rand(rng, (5, 9), 0.1, 4.0)
    t = wick.from_numpy(a)
    a64 = a.astype(np.float64)
    check(t.log(), np.log(a64), rtol=1e-5, atol=1e-6)
    check(t.sqrt(), np.sqrt(a64), rtol=1e-6, atol=1e-6)
    check(t.recip(), 1 / a64, rtol=1e-6, atol=1e-6)
    check(t.clamp(0.5, 2.0), np.clip(a64, 0.5, 2.0))
    check(t.affine(3.0, -1.0), a64 * 3 - 1, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((3, 1, 5), (1, 4, 1)), ((), (2, 3))])
def test_binary_operators_broadcast(rng, shapes):
    a, b = rand(rng, shapes[0]), rand(rng, shapes[1], 0.5, 2.0)
    ta, tb = wick.from_numpy(a), wick.from_numpy(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    check(ta + tb, a64 + b64)
    check(ta - tb, a64 - b64)
    check(ta * tb, a64 * b64)
    check(ta / tb, a64 / b64, rtol=1e-6, atol=1e-6)
    check(ta.maximum(tb), np.maximum(a64, b64))
    check(ta.minimum(tb), np.minimum(a64, b64))
    check(tb ** ta, b64 ** a64, rtol=1e-5, atol=1e-6)
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        got = getattr(ta, op)(tb)
        assert got.dtype == wick.u8
        np.testing.assert_array_equal(np.asarray(got), getattr(a, op)(b).astype(np.uint8))


def test_scalar_operators_either_side(rng):
    a = rand(rng, (6, 7), 0.5, 2.0)
    t, a64 = wick.from_numpy(a), a.astype(np.float64)
    check(t + 2, a64 + 2)
    check(2 + t, 2 + a64)
    check(1.5 - t, 1.5 - a64)
    check(t - 1.5, a64 - 1.5)
    check(2.0 * t, 2 * a64)
    check(3 / t, 3 / a64, rtol=1e-6, atol=1e-6)
    check(t / 4, a64 / 4)
    check(t ** 2, a64 ** 2, rtol=1e-6)
    check(2 ** t, 2 ** a64, rtol=1e-6)
    check(-t, -a64)
    check(abs(-t), a64)
    np.testing.assert_array_equal(np.asarray(t > 1.0), (a > 1.0).astype(np.uint8))
    np.testing.assert_array_equal(np.asarray(1.0 < t), (a > 1.0).astype(np.uint8))
    u = t
    u += 1  # rebinds u (a new tensor), t keeps its values
    check(u, a64 + 1)
    check(t, a64)
    assert t.__add__("x") is NotImplemented
    with pytest.raises(TypeError):
        t + "x"


def test_integer_dtypes(rng):
    a = rng.integers(-50, 50, size=(4, 6)).astype(np.int64)
    b = rng.integers(1, 9, size=(4, 6)).astype(np.int64)
    for dt in (np.int64, np.int32):
        ta, tb = wick.from_numpy(a.astype(dt)), wick.from_numpy(b.astype(dt))
        np.testing.assert_array_equal(np.asarray(ta + tb), a + b)
        np.testing.assert_array_equal(np.asarray(ta * tb), a * b)
        np.testing.assert_array_equal(np.asarray(ta / tb), np.trunc(a / b).astype(np.int64))
        assert (ta + tb).dtype == wick.dtype_from_numpy(dt)


@pytest.mark.parametrize("shape,dims", [((4, 5, 6), 1), ((4, 5, 6), (0, 2)), ((7,), 0), ((3, 8), -1)])
def test_reductions(rng, shape, dims):
    a = rand(rng, shape)
    t, a64 = wick.from_numpy(a), a.astype(np.float64)
    axis = dims if isinstance(dims, int) else tuple(dims)
    check(t.sum(dims), a64.sum(axis=axis), rtol=1e-5, atol=1e-5)
    check(t.mean(dims, keepdim=True), a64.mean(axis=axis, keepdims=True), rtol=1e-5, atol=1e-5)
    if isinstance(dims, int):
        check(t.max(dims), a64.max(axis=dims))
        check(t.min(dims), a64.min(axis=dims))
        np.testing.assert_array_equal(np.asarray(t.argmax(dims)), a.argmax(axis=dims))
        np.testing.assert_array_equal(np.asarray(t.argmin(dims)), a.argmin(axis=dims))
        check(t.var(dims), a64.var(axis=dims, ddof=1), rtol=1e-5, atol=1e-5)
        check(t.std(dims, unbiased=False), a64.std(axis=dims), rtol=1e-5, atol=1e-5)
        check(t.cumsum(dims), np.cumsum(a64, axis=dims), rtol=1e-5, atol=1e-5)
        check(t.softmax(dims), np.exp(a64) / np.exp(a64).sum(axis=dims, keepdims=True), rtol=1e-5, atol=1e-6)
    assert math.isclose(t.sum().item(), a64.sum(), rel_tol=1e-5, abs_tol=1e-5)
    assert math.isclose(t.mean().item(), a64.mean(), rel_tol=1e-5, abs_tol=1e-5)
    assert t.max().item() == a.max() and t.min().item() == a.min()


def test_topk(rng):
    a = rand(rng, (5, 11))
    values, ids = wick.from_numpy(a).topk(3)
    order = np.argsort(-a, axis=-1, kind="stable")[:, :3]
    np.testing.assert_array_equal(np.asarray(ids), order)
    np.testing.assert_array_equal(np.asarray(values), np.take_along_axis(a, order, -1))


@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4, 6)), ((2, 1, 3, 4), (5, 4, 2))])
def test_matmul(rng, shapes):
    a, b = rand(rng, shapes[0]), rand(rng, shapes[1])
    check(wick.from_numpy(a) @ wick.from_numpy(b), a.astype(np.float64) @ b.astype(np.float64),
          rtol=1e-5, atol=1e-5)


def test_views_and_shapes(rng):
    a = rand(rng, (2, 3, 4))
    t = wick.from_numpy(a)
    assert t.shape == (2, 3, 4) and t.ndim == 3 and len(t) == 2 and t.numel() == 24
    check(t.reshape(6, 4), a.reshape(6, 4))
    check(t.reshape((4, -1)), a.reshape(4, -1))
    check(t.permute(2, 0, 1), a.transpose(2, 0, 1))
    check(t.transpose(0, 2), a.swapaxes(0, 2))
    check(t.unsqueeze(1).squeeze(), a)
    check(t.flatten(), a.ravel())
    check(t.narrow(2, 1, 2), a[:, :, 1:3])
    check(t[0].T, a[0].T)
    check(wick.cat([t, t], 1), np.concatenate([a, a], 1))
    check(wick.stack([t, t], 0), np.stack([a, a], 0))
    check(t.broadcast_to((5, 2, 3, 4)), np.broadcast_to(a, (5, 2, 3, 4)))
    assert not t.permute(2, 0, 1).is_contiguous()
    assert t.permute(2, 0, 1).contiguous().is_contiguous()


KEYS = [
    (0,), (-1,), (0, slice(1, 3)), (slice(None), 2), (Ellipsis, 1), (None, 1),
    (slice(None, None, 2),), (slice(None, None, -1),), (1, slice(3, 0, -2), None),
    (slice(5, 2),), (Ellipsis,), (slice(-3, None), Ellipsis, slice(1, 4, 3)),
]


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_getitem_matches_numpy(rng, key):
    a = rand(rng, (4, 5, 6))
    t = wick.from_numpy(a)
    view = t[key]
    ref = a[key]
    check(view, ref)
    check(view + 1, ref.astype(np.float64) + 1)  # ops read the view's layout
    if view.numel():
        assert view.shares_storage_with(t)


def test_getitem_integer_array_and_errors(rng):
    a = rand(rng, (4, 5))
    t = wick.from_numpy(a)
    check(t[[3, 0, 3]], a[[3, 0, 3]])
    check(t[:, wick.tensor([4, 1])], a[:, [4, 1]])
    check(t[1:, [0, 2]], a[1:, [0, 2]])
    with pytest.raises(IndexError, match="index 4 is out of range for dim 0 of size 4"):
        t[4]
    with pytest.raises(wick.OutOfRangeError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(TypeError):
        t["a"]
    assert [row.tolist() for row in t] == a.tolist()  # iteration stops at IndexError


def test_creation_and_items():
    assert wick.zeros((2, 3)).tolist() == [[0.0] * 3] * 2
    assert wick.ones(3, dtype=wick.i64).tolist() == [1, 1, 1]
    assert wick.full((2,), 7.5).tolist() == [7.5, 7.5]
    assert wick.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert wick.arange(1, 2, 0.25, dtype=wick.f64).tolist() == [1, 1.25, 1.5, 1.75]
    np.testing.assert_allclose(np.asarray(wick.linspace(0, 1, 5)), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(np.asarray(wick.eye(3)), np.eye(3))
    t = wick.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.dtype == wick.f32 and t.shape == (2, 2)
    assert wick.tensor([1, 2]).dtype == wick.i64
    assert wick.tensor([1, 2], dtype=wick.bf16).dtype == wick.bf16
    assert wick.tensor(2.5).item() == 2.5 and isinstance(wick.tensor(3).item(), int)
    assert float(wick.tensor([2.0])) == 2.0 and int(wick.tensor(4)) == 4
    assert bool(wick.tensor(1)) and not bool(wick.tensor(0.0))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(wick.tensor([1, 2]))
    r = wick.rand((100,), 2.0, 3.0)
    assert 2.0 <= r.min().item() and r.max().item() < 3.0
    assert "Tensor[2, 2]{f32, cpu}" in repr(t) and "1." in str(t)


def test_dtype_conversion_and_where(rng):
    a = rand(rng, (3, 4))
    t = wick.from_numpy(a)
    np.testing.assert_array_equal(np.asarray(t.to(wick.f16)), a.astype(np.float16))
    np.testing.assert_array_equal(np.asarray(t.to(wick.f64)), a.astype(np.float64))
    np.testing.assert_array_equal(np.asarray(t.to(wick.bf16).to(wick.f32)),
                                  np.asarray(t.to(wick.bf16).to(wick.f64)).astype(np.float32))
    cond = t > 0
    check(wick.where(cond, t, t * 0), np.where(a > 0, a, 0))
    check(cond.where(t, -t), np.abs(a))


def test_in_place_ops_share_storage(rng):
    a = rand(rng, (3, 4))
    t = wick.from_numpy(a)
    v = t[1]
    v.fill_(5.0)
    assert (a[1] == 5.0).all()  # in-place writes reach the NumPy array wick adopted
    t.slice_set(wick.zeros((3, 1)), 1, 2)
    assert (a[:, 2] == 0).all()


def test_devices():
    cpu = wick.Device("cpu")
    assert cpu == wick.Device.cpu() and cpu.is_cpu and cpu.kind == wick.DeviceKind.cpu
    assert repr(cpu) == "wick.Device('cpu')"
    assert wick.available_devices()[0] == cpu
    t = wick.ones((2,), device="cpu")
    assert t.device == cpu and t.to("cpu").device == cpu
    with pytest.raises(wick.ParseError, match="unknown device 'tpu'"):
        wick.Device("tpu")


SET_KEYS = [(0,), (1, slice(1, 4)), (slice(None), 2), (Ellipsis, slice(None, None, 2)),
            (slice(None, None, -1), 0), (2, 3, 4), (None, 1)]


@pytest.mark.parametrize("key", SET_KEYS, ids=str)
def test_setitem_matches_numpy(rng, key):
    a = rand(rng, (4, 5, 6))
    ref = a.copy()
    t = wick.tensor(a)
    shape = ref[key].shape
    for value in (7.5, rand(rng, shape), rand(rng, shape[-1:]) if shape else rand(rng, ())):
        t[key] = value if not isinstance(value, np.ndarray) else wick.tensor(value)
        ref[key] = value
        np.testing.assert_array_equal(np.asarray(t), ref)  # and nothing outside t[key] changed


def test_setitem_writes_shared_storage_and_refuses_copies(rng):
    a = rand(rng, (3, 4))
    t = wick.from_numpy(a)
    t[1, 1:3] = [10.0, 20.0]  # lists go through wick.tensor
    assert a[1, 1] == 10.0 and a[1, 2] == 20.0
    t[2] = rand(rng, (1, 1, 4)).tolist()  # leading 1s drop, as in NumPy
    i = wick.zeros((2, 2), dtype=wick.i32)
    i[0] = 2.7  # a number converts to the tensor's dtype as in binary ops
    assert i.tolist() == [[2, 2], [0, 0]]
    with pytest.raises(wick.UnsupportedError, match="integer-array index is not a view"):
        t[[0, 1]] = 1.0
    with pytest.raises(wick.ShapeError):
        t[0] = wick.zeros(3)

"""Custom kernels (wick.CustomKernel): your GLSL or CUDA body on wick tensors, on every GPU
device of this machine (lavapipe's Vulkan device in CI; CUDA where a CUDA device exists),
checked against NumPy on fresh random inputs with the outputs' memory poisoned (NaN), so an
element the kernel does not write shows."""
import numpy as np
import pytest

import wick
from wick import _wick

GPUS = [d for d in wick.available_devices() if not d.is_cpu]
CUDA = [d for d in GPUS if d.kind == wick.DeviceKind.cuda]

# z = alpha * x + y over n elements.
AXPY = dict(
    inputs=[("x", wick.f32), ("y", wick.f32)],
    outputs=[("z", wick.f32)],
    params=[("alpha", wick.f32), ("n", wick.u32)],
    glsl="uint i = global_index();\nif (i < n) z[i] = alpha * x[i] + y[i];",
    cuda="uint32_t i = global_index();\nif (i < n) z[i] = alpha * x[i] + y[i];",
)

# Two outputs of two dtypes, a helper in the header and an i32 parameter:
# sq = x^2 (f32), h = f16(x + shift) (rounded to nearest even).
BODY2 = ("if (i >= n) return;\n"
         "sq[i] = square(x[i]);\n"
         "h[i] = CONVERT(f16, x[i] + float(shift));")
TWO_OUTPUTS = dict(
    inputs={"x": wick.f32},  # a dict declares in its order too
    outputs={"sq": wick.f32, "h": wick.f16},
    params={"n": wick.u32, "shift": wick.i32},
    glsl=wick.KernelSource("uint i = global_index();\n" + BODY2,
                           header="float square(float v) { return v * v; }"),
    cuda=wick.KernelSource("uint32_t i = global_index();\n" + BODY2,
                           header="WICK_DEV float square(float v) { return v * v; }"),
)


@pytest.fixture
def poisoned():
    _wick._set_poison_allocations(True)
    yield
    _wick._set_poison_allocations(False)


@pytest.mark.skipif(not GPUS, reason="no GPU device")
@pytest.mark.parametrize("device", GPUS, ids=str)
def test_axpy_with_a_scalar_parameter_matches_numpy(rng, poisoned, device):
    axpy = wick.CustomKernel("axpy", **AXPY)
    for n in (1, 255, 1000, 70001):
        x = rng.uniform(-2, 2, size=n).astype(np.float32)
        y = rng.uniform(-2, 2, size=n).astype(np.float32)
        alpha = float(np.float32(rng.uniform(-3, 3)))
        (z,) = axpy(inputs=[wick.tensor(x, device=device), wick.tensor(y, device=device)],
                    output_shapes=[n], threads=n, params=[alpha, n])
        assert z.device == device and z.dtype == wick.f32 and z.shape == (n,)
        # Two f32 roundings (or one, fused): the float64 reference within that.
        np.testing.assert_allclose(np.asarray(z), alpha * x.astype(np.float64) + y,
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.skipif(not GPUS, reason="no GPU device")
@pytest.mark.parametrize("device", GPUS, ids=str)
def test_views_are_read_in_row_major_order(rng, poisoned, device):
    axpy = wick.CustomKernel("axpy", **AXPY)
    x = rng.uniform(-2, 2, size=(10, 6)).astype(np.float32)
    y = rng.uniform(-2, 2, size=(6, 10)).astype(np.float32)
    xt = wick.tensor(x, device=device).T  # a transposed view: copied contiguous first
    (z,) = axpy(inputs=[xt, wick.tensor(y, device=device)], output_shapes=[(6, 10)], threads=60,
                params=[0.5, 60])
    assert z.shape == (6, 10)
    np.testing.assert_allclose(np.asarray(z), 0.5 * x.T.astype(np.float64) + y, rtol=1e-6,
                               atol=1e-6)


@pytest.mark.skipif(not GPUS, reason="no GPU device")
@pytest.mark.parametrize("device", GPUS, ids=str)
def test_two_outputs_of_two_dtypes_with_a_header(rng, poisoned, device):
    k = wick.CustomKernel("square_and_half", **TWO_OUTPUTS)
    assert k.outputs == [("sq", wick.f32), ("h", wick.f16)]
    shift = int(rng.integers(-5, 6))
    x = rng.uniform(-100, 100, size=(3, 259)).astype(np.float32)
    n = x.size
    sq, h = k(inputs=[wick.tensor(x, device=device)], output_shapes=[(n,), x.shape], threads=n,
              params=[n, shift])
    assert sq.shape == (n,) and sq.dtype == wick.f32
    assert h.shape == x.shape and h.dtype == wick.f16
    np.testing.assert_allclose(np.asarray(sq), x.reshape(-1).astype(np.float64) ** 2, rtol=1.2e-7)
    # x + shift in f32, then rounded to f16 as NumPy rounds it: exactly.
    np.testing.assert_array_equal(np.asarray(h), (x + np.float32(shift)).astype(np.float16))


@pytest.mark.skipif(not GPUS, reason="no GPU device")
@pytest.mark.parametrize("device", GPUS, ids=str)
def test_a_kernel_without_inputs_runs_where_it_is_told(poisoned, device):
    iota = wick.CustomKernel(
        "iota", outputs=[("values", wick.i32)], params=[("n", wick.u32), ("step", wick.i32)],
        glsl="uint i = global_index(); if (i < n) values[i] = int(i) * step;",
        cuda="uint32_t i = global_index(); if (i < n) values[i] = int32_t(i) * step;",
        threads_per_group=64)
    (values,) = iota(output_shapes=[100], threads=100, params=[100, -3], device=device)
    assert values.device == device
    np.testing.assert_array_equal(np.asarray(values), np.arange(100, dtype=np.int32) * -3)
    with pytest.raises(wick.DeviceError, match="no inputs"):
        iota(output_shapes=[100], threads=100, params=[100, 1])


@pytest.mark.skipif(not GPUS, reason="no GPU device")
@pytest.mark.parametrize("device", GPUS, ids=str)
def test_compile_errors_carry_the_compilers_message(device):
    spec = dict(AXPY, glsl="uint i = global_index();\nz[i] = undefined_fn(x[i]);",
                cuda="uint32_t i = global_index();\nz[i] = undefined_fn(x[i]);")
    broken = wick.CustomKernel("broken", **spec)
    x = wick.ones(4, device=device)
    # The compiler's diagnostic, its line counted from the body's first line.
    line = "broken.body(2)" if device.kind == wick.DeviceKind.cuda else "broken.body:2"
    for _ in range(2):  # and again: nothing half-cached
        with pytest.raises(wick.ParseError, match="source does not compile") as e:
            broken(inputs=[x, x], output_shapes=[4], threads=4, params=[1, 4])
        assert "undefined_fn" in str(e.value) and line in str(e.value)
        assert isinstance(e.value, ValueError) and e.value.kind == "parse"
    # No source in this device's language.
    other = "cuda" if device.kind == wick.DeviceKind.cuda else "glsl"
    elsewhere = wick.CustomKernel("axpy", **dict(AXPY, **{other: None}))
    with pytest.raises(wick.UnsupportedError, match="CUDA" if other == "cuda" else "GLSL"):
        elsewhere(inputs=[x, x], output_shapes=[4], threads=4, params=[1, 4])


def test_bad_specs_and_arguments_raise_with_clear_messages():
    axpy = wick.CustomKernel("axpy", **AXPY)
    assert (axpy.name, axpy.threads_per_group) == ("axpy", 256)
    assert axpy.inputs == [("x", wick.f32), ("y", wick.f32)]
    assert axpy.params == [("alpha", wick.f32), ("n", wick.u32)]
    assert axpy.glsl.body.startswith("uint i") and axpy.glsl.header == ""
    assert repr(axpy) == ("wick.CustomKernel('axpy', inputs=[x: f32, y: f32], outputs=[z: f32], "
                          "params=[alpha: f32, n: u32])")
    # The spec, checked when made (wick's messages).
    with pytest.raises(wick.UnsupportedError, match="letters"):
        wick.CustomKernel("my kernel", **AXPY)
    with pytest.raises(wick.DTypeError, match="alpha.*f16"):
        wick.CustomKernel("axpy", **dict(AXPY, params=[("alpha", wick.f16)]))
    with pytest.raises(wick.UnsupportedError, match="'x' is declared twice"):
        wick.CustomKernel("axpy", **dict(AXPY, outputs=[("x", wick.f32)]))
    with pytest.raises(wick.UnsupportedError, match="no output"):
        wick.CustomKernel("axpy", **dict(AXPY, outputs=[]))
    with pytest.raises(TypeError, match=r"inputs\[1\] must be a \(name: str, dtype: wick.DType\)"):
        wick.CustomKernel("axpy", **dict(AXPY, inputs=[("x", wick.f32), ("y", "f32")]))
    with pytest.raises(TypeError, match="glsl must be the body"):
        wick.CustomKernel("axpy", **dict(AXPY, glsl=3))
    # The launch, checked against the spec before anything runs (the CPU's tensors will do).
    x = wick.ones(4)
    with pytest.raises(wick.ShapeError, match="takes 2 inputs, got 1"):
        axpy(inputs=[x], output_shapes=[4], threads=4, params=[1, 4])
    with pytest.raises(wick.DTypeError, match="input 1 'y' must be f32"):
        axpy(inputs=[x, x.to(wick.f16)], output_shapes=[4], threads=4, params=[1, 4])
    with pytest.raises(wick.ShapeError, match="1 outputs, got 2 output shapes"):
        axpy(inputs=[x, x], output_shapes=[4, 4], threads=4, params=[1, 4])
    with pytest.raises(wick.ShapeError, match="takes 2 parameters, got 1"):
        axpy(inputs=[x, x], output_shapes=[4], threads=4, params=[1])
    with pytest.raises(wick.OutOfRangeError, match="'n'.*whole number.*4.5"):
        axpy(inputs=[x, x], output_shapes=[4], threads=4, params=[1, 4.5])
    with pytest.raises(TypeError, match=r"inputs\[0\] must be a wick.Tensor, got .*ndarray"):
        axpy(inputs=[np.ones(4, np.float32), x], output_shapes=[4], threads=4, params=[1, 4])
    with pytest.raises(TypeError, match=r"params\[0\] must be a number, got str"):
        axpy(inputs=[x, x], output_shapes=[4], threads=4, params=["1", 4])
    with pytest.raises(TypeError, match="inputs must be a list"):
        axpy(inputs=x, output_shapes=[4], threads=4, params=[1, 4])
    with pytest.raises(TypeError):
        axpy(inputs=[x, x], output_shapes=[4], params=[1, 4])  # threads is required
    with pytest.raises(wick.UnsupportedError, match="custom kernels need a GPU device"):
        axpy(inputs=[x, x], output_shapes=[4], threads=4, params=[1, 4])
    if GPUS:
        with pytest.raises(wick.DeviceError, match="'y' is on cpu"):
            axpy(inputs=[wick.ones(4, device=GPUS[0]), x], output_shapes=[4], threads=4,
                 params=[1, 4])


@pytest.mark.skipif(not CUDA, reason="no CUDA device")
@pytest.mark.parametrize("device", CUDA, ids=str)
def test_cuda_source_on_a_cuda_device(rng, poisoned, device):
    # A CUDA-only kernel: a warp-shuffle sum of each 32 elements (CUDA's own intrinsics).
    k = wick.CustomKernel(
        "warp_sums", inputs=[("x", wick.f32)], outputs=[("sums", wick.f32)],
        params=[("n", wick.u32)],
        cuda=wick.KernelSource(
            "uint32_t i = global_index();\n"
            "float v = warp_total(i < n ? x[i] : 0.0f);\n"
            "if (i < n && threadIdx.x % 32 == 0) sums[i / 32] = v;",
            header="WICK_DEV float warp_total(float v) {\n"
                   "  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);\n"
                   "  return v;\n"
                   "}"),
        threads_per_group=128)
    x = rng.uniform(-1, 1, size=32 * 50).astype(np.float32)
    (sums,) = k(inputs=[wick.tensor(x, device=device)], output_shapes=[50], threads=x.size,
                params=[x.size])
    np.testing.assert_allclose(np.asarray(sums), x.astype(np.float64).reshape(50, 32).sum(1),
                               rtol=1e-5, atol=1e-5)
    # A GLSL-only kernel has nothing to run here.
    glsl_only = wick.CustomKernel("axpy", **dict(AXPY, cuda=None))
    t = wick.ones(4, device=device)
    with pytest.raises(wick.UnsupportedError, match="CUDA"):
        glsl_only(inputs=[t, t], output_shapes=[4], threads=4, params=[1, 4])

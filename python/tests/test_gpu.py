"""Tensors on the GPU devices of this machine (lavapipe's Vulkan device in CI) from Python."""
import numpy as np
import pytest

import wick

GPUS = [d for d in wick.available_devices() if not d.is_cpu]


@pytest.mark.skipif(not GPUS, reason="no GPU device")
@pytest.mark.parametrize("device", GPUS, ids=str)
def test_ops_and_copies_on_gpu(rng, device):
    a = rng.uniform(-2, 2, size=(3, 4, 5)).astype(np.float32)
    b = rng.uniform(-2, 2, size=(5, 2)).astype(np.float32)
    t = wick.tensor(a, device=device)
    assert t.device == device
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    tol = dict(rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(t * 2.0 + 1.0), a64 * 2 + 1, **tol)
    np.testing.assert_allclose(np.asarray(t @ wick.tensor(b, device=device)), a64 @ b64, **tol)
    np.testing.assert_allclose(np.asarray(t.sum(1)), a64.sum(1), **tol)
    np.testing.assert_allclose(np.asarray(t[0, 1:3]), a64[0, 1:3], **tol)
    np.testing.assert_allclose(np.asarray(t[:, ::-1, 2]), a64[:, ::-1, 2], **tol)
    # The host sees GPU tensors through copies: np.asarray copies, NumPy views refuse. DLPack
    # shares CUDA memory (test_cuda_interop.py); Vulkan memory has no address to share.
    assert np.asarray(t).ctypes.data != np.asarray(t).ctypes.data
    np.testing.assert_array_equal(np.asarray(t.cpu()), a)
    with pytest.raises(wick.DeviceError, match="not the CPU"):
        t.numpy()
    if device.kind == wick.DeviceKind.vulkan:
        with pytest.raises(wick.DeviceError,
                           match=r"Vulkan memory cannot be exported.*t\.to\('cpu'\)"):
            t.__dlpack__()
        with pytest.raises(wick.DeviceError, match="Vulkan memory cannot be exported"):
            wick.from_dlpack(t)
    # A host copy when the consumer asks for the CPU (the array API's dl_device).
    np.testing.assert_array_equal(np.from_dlpack(t, device="cpu"), a)
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(1, 0), copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(t, copy=False)
    kind = {wick.DeviceKind.vulkan: 7, wick.DeviceKind.cuda: 2}[device.kind]
    assert t.__dlpack_device__() == (kind, device.ordinal)
    with pytest.raises(wick.DeviceError):
        t + wick.tensor(a)  # tensors on two devices
    ref = a.copy()
    t[0, 1:3] = 5.0
    t[2] = wick.tensor(b.T[:1])  # broadcast over the 4 rows of t[2]
    ref[0, 1:3] = 5.0
    ref[2] = b.T[:1]
    np.testing.assert_array_equal(np.asarray(t), ref)
    with pytest.raises(wick.UnsupportedError, match="negative step"):
        t[::-1] = 1.0

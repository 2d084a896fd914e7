"""CUDA tensors through DLPack without copies, with PyTorch: torch.cuda -> wick -> torch.cuda
shares one device memory (checked by pointer), and each side sees the other's finished values.
Runs where PyTorch sees a CUDA device and wick has one; skipped otherwise (CI has neither)."""
import gc

import numpy as np
import pytest

import wick

try:
    import torch
except ImportError:  # PyTorch is no test dependency
    torch = None

WICK_CUDA = [d for d in wick.available_devices() if d.kind == wick.DeviceKind.cuda]
pytestmark = pytest.mark.skipif(
    torch is None or not torch.cuda.is_available() or not WICK_CUDA,
    reason="needs PyTorch with a CUDA device and a wick CUDA device")


@pytest.fixture
def gen(rng):
    g = torch.Generator(device="cuda")
    g.manual_seed(int(rng.integers(2**62)))
    return g


def test_cuda_round_trip_torch_wick_torch_shares_memory(gen):
    a = torch.randn(64, 33, device="cuda", generator=gen)
    t = wick.from_dlpack(a)
    assert t.device == wick.Device("cuda:0") and t.dtype == wick.f32 and t.shape == (64, 33)
    assert t.data_ptr() == a.data_ptr()
    np.testing.assert_array_equal(np.asarray(t), a.cpu().numpy())
    b = torch.from_dlpack(t)
    assert b.device == a.device and b.data_ptr() == a.data_ptr()
    assert torch.equal(b, a)
    # A wick op on the imported tensor.
    u = (t * 2.0 + 1.0).exp().sum(1)
    np.testing.assert_allclose(np.asarray(u), (a.double() * 2 + 1).exp().sum(1).cpu().numpy(),
                               rtol=1e-5)
    # Writes go both ways, each side's finished before the other reads (the sync rules).
    a.mul_(-1.0)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(np.asarray(t), a.cpu().numpy())
    t[3] = 7.0
    t.device.synchronize()
    assert torch.all(a[3] == 7.0)


def test_cuda_export_of_wick_results_is_finished_and_zero_copy(gen):
    dev = wick.Device("cuda:0")
    x = wick.from_dlpack(torch.randn(512, 256, device="cuda", generator=gen))
    y = wick.from_dlpack(torch.randn(256, 384, device="cuda", generator=gen))
    z = (x @ y).relu() + 0.5  # queued on wick's stream
    tz = torch.from_dlpack(z)  # waits for it: torch's stream sees the finished values
    assert tz.data_ptr() == z.data_ptr() and tz.shape == (512, 384)
    assert tz.device == torch.device("cuda", dev.ordinal)
    want = (torch.from_dlpack(x) @ torch.from_dlpack(y)).relu() + 0.5
    torch.testing.assert_close(tz, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(z), tz.cpu().numpy(), rtol=0, atol=0)
    assert z.__dlpack_device__() == (2, dev.ordinal)


def test_cuda_views_dtypes_and_lifetimes(gen):
    a = torch.randn(8, 6, device="cuda", generator=gen)
    at = a.t()[1:5]  # strided, offset
    t = wick.from_dlpack(at)
    assert t.shape == (4, 8) and t.data_ptr() == at.data_ptr()
    np.testing.assert_array_equal(np.asarray(t), at.cpu().numpy())
    back = torch.from_dlpack(t)
    assert back.stride() == at.stride() and torch.equal(back, at)
    # bfloat16 (NumPy has none) and integers.
    h = torch.randn(5, 7, device="cuda", generator=gen).to(torch.bfloat16)
    th = wick.from_dlpack(h)
    assert th.dtype == wick.bf16
    np.testing.assert_array_equal(np.asarray(th.to(wick.f32)), h.float().cpu().numpy())
    i = torch.arange(10, device="cuda", dtype=torch.int64)
    assert wick.from_dlpack(i).tolist() == list(range(10))
    # The wick tensor holds the producer's memory, the consumer the wick tensor's.
    c = torch.full((1000,), 3.0, device="cuda")
    tc = wick.from_dlpack(c)
    del c
    gc.collect()
    torch.cuda.empty_cache()
    assert (tc * 2).sum().item() == 6000.0
    d = torch.from_dlpack(wick.arange(1000, dtype=wick.f32, device="cuda:0"))
    gc.collect()
    assert d.sum().item() == 999 * 1000 / 2


def test_cuda_tensors_to_the_host_through_dlpack():
    t = wick.arange(6, dtype=wick.f32, device="cuda:0").reshape(2, 3)
    np.testing.assert_array_equal(np.from_dlpack(t, device="cpu"), np.arange(6.0).reshape(2, 3))
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(1, 0), copy=False)

// Device memory shared with other code on CUDA devices (tensor.h): Tensor::from_blob uses memory
// that other code allocated (here with the driver API, in the device's primary context, as
// PyTorch's allocator does) in place, and Tensor::data_ptr hands out a tensor's device address,
// each with its documented synchronization. Skipped where no CUDA device runs.
#ifdef WICK_WITH_CUDA

#include <cstring>

#include "backend/registry.h"
#include "cuda/cu_api.h"
#include "gpu_test_util.h"

namespace wick::testing {
namespace {

class CudaMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    if (backend::device_count(DeviceKind::Cuda) == 0) GTEST_SKIP() << "no CUDA device";
    api_ = cuda::driver_api();
    ASSERT_NE(api_, nullptr);
    // Other code's memory lives in the device's primary context (PyTorch, the runtime API).
    cuda::check(*api_, api_->cuDevicePrimaryCtxRetain(&context_, 0), "retain");
    cuda::check(*api_, api_->cuCtxSetCurrent(context_), "set current");
  }
  void TearDown() override {
    for (CUdeviceptr p : allocations_) api_->cuMemFree(p);
    if (context_) api_->cuDevicePrimaryCtxRelease(0);
  }
  // Device memory that the test (other code) owns.
  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    cuda::check(*api_, api_->cuMemAlloc(&p, bytes), "cuMemAlloc");
    allocations_.push_back(p);
    return p;
  }
  // What other code does on the legacy default stream (PyTorch's and CuPy's by default).
  void fill_on_legacy_stream(CUdeviceptr p, float v, size_t n) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    cuda::check(*api_, api_->cuMemsetD32Async(p, bits, n, CU_STREAM_LEGACY), "memset");
  }
  std::vector<float> read(CUdeviceptr p, size_t n) {
    std::vector<float> out(n);
    cuda::check(
        *api_,
        api_->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(out.data()), p, n * 4, CU_STREAM_LEGACY),
        "copy to host");
    cuda::check(*api_, api_->cuStreamSynchronize(CU_STREAM_LEGACY), "sync");
    return out;
  }
  static void* ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

  const cuda::DriverApi* api_ = nullptr;
  CUcontext context_ = nullptr;
  std::vector<CUdeviceptr> allocations_;
};

TEST_F(CudaMemory, FromBlobUsesDeviceMemoryInPlaceAfterTheLegacyStream) {
  const Device dev = Device::parse("cuda:0");
  const size_t n = 64 << 20;  // 256 MiB: the fill takes a while, so a missed wait shows
  const CUdeviceptr p = alloc(n * 4);
  fill_on_legacy_stream(p, 1.5f, n);
  int deleted = 0;
  {
    Tensor t = Tensor::from_blob(ptr(p), {int64_t(n)}, DType::F32, dev, [&](void* q) {
      EXPECT_EQ(q, ptr(p));
      deleted++;
    });
    EXPECT_EQ(t.device(), dev);
    EXPECT_EQ(t.data_ptr(), ptr(p)) << "no copy";
    // from_blob waited for the fill: every element is there, first and last alike.
    EXPECT_EQ(t.min().to_scalar<float>(), 1.5f);
    EXPECT_EQ(t.max().to_scalar<float>(), 1.5f);
    const Tensor view = t.narrow(0, 1000, 8);
    EXPECT_EQ(view.data_ptr(), static_cast<char*>(ptr(p)) + 4000);
    EXPECT_EQ((view * 2.0).to_vec<float>(), std::vector<float>(8, 3.0f));
    // wick's in-place writes land in the other code's memory (after a synchronization).
    view.const_set(7.0);
    dev.synchronize();
    const std::vector<float> back = read(p + 4000, 10);
    EXPECT_EQ(back[7], 7.0f);
    EXPECT_EQ(back[8], 1.5f);
    EXPECT_EQ(deleted, 0);
  }
  dev.synchronize();
  EXPECT_EQ(deleted, 1);
}

// The deleter waits for wick's queued work on the memory: a private device with a long command
// list keeps the op recorded but unsubmitted, so it cannot have run when the tensor goes.
TEST_F(CudaMemory, TheDeleterRunsOnlyOnceNoQueuedOpUsesTheMemory) {
  const Device dev =
      private_device("cuda:0", [](gpu::GpuOptions& o) { o.queue.ops_per_buffer = 1000; });
  const size_t n = 4096;
  const CUdeviceptr p = alloc(n * 4);
  fill_on_legacy_stream(p, 2.0f, n);
  int deleted = 0;
  Tensor t = Tensor::from_blob(ptr(p), {int64_t(n)}, DType::F32, dev, [&](void*) { deleted++; });
  const Tensor u = t + 1.0;  // recorded, not submitted
  t = Tensor();
  EXPECT_EQ(deleted, 0) << "the memory went back while an op still had to read it";
  EXPECT_EQ(u.to_vec<float>(), std::vector<float>(n, 3.0f));  // submits and waits
  EXPECT_EQ(deleted, 1);
}

TEST_F(CudaMemory, DataPtrWaitsForTheQueueAndHandsOutDeviceMemory) {
  const Device dev = Device::parse("cuda:0");
  const int64_t n = 1 << 24;
  const Tensor t = Tensor::arange(0, double(n), DType::F32, dev) * 3.0;  // queued
  const auto* p = static_cast<const float*>(t.data_ptr());
  const CUdeviceptr address = reinterpret_cast<uintptr_t>(p);
  // Read by other code at once, on its own stream: the values are final.
  const std::vector<float> head = read(address, 4);
  EXPECT_EQ(head, (std::vector<float>{0.0f, 3.0f, 6.0f, 9.0f}));
  EXPECT_EQ(read(address + (n - 1) * 4, 1)[0], float(3.0 * double(n - 1)));
  EXPECT_EQ(t.narrow(0, 5, 2).data_ptr(), p + 5);
  EXPECT_EQ(t.data_ptr<float>(), p);
  // A round trip: wick adopts the address it handed out, and both see one memory.
  const Tensor same = Tensor::from_blob(const_cast<float*>(p), {n}, DType::F32, dev);
  EXPECT_EQ(same.data_ptr(), p);
  EXPECT_EQ(same.narrow(0, 7, 1).to_scalar<float>(), 21.0f);
}

// Memory lent to other code goes back to wick's pool only after the work that code queued on
// the legacy stream: else the next tensor of that size would get memory still being written.
TEST_F(CudaMemory, LentMemoryIsReusedOnlyAfterTheLegacyStream) {
  PoisonOff quiet;
  const Device dev = private_device("cuda:0");
  const int64_t n = 64 << 20;
  Tensor t = Tensor::zeros({n}, DType::F32, dev);
  const CUdeviceptr address = reinterpret_cast<uintptr_t>(t.data_ptr());
  // Late writes of other code (a few milliseconds of them).
  for (int i = 0; i < 32; i++) fill_on_legacy_stream(address, -1.0f, size_t(n));
  t = Tensor();
  const Tensor next = Tensor::full(4.0, {n}, DType::F32, dev);
  EXPECT_EQ(next.min().to_scalar<float>(), 4.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(next.data_ptr()), address) << "the pool reused it";
}

TEST_F(CudaMemory, MemoryThatIsNotThisDevicesIsRefused) {
  const Device dev = Device::parse("cuda:0");
  int deleted = 0;
  auto count = [&](void*) { deleted++; };
  std::vector<float> host(256);
  expect_error([&] { Tensor::from_blob(host.data(), {256}, DType::F32, dev, count); },
               ErrorKind::Device, {"from_blob", "not memory the CUDA driver knows", "cuda:0"});
  void* pinned = nullptr;
  cuda::check(*api_, api_->cuMemHostAlloc(&pinned, 1024, 0), "cuMemHostAlloc");
  expect_error([&] { Tensor::from_blob(pinned, {256}, DType::F32, dev, count); }, ErrorKind::Device,
               {"from_blob", "host memory"});
  api_->cuMemFreeHost(pinned);
  const CUdeviceptr small = alloc(1024);
  expect_error([&] { Tensor::from_blob(ptr(small), {1 << 20}, DType::F32, dev, count); },
               ErrorKind::Device, {"from_blob", "past the end of its allocation"});
  expect_error([&] { Tensor::from_blob(ptr(small + 2), {4}, DType::F32, dev, count); },
               ErrorKind::Unsupported, {"from_blob", "aligned"});
  EXPECT_EQ(deleted, 0) << "a refused blob's deleter must not run";
  // The whole allocation, or any part of it, is fine.
  EXPECT_EQ(Tensor::from_blob(ptr(small + 512), {128}, DType::F32, dev).numel(), 128);
}

}  // namespace
}  // namespace wick::testing

#endif  // WICK_WITH_CUDA

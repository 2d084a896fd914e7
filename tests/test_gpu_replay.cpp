// Capture and replay (Device::capture, gpu::CommandQueue::begin_capture .. replay) on every GPU
// device under test: the captured ops run at every replay with what their input tensors hold
// then, in order with the ops around them, and nothing of the capture runs before a replay.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "gpu_test_util.h"

namespace wick::testing {
namespace {

class GpuReplay : public GpuDeviceTest {};

std::vector<float> random_floats(Rng& rng, size_t n, double lo, double hi) {
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

// y = exp(x * 0.5 + s) and its sum, computed in double from the f32 inputs.
void reference(const std::vector<float>& x, float s, std::vector<double>& y, double& sum) {
  y.resize(x.size());
  sum = 0;
  for (size_t i = 0; i < x.size(); i++) {
    y[i] = std::exp(static_cast<double>(x[i]) * 0.5 + s);
    sum += y[i];
  }
}

TEST_P(GpuReplay, ReplayRunsTheCapturedOpsOnTheInputsOfTheMoment) {
  Rng rng;
  SCOPED_TRACE(rng.seed());
  const PoisonOff exact_counts;
  const Device d = private_device();
  ASSERT_TRUE(d.can_capture());
  const size_t n = 777;
  const Tensor x = Tensor::from_vec(random_floats(rng, n, -1, 1), {static_cast<int64_t>(n)}, d);
  const Tensor s = Tensor::zeros({1}, DType::F32, d);
  Tensor y, sum;
  const Recording step = d.capture([&] {
    y = (x * 0.5 + s).exp();
    sum = y.sum_all();
  });
  EXPECT_GE(step.ops(), 4u);  // mul, add, exp, sum
  EXPECT_GE(step.dispatches(), 4u);
  const uint64_t dispatches_before = gpu(d).stats().queue.dispatches;
  for (int round = 0; round < 5; round++) {
    const std::vector<float> xs = random_floats(rng, n, -1, 1);
    const float sv = static_cast<float>(rng.uniform(-0.5, 0.5));
    x.slice_set(Tensor::from_vec(xs, {static_cast<int64_t>(n)}, d), 0, 0);
    s.const_set(sv);
    step.replay();
    std::vector<double> want;
    double want_sum;
    reference(xs, sv, want, want_sum);
    const std::vector<float> got = y.to_vec<float>();
    ASSERT_EQ(got.size(), n);
    for (size_t i = 0; i < n; i++)
      ASSERT_NEAR(got[i], want[i], 1e-5 * want[i] + 1e-6) << "round " << round << " element " << i;
    EXPECT_NEAR(sum.to_vec<float>()[0], want_sum, 1e-5 * want_sum) << "round " << round;
  }
  // A replay records nothing: the only new dispatches are the input writes' (copies, fills).
  const gpu::GpuDevice::Stats st = gpu(d).stats();
  EXPECT_EQ(st.queue.replays, 5u);
  EXPECT_EQ(st.queue.replayed_dispatches, 5 * step.dispatches());
  EXPECT_LE(st.queue.dispatches - dispatches_before, 5u * 2u);
}

// Consecutive replays and the ops around them run in order: a step that adds one to a tensor
// it also reads counts the replays, and an op recorded after a replay sees its result.
TEST_P(GpuReplay, ReplaysAreOrderedWithEachOtherAndWithOtherOps) {
  const Device d = private_device();
  const Tensor acc = Tensor::zeros({64}, DType::F32, d);
  const Tensor one = Tensor::ones({64}, DType::F32, d);
  const Recording step = d.capture([&] { acc.slice_set(acc + one, 0, 0); });
  for (int i = 0; i < 37; i++) step.replay();
  const Tensor after = acc * 2.0;  // recorded after the replays, without a wait between
  for (float v : acc.to_vec<float>()) ASSERT_EQ(v, 37.0f);
  for (float v : after.to_vec<float>()) ASSERT_EQ(v, 74.0f);
  step.replay();
  for (float v : acc.to_vec<float>()) ASSERT_EQ(v, 38.0f);
}

// Nothing captured runs before a replay: the output keeps what was there.
TEST_P(GpuReplay, CapturedOpsDoNotRunUntilReplayed) {
  const Device d = private_device();
  const Tensor x = Tensor::ones({16}, DType::F32, d);
  const Tensor out = Tensor::full(5.0, {16}, DType::F32, d);
  const Recording step = d.capture([&] { out.slice_set(x * 3.0, 0, 0); });
  for (float v : out.to_vec<float>()) ASSERT_EQ(v, 5.0f);
  step.replay();
  for (float v : out.to_vec<float>()) ASSERT_EQ(v, 3.0f);
}

// Reading back inside a capture is an error (nothing ran yet); the device works on after it, and
// the failed capture leaves no trace in later work.
TEST_P(GpuReplay, AWaitInsideACaptureIsAnErrorAndTheDeviceGoesOn) {
  const Device d = private_device();
  const Tensor x = Tensor::from_vec(std::vector<float>{1, 2, 3}, {3}, d);
  try {
    d.capture([&] {
      const Tensor y = x + x;
      (void)y.to_vec<float>();
    });
    FAIL() << "a read-back inside a capture did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("capture"), std::string::npos) << e.what();
  }
  EXPECT_EQ((x * 2.0).to_vec<float>(), (std::vector<float>{2, 4, 6}));
  const Recording step = d.capture([&] { x.slice_set(x + 1.0, 0, 0); });
  step.replay();
  EXPECT_EQ(x.to_vec<float>(), (std::vector<float>{2, 3, 4}));
}

// A replay whose captured ops would read a tensor made before the capture and freed since is an
// error, not a read of memory nobody owns.
TEST_P(GpuReplay, ReplayOfAFreedInputIsAnError) {
  const Device d = private_device();
  Tensor x = Tensor::ones({8}, DType::F32, d);
  Tensor y;
  const Recording step = d.capture([&] { y = x + 1.0; });
  step.replay();
  EXPECT_EQ(y.to_vec<float>(), std::vector<float>(8, 2.0f));
  x = Tensor();
  try {
    step.replay();
    FAIL() << "replay of a freed input did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Device) << e.what();
  }
}

// Another thread's ops on the device wait while a capture runs, then run as ordinary ops: they
// are not in the capture and their results are right.
TEST_P(GpuReplay, OtherThreadsOpsWaitForTheCaptureAndAreNotInIt) {
  const PoisonOff exact_counts;
  const Device d = private_device();
  const Tensor a = Tensor::full(2.0, {32}, DType::F32, d);
  const Tensor b = Tensor::full(3.0, {32}, DType::F32, d);
  std::atomic<bool> started{false}, done{false};
  std::vector<float> other;
  std::thread t;
  Tensor y;
  const Recording step = d.capture([&] {
    t = std::thread([&] {
      started = true;
      other = (b * b).to_vec<float>();
      done = true;
    });
    while (!started) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(done.load());  // its op waits for the capture to end
    y = a * a;
  });
  t.join();
  EXPECT_EQ(other, std::vector<float>(32, 9.0f));
  Tensor alone;
  EXPECT_EQ(step.ops(), d.capture([&] { alone = a * a; }).ops());
  step.replay();
  EXPECT_EQ(y.to_vec<float>(), std::vector<float>(32, 4.0f));
}

// The buffers of a capture stay held while it lives (the pool counts them as in use) and go back
// when it goes.
TEST_P(GpuReplay, ACapturePinsItsBuffersUntilItGoes) {
  const Device d = private_device();
  const Tensor x = Tensor::ones({1 << 16}, DType::F32, d);
  const uint64_t before = gpu(d).stats().device_pool.in_use_bytes;
  {
    const Recording step = d.capture([&] {
      const Tensor t1 = x * 2.0;  // dropped inside: still used by the recording
      const Tensor t2 = t1 + 1.0;
      (void)t2.sum_all();
    });
    EXPECT_GE(gpu(d).stats().device_pool.in_use_bytes, before + 2 * (4u << 16));
    step.replay();
    d.synchronize();
  }
  EXPECT_EQ(gpu(d).stats().device_pool.in_use_bytes, before);
}

WICK_INSTANTIATE_GPU_DEVICES(GpuReplay);

TEST(Replay, TheCpuCannotCapture) {
  const Device cpu = Device::cpu();
  EXPECT_FALSE(cpu.can_capture());
  try {
    cpu.capture([] {});
    FAIL() << "the CPU captured";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported) << e.what();
  }
  EXPECT_THROW(Recording().replay(), Error);
}

}  // namespace
}  // namespace wick::testing

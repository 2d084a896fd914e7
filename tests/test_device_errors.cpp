// Errors a device finds while running a kernel (out-of-range ids, integer division by zero)
// reach the op that caused them, in the thread that recorded it, and no other thread: with
// threads sharing one device, half of them making bad ops, every bad op raises in its own thread
// and no good op ever raises (on a GPU the kernel finds the bad id; one error record per op,
// gpu/device_errors.h). On the CPU the same holds trivially; the test runs on every device.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace wick::testing {
namespace {

class DeviceErrors : public DeviceTest {};

TEST_P(DeviceErrors, EveryBadOpRaisesInItsOwnThreadAndNoGoodOpRaises) {
  const Device dev = device();
  Rng rng;
  SCOPED_TRACE("seed " + std::to_string(rng.seed()));
  constexpr int kThreads = 8, kIters = 60;
  const Tensor table = Tensor::from_vec<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}, dev);
  std::atomic<int> bad_raised{0}, bad_silent{0}, good_raised{0}, good_wrong{0};
  std::atomic<int> wrong_message{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    const uint64_t seed = rng.gen()();
    threads.emplace_back([&, t, seed] {
      Rng local(seed);
      for (int i = 0; i < kIters; i++) {
        const bool bad = t % 2 == 0;
        // A bad id: past the 4 rows, or far past 2^32 (reported whole, not clamped).
        const int64_t bad_id = local.integer(0, 1) ? 9 : (int64_t{1} << 40) + 3;
        const int64_t good_id = local.integer(0, 3);
        const Tensor ids = Tensor::from_vec<int64_t>({good_id, bad ? bad_id : good_id}, {2}, dev);
        try {
          const std::vector<float> v = table.index_select(ids, 0).to_vec<float>();
          if (bad) {
            bad_silent++;
          } else {
            const float want = static_cast<float>(2 * good_id + 1);
            if (v.size() != 4 || v[0] != want || v[2] != want) good_wrong++;
          }
        } catch (const Error& e) {
          (bad ? bad_raised : good_raised)++;
          const std::string msg = e.what();
          if (!bad || e.kind() != ErrorKind::OutOfRange ||
              msg.find("index_select") == std::string::npos ||
              msg.find("index " + std::to_string(bad_id)) == std::string::npos)
            wrong_message++;
        }
        // Good threads also read back unrelated work: another thread's error must not show.
        if (!bad) {
          try {
            const float s = table.mul(2.0).sum_all().to_vec<float>()[0];
            if (s != 72.0f) good_wrong++;
          } catch (const Error&) {
            good_raised++;
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const int bad_ops = kThreads / 2 * kIters;
  EXPECT_EQ(bad_raised.load(), bad_ops);
  EXPECT_EQ(bad_silent.load(), 0);
  EXPECT_EQ(good_raised.load(), 0);
  EXPECT_EQ(good_wrong.load(), 0);
  EXPECT_EQ(wrong_message.load(), 0);
  // Nothing is left to surface later either.
  EXPECT_NO_THROW(dev.synchronize());
}

TEST_P(DeviceErrors, IntegerDivisionByZeroRaisesAtTheOpNamingShapeAndDtype) {
  const Device dev = device();
  const Tensor a = Tensor::from_vec<uint32_t>({7, 8, 9, 10, 11, 12}, {2, 3}, dev);
  const Tensor b = Tensor::from_vec<uint32_t>({1, 2, 0, 4, 5, 6}, {2, 3}, dev);
  try {
    a.div(b).to_vec<uint32_t>();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::OutOfRange);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
    EXPECT_NE(msg.find("u32"), std::string::npos) << msg;
  }
  // The device stays usable, and the error was raised once.
  EXPECT_EQ(a.div(a).to_vec<uint32_t>(), std::vector<uint32_t>(6, 1));
  EXPECT_NO_THROW(dev.synchronize());
}

WICK_INSTANTIATE_DEVICES(DeviceErrors);

}  // namespace
}  // namespace wick::testing

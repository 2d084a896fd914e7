// GEMM size sweep on one device: where does f32 throughput fall, and does the operand layout matter?
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include "wick/wick.h"
using namespace wick;
int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  const Device d = Device::vulkan(0);
  for (DType dt : {DType::F32}) {
    for (int64_t n : {1024, 2048, 2560, 3072, 3584, 4096, 6144}) {
      const Tensor a = Tensor::randn(0, 1, {n, n}, dt, d), b = Tensor::randn(0, 1, {n, n}, dt, d);
      const Tensor bt = b.t().contiguous(), at = a.t().contiguous();
      struct Case { const char* name; Tensor x, y; };
      for (const Case& c : {Case{"a@b", a, b}, Case{"a@bT(view)", a, bt.t()}, Case{"aT(view)@b", at.t(), b}}) {
        Tensor out = c.x.matmul(c.y);
        d.synchronize();
        std::vector<double> ms;
        for (int r = 0; r < 5; r++) {
          const auto t0 = std::chrono::steady_clock::now();
          out = c.x.matmul(c.y);
          d.synchronize();
          ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(ms.begin(), ms.end());
        std::printf("n=%lld %-12s median %.3f ms  %.1f TFLOP/s\n", (long long)n, c.name, ms[2],
                    2.0 * n * n * n / (ms[2] * 1e-3) / 1e12);
      }
    }
  }
}

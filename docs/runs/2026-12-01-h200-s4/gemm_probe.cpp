// GEMM sweep on vulkan:0: throughput per dtype, size, operand layout and kernel variant
// (cooperative-matrix tile 64 / 128 for f16, or the SIMT kernel).
// usage: gemm_probe DTYPE[,DTYPE...] N[,N...] [VARIANT,...]  (variants: auto, simt, t64, t128)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>
#include "vulkan/vk_device.h"
#include "wick/wick.h"
using namespace wick;
static std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out; std::stringstream ss(s); std::string x;
  while (std::getline(ss, x, ',')) out.push_back(x);
  return out;
}
static Device variant_device(const std::string& v) {
  if (v == "auto") return Device::vulkan(0);
  auto& base = dynamic_cast<vulkan::VulkanDevice&>(Device::vulkan(0).backend());
  vulkan::VulkanOptions o = vulkan::VulkanOptions::from_knobs(base.caps());
  if (v == "simt") o.cooperative_matrix = false;
  if (v == "t64") o.coop_tile = 64;
  if (v == "t128") o.coop_tile = 128;
  if (v == "t64w4") o.coop_tile = 64, o.coop_threads = 128;
  if (v == "t128w4") o.coop_tile = 128, o.coop_threads = 128;
  return Device(std::make_shared<vulkan::VulkanDevice>(0, &o));
}
int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  {
    const Device d0 = Device::vulkan(0);
    const auto& c = dynamic_cast<vulkan::VulkanDevice&>(d0.backend()).caps();
    std::printf("%s: shared %u bytes, coop f16 %d (%s)\n", c.name.c_str(), c.max_shared_memory,
                c.coopmat_f16, c.cooperative_matrix.c_str());
  }
  for (const std::string& var : split(argc > 3 ? argv[3] : "auto")) {
    const Device d = variant_device(var);
    for (const std::string& dn : split(argc > 1 ? argv[1] : "f32")) {
      const DType dt = parse_dtype(dn);
      for (const std::string& ns : split(argc > 2 ? argv[2] : "1024,2048,4096")) {
        const int64_t n = std::stoll(ns);
        const Tensor a = Tensor::randn(0, 1, {n, n}, dt, d), b = Tensor::randn(0, 1, {n, n}, dt, d);
        const Tensor bt = b.t().contiguous(), at = a.t().contiguous();
        struct Case { const char* name; Tensor x, y; };
        for (const Case& c : {Case{"a@b", a, b}, Case{"a@bT(view)", a, bt.t()}, Case{"aT(view)@b", at.t(), b}}) {
          Tensor out = c.x.matmul(c.y);
          d.synchronize();
          const auto w0 = std::chrono::steady_clock::now();  // 300 ms warm-up: clocks up
          while (std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() < 0.3) {
            out = c.x.matmul(c.y);
            d.synchronize();
          }
          std::vector<double> ms;
          for (int r = 0; r < 7; r++) {
            const auto t0 = std::chrono::steady_clock::now();
            out = c.x.matmul(c.y);
            d.synchronize();
            ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
          }
          std::sort(ms.begin(), ms.end());
          // Against f32 on the same device: max |difference| / max |f32 result|.
          double err = 0;
          if (n <= 2048 && dt != DType::F32) {
            const Tensor ref = c.x.to_dtype(DType::F32).matmul(c.y.to_dtype(DType::F32));
            const double big = ref.abs().max_all().to_scalar<double>();
            err = (out.to_dtype(DType::F32) - ref).abs().max_all().to_scalar<double>() / big;
          }
          std::printf("%-6s %s n=%lld %-12s median %.3f ms  %.1f TFLOP/s  err %.1e\n", var.c_str(),
                      dn.c_str(), (long long)n, c.name, ms[3], 2.0 * n * n * n / (ms[3] * 1e-3) / 1e12, err);
        }
      }
    }
  }
}

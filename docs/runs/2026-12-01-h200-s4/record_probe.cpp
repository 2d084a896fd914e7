// Host cost of recording: a chain of x = x + y (1024 f32) on vulkan:0, timed without waiting.
// usage: record_probe [ops_per_buffer] [steps]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include "vulkan/vk_device.h"
#include "wick/wick.h"
using namespace wick;
int main(int argc, char** argv) {
  const Device base = Device::vulkan(0);
  auto& vb = dynamic_cast<vulkan::VulkanDevice&>(base.backend());
  vulkan::VulkanOptions o = vulkan::VulkanOptions::from_knobs(vb.caps());
  if (argc > 1) o.queue.ops_per_buffer = std::atoll(argv[1]);
  const int steps = argc > 2 ? std::atoi(argv[2]) : 5000;
  const Device d(std::make_shared<vulkan::VulkanDevice>(0, &o));
  const Tensor y = Tensor::ones({1024}, DType::F32, d);
  for (int rep = 0; rep < 6; rep++) {
    Tensor x = Tensor::zeros({1024}, DType::F32, d);
    d.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; i++) x = x.add(y);
    const auto t1 = std::chrono::steady_clock::now();
    d.synchronize();
    const auto t2 = std::chrono::steady_clock::now();
    const float v = x.to_vec<float>()[0];
    std::printf("record %.3f us/op, total %.2f ms, x[0]=%g\n",
                std::chrono::duration<double, std::micro>(t1 - t0).count() / steps,
                std::chrono::duration<double, std::milli>(t2 - t0).count(), v);
  }
}

// The README's example, built so it cannot rot.
#include <wick/wick.h>

#include <cstdio>
using namespace wick;

int main() {
  Device dev = Device::default_device();  // WICK_DEVICE, else the CPU
  dev.set_seed(42);
  Tensor x = Tensor::randn(0, 1, {2, 4, 3, 5}, DType::F32, dev);
  Tensor y = Tensor::randn(0, 1, {2, 2, 5, 6}, DType::F32, dev);
  Tensor z = x.narrow(1, 0, 2).matmul(y);  // any strides, broadcast batch dims
  Tensor p = (z * 0.5).softmax_last_dim().to_dtype(DType::BF16);
  std::vector<float> v = p.to_vec<float>();  // waits for the device, converts
  Tensor s = p.sum({0, 1}, /*keepdim=*/true);  // reductions over several dims
  std::printf("%s first %g, sum %s\n", p.str().c_str(), v[0], s.str().c_str());
  try {
    x.matmul(x);  // (..., 3, 5) x (..., 3, 5)
  } catch (const Error& e) {  // ErrorKind::Shape, message names op and shapes
    std::puts(e.what());
  }
}

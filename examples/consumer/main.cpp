// A project that uses wick as a dependency (see CMakeLists.txt): a few ops on the CPU whose result
// is known exactly. Exits non-zero when it differs.
#include <wick/wick.h>

#include <cstdio>
#include <vector>

int main() {
  using wick::DType;
  using wick::Tensor;
  wick::Device cpu = wick::Device::cpu();
  Tensor a = Tensor::from_vec<float>({1, -2, 3, 4, 5, -6}, {2, 3}, cpu);
  Tensor b = Tensor::arange(int64_t{6}, DType::F32, cpu).reshape({3, 2});  // [[0 1] [2 3] [4 5]]
  // a @ b = [[8 10] [-14 -9]]; relu, + 1 → [[9 11] [1 1]]; the transpose's rows sum to [10 12].
  Tensor c = (a.matmul(b).relu() + 1.0).transpose(0, 1).sum(1);
  std::vector<float> got = c.to_vec<float>();
  const std::vector<float> want = {10, 12};
  std::printf("consumer: [%g, %g], want [10, 12]\n", got.at(0), got.at(1));
  return got == want ? 0 : 1;
}

#include <chrono>
#include <cstdio>
#include <vector>

#include "wick/device.h"
#include "wick/llama.h"
using namespace wick;
int main(int argc, char** argv) {
  Device dev = Device::parse(argv[2]);
  LlamaModel m = LlamaModel::load_gguf(argv[1], dev, 256);
  for (int b : {1, 2, 8, 8}) {
    std::vector<LlamaSequence> seqs;
    for (int i = 0; i < b; i++) seqs.push_back(m.new_sequence());
    std::vector<LlamaModel::SequenceStep> steps;
    for (auto& s : seqs) steps.push_back({&s, {1, 2, 3}});
    m.forward_batch(steps).to_vec<float>();
    for (int rep = 0; rep < 3; rep++) {
      auto t0 = std::chrono::steady_clock::now();
      const int n = 20;
      for (int i = 0; i < n; i++) {
        steps.clear();
        for (auto& s : seqs) steps.push_back({&s, {5}});
        m.forward_batch(steps).to_vec<float>();
      }
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
          n;
      std::printf("b=%d pass %.3f ms  (%.1f tok/s)\n", b, ms, b * 1000.0 / ms);
    }
  }
}

// b sequences at position 3, then `passes` one-token passes of all of them (as wick serve's
// decode passes); prints the mean ms a pass over the last `passes` (positions 4 .. 3 + passes).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "wick/device.h"
#include "wick/llama.h"
using namespace wick;
int main(int argc, char** argv) {
  Device dev = Device::parse(argv[2]);
  const int b = std::atoi(argv[3]), passes = std::atoi(argv[4]);
  LlamaModel m = LlamaModel::load_gguf(argv[1], dev, 512);
  std::vector<LlamaSequence> seqs;
  for (int i = 0; i < b; i++) seqs.push_back(m.new_sequence());
  std::vector<LlamaModel::SequenceStep> steps;
  for (auto& s : seqs) steps.push_back({&s, {1, 2, 3}});
  m.forward_batch(steps).to_vec<float>();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < passes; i++) {
    steps.clear();
    for (auto& s : seqs) steps.push_back({&s, {5}});
    m.forward_batch(steps).argmax(1).to_vec<uint32_t>();
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("b=%d passes=%d: %.3f ms a pass\n", b, passes, ms / passes);
}

#!/bin/bash
# Fourth H200 session (final tree): wick's tests on Vulkan; SmolLM2-shaped decode on wick (Vulkan,
# host CPU) beside llama.cpp (CUDA, host CPU) on the same GGUF file; decode under a few commit
# policies. llama.cpp is built first when .lbuild lacks it (CUDA sm_90, native CPU).
cd "$(dirname "$0")/.."
ROOT=$PWD
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
if [ ! -x .lbuild/b/bin/llama-bench ]; then
  mkdir -p .lbuild/src && tar xJf .lcpp/llama-src.tar.xz -C .lbuild/src
  cmake -S .lbuild/src -B .lbuild/b -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF \
    -DGGML_CUDA_NCCL=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF \
    -DCMAKE_BUILD_TYPE=Release > /tmp/lcpp_cfg.txt 2>&1
  timeout 300 cmake --build .lbuild/b -j$(nproc) --target llama-bench > /tmp/lcpp_build.txt 2>&1
  echo "llama.cpp build rc=$?"; el built
fi
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
LB=$ROOT/.lbuild/b/bin
{ date -u; nvidia-smi -L; nproc; grep -m1 'model name' /proc/cpuinfo; cat /proc/loadavg; } > $OUT/info.txt 2>&1
WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
el tests; tail -3 $OUT/tests.txt
M=/tmp/synth.gguf
{
  timeout 90 ./wick bench gen --device vulkan:0 --save-model $M
  for r in 1 2; do timeout 60 ./wick bench gen --device vulkan:0 --model $M | grep '^| vulkan'; done
  for n in 16 50 200 1000; do echo "WICK_COMPUTE_PER_BUFFER=$n"; WICK_COMPUTE_PER_BUFFER=$n timeout 60 ./wick bench gen --device vulkan:0 --model $M | grep '^| vulkan'; done
  cat /proc/loadavg
  LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH timeout 120 $LB/llama-bench -m $M -ngl 99 -p 128 -n 128 -r 5
  LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH timeout 150 $LB/llama-bench -m $M -ngl 0 -t 16 -p 128 -n 128 -r 3
  timeout 60 ./wick bench gen --device cpu --model $M
  LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH timeout 120 $LB/llama-bench -m $M -ngl 99 -p 128 -n 128 -r 5
} > $OUT/gen.txt 2>&1
el gen; grep -E '^\| (vulkan|cpu|llama)|WICK_' $OUT/gen.txt

#!/bin/bash
# Third H200 session. PHASE=build: llama.cpp (CUDA, sm_90, native CPU) into .lbuild (kept while the
# machine stays warm). PHASE=run: wick's tests on Vulkan, then SmolLM2-shaped decode on wick
# (Vulkan fused/unfused, host CPU) beside llama.cpp (CUDA and host CPU) on the same GGUF file,
# and the queue anchors.
cd "$(dirname "$0")/.."
ROOT=$PWD
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
if [ "$PHASE" = build ] || [ ! -x .lbuild/b/bin/llama-bench ]; then
  mkdir -p .lbuild && [ -d .lbuild/src ] || { mkdir -p .lbuild/src && tar xJf .lcpp/llama-src.tar.xz -C .lbuild/src; }
  cmake -S .lbuild/src -B .lbuild/b -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF \
    -DGGML_CUDA_NCCL=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF \
    -DCMAKE_BUILD_TYPE=Release > $OUT/lcpp_cfg.txt 2>&1
  el configured
  timeout ${BUILD_S:-540} cmake --build .lbuild/b -j$(nproc) --target llama-bench > $OUT/lcpp_build.txt 2>&1
  echo "build rc=$?"; tail -3 $OUT/lcpp_build.txt; el built
  [ "$PHASE" = build ] && exit 0
fi
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
LB=$ROOT/.lbuild/b/bin
{ date -u; nvidia-smi -L; nproc; grep -m1 'model name' /proc/cpuinfo; ./wick info; } > $OUT/info.txt 2>&1
if [ "${TESTS:-1}" = 1 ]; then
  WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
  el tests; tail -3 $OUT/tests.txt
fi
M=/tmp/synth.gguf
timeout 90 ./wick bench gen --device vulkan:0 --save-model $M > $OUT/gen_vk.txt 2>&1
el gen_vk; grep '^| vulkan' $OUT/gen_vk.txt
for r in 1 2; do for f in off on; do
  echo "WICK_FUSION=$f"; WICK_FUSION=$f timeout 60 ./wick bench gen --device vulkan:0 --model $M | grep '^| vulkan'
done; done > $OUT/gen_vk_fusion_ab.txt 2>&1
el fusion_ab; cat $OUT/gen_vk_fusion_ab.txt
if [ -x $LB/llama-bench ]; then
  LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH timeout 120 $LB/llama-bench -m $M -ngl 99 -p 128 -n 128 -r 5 > $OUT/lcpp_cuda.txt 2>&1
  el lcpp_cuda; cat $OUT/lcpp_cuda.txt | tail -6
  LD_LIBRARY_PATH=$LB:$LD_LIBRARY_PATH timeout 120 $LB/llama-bench -m $M -ngl 0 -t 8,16 -p 128 -n 128 -r 3 > $OUT/lcpp_cpu.txt 2>&1
  el lcpp_cpu; tail -6 $OUT/lcpp_cpu.txt
fi
timeout 60 ./wick bench gen --device cpu --model $M > $OUT/gen_cpu.txt 2>&1
el gen_cpu; grep '^| cpu' $OUT/gen_cpu.txt
{ nvcc -O2 -arch=sm_90 launch.cu -o launch && ./launch; ./vk_queue; } > $OUT/anchors.txt 2>&1
el anchors
timeout 100 ./wick bench queue --device vulkan:0 > $OUT/bench_queue.txt 2>&1
el queue

#!/bin/bash
# Third H200 call: every suite on cpu, cuda:0 and vulkan:0; wick's benchmarks on cuda beside
# torch, raw CUDA and llama.cpp's CUDA backend (built here, defaults: flash attention in) on the
# same GGUF file.
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$PWD/.dev
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
(bash $R/anchors/llama_cpp_cuda.sh $R/llama_src.tar.xz /tmp/lb > $OUT/llama_build.txt 2>&1; echo "rc=$?" >> $OUT/llama_build.txt) &
(nvcc -O2 -arch=sm_90 -o /tmp/launch $R/anchors/launch.cu > /dev/null 2>&1 &)
F='Devices/*:Gpu/*:Cuda*:Vulkan*:CacheFixture*:GpuBufferPool*:Llama*:*OnDevices*:HardeningCore*'
WICK_TEST_DEVICES=cpu,cuda:0,vulkan:0 timeout 260 ./wick_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
B=$OUT/bench.txt
timeout 50 ./wick bench gemm --device cuda > $B 2>&1
DECODE=0 timeout 40 python3 $R/anchors/torch_gemm_decode.py >> $B 2>&1
for i in 1 2; do timeout 20 /tmp/launch >> $B 2>&1; done
timeout 80 ./wick bench elementwise overhead queue first --device cuda >> $B 2>&1
G=$OUT/gen.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1
timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1
for i in $(seq 1 60); do grep -q "rc=" $OUT/llama_build.txt && break; sleep 5; done
timeout 90 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 128 -n 128 -r 3 -ngl 99 >> $G 2>&1
timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1
grep -E "FAILED|rc=|PASSED" $OUT/tests.txt | head -40
grep -E "TFLOP|raw-cuda|add  " $B | head -70
grep -E "tok/s|\| llama|pp128|tg128|rc=" $G $OUT/llama_build.txt

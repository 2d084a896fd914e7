#!/bin/bash
# Fourth H200 call: the suites on cuda:0 and vulkan:0, then wick's benchmarks on cuda and vulkan
# beside torch and raw CUDA, with nothing else running.
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$PWD/.dev
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
nvcc -O2 -arch=sm_90 -o /tmp/launch $R/anchors/launch.cu > /dev/null 2>&1
WICK_TEST_DEVICES=cuda:0 timeout 170 ./wick_tests --gtest_filter='Devices/*:Gpu/*:Cuda*:Llama*:*OnDevices*:HardeningCore*' --gtest_brief=1 > $OUT/tests_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests_cuda.txt
WICK_TEST_DEVICES=vulkan:0 timeout 110 ./wick_tests --gtest_filter='Devices/*:Gpu/*:VulkanCoop*' --gtest_brief=1 > $OUT/tests_vk.txt 2>&1; echo "rc=$?" >> $OUT/tests_vk.txt
B=$OUT/bench.txt
timeout 45 ./wick bench gemm --device cuda > $B 2>&1
DECODE=0 timeout 35 python3 $R/anchors/torch_gemm_decode.py >> $B 2>&1
for i in 1 2; do timeout 10 /tmp/launch >> $B 2>&1; done
timeout 70 ./wick bench elementwise overhead queue first --device cuda >> $B 2>&1
timeout 30 ./wick bench gen --device cuda >> $B 2>&1
timeout 30 ./wick bench gen --device vulkan >> $B 2>&1
grep -E "FAILED|rc=|PASSED" $OUT/tests_cuda.txt $OUT/tests_vk.txt | head -30
grep -E "TFLOP|raw-cuda|add  |decode|cuda:0 \(|vulkan:0 \(" $B | head -80

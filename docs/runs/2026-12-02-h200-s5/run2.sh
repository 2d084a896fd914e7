#!/bin/bash
# Second H200 call: every test suite on cuda:0 and vulkan:0, wick's benchmarks on cuda (and the
# decode on vulkan), with the torch and raw CUDA anchors in the same call.
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
R=$PWD/.dev
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
(nvcc -O2 -arch=sm_90 -o /tmp/launch $R/anchors/launch.cu > $OUT/nvcc.txt 2>&1 &)
F='Devices/*:Gpu/*:CudaKernels*:CacheFixture*:GpuBufferPool*:Llama*:*OnDevices*'
WICK_TEST_DEVICES=cpu,cuda:0 timeout 200 ./wick_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/tests_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests_cuda.txt
WICK_TEST_DEVICES=vulkan:0 timeout 90 ./wick_tests --gtest_filter='Gpu/*:VulkanCoop*:Devices/DeviceErrors*' --gtest_brief=1 > $OUT/tests_vk.txt 2>&1; echo "rc=$?" >> $OUT/tests_vk.txt
B=$OUT/bench.txt
timeout 45 ./wick bench gemm --device cuda > $B 2>&1
DECODE=0 timeout 40 python3 $R/anchors/torch_gemm_decode.py >> $B 2>&1
for i in 1 2; do timeout 20 /tmp/launch >> $B 2>&1; done
timeout 100 ./wick bench elementwise overhead queue first batch_mm --device cuda >> $B 2>&1
timeout 40 ./wick bench gen --device cuda >> $B 2>&1
timeout 40 ./wick bench gen --device vulkan >> $B 2>&1
grep -E "FAILED|rc=|PASSED" $OUT/tests_cuda.txt $OUT/tests_vk.txt | head -40
grep -E "TFLOP|tok/s|raw-cuda|add  |decode|prefill" $B | head -60

#!/bin/bash
# First CUDA smoke run: info, the conformance suites and the error test on cuda:0, the error
# test on vulkan:0 (H200), a quick matmul/elementwise bench on cuda.
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
export WICK_KERNEL_CACHE=/tmp/kc
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > $OUT/info.txt 2>&1
./wick info >> $OUT/info.txt 2>&1
WICK_TEST_DEVICES=cuda:0 timeout 330 ./wick_tests --gtest_filter='Devices/*:CudaKernels*' --gtest_brief=1 > $OUT/cuda_tests.txt 2>&1; echo "rc=$?" >> $OUT/cuda_tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 60 ./wick_tests --gtest_filter='Devices/DeviceErrors*' --gtest_brief=1 > $OUT/errors.txt 2>&1; echo "rc=$?" >> $OUT/errors.txt
timeout 90 ./wick bench matmul elementwise --device cuda --quick > $OUT/bench.txt 2>&1; echo "rc=$?" >> $OUT/bench.txt
grep -E "FAILED|rc=" $OUT/cuda_tests.txt | head -60
tail -5 $OUT/errors.txt; tail -30 $OUT/bench.txt

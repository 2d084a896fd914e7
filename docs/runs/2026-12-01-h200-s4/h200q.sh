#!/bin/bash
# Session 4, last H200 call: 2-D matmuls now read operands by vectors (a size-1 batch dim's
# stride of 1 had kept both GEMM kernels on element-by-element fetches); sweep, then tests.
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
timeout 60 ./gemm_probe f16,f32,bf16 2048,4096,8192 auto 2>&1 | tee $OUT/probe.txt
WICK_TEST_DEVICES=vulkan:0 timeout 120 ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
tail -3 $OUT/tests.txt; grep -E "Failure|FAILED|PASSED" $OUT/tests.txt | head

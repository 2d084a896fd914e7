#!/bin/bash
# Session 24 run 13: the final tree's new tests (swiglu rows by default, the knobs) and the
# fused-kernel suites on vulkan:0 and cuda:0.
cd "$(dirname "$0")/../.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 240 ./wick_tests --gtest_brief=1 --gtest_filter="*GpuQMatMulPrologues*:*KnobIsParsed*:*PackedDot*:*GpuSwigluFfnSweeps*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|SKIPPED|tests ran" $T | cut -c1-150 | tail -10

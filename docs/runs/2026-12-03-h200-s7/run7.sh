#!/bin/bash
# Session 7's H200 call 6: the cubin check on the H200 (the bad-cache test, run first), then the GPU
# runtime, quantized, attention and llama suites on cuda:0 at the final tree.
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
for i in 1 2 3; do WICK_TEST_DEVICES=cuda:0 timeout 30 ./wick_tests --gtest_filter='Gpu/GpuKernels.*' --gtest_brief=1 2>&1 | tail -2; done > $OUT/badcache.txt
F='Gpu/*:Devices/QMatMul*:Devices/AttentionCached*:Devices/RopeKv*:Devices/Llama*:*OnDevices*:Devices/Reduce*'
WICK_TEST_DEVICES=cuda:0 timeout 110 ./wick_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
cat $OUT/badcache.txt; grep -hE "FAILED|rc=|PASSED|tests ran" $OUT/tests.txt | head; grep -h "Failure" -A6 $OUT/tests.txt | head -20

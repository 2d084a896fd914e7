#!/bin/bash
# Fifth H200 call: the suites on cuda:0 after the gelu edge fix.
cd "$(dirname "$0")/.."
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
WICK_TEST_DEVICES=cuda:0 timeout 200 ./wick_tests --gtest_filter='Devices/*:Gpu/*:Cuda*:Llama*:*OnDevices*:HardeningCore*' --gtest_brief=1 > $OUT/tests_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests_cuda.txt
grep -E "FAILED|rc=|PASSED|tests ran" $OUT/tests_cuda.txt | head -30

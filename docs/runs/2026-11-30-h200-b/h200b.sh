#!/bin/bash
# Second H200 session: tests on Vulkan, then the queue/gen/qmatmul benchmarks beside the raw anchors.
cd "$(dirname "$0")"
for f in ../.gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p run && tar xJf bundle.tar.xz -C run && cd run
export LD_LIBRARY_PATH=$PWD/lib
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
el tests; tail -3 $OUT/tests.txt
{ nvcc -O2 -arch=sm_90 launch.cu -o launch && ./launch; ./vk_queue; } > $OUT/anchors.txt 2>&1
el anchors
timeout 150 ./wick bench queue gen qmatmul --device vulkan:0 > $OUT/bench_vk.txt 2>&1
el bench_vk
for r in 1 2 4 8 16; do echo "WICK_QMATVEC_ROWS=$r"; WICK_QMATVEC_ROWS=$r timeout 40 ./wick bench gen --device vulkan:0 -n 64 --prompt-tokens 32 | grep '^| vulkan'; done > $OUT/qmatvec_rows.txt 2>&1
el rows
timeout 60 ./wick bench gen --device cpu > $OUT/bench_cpu.txt 2>&1
el cpu

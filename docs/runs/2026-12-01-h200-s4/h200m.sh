#!/bin/bash
# Session 4, seventh H200 call: k step 64 (one stage) chosen where an operand arrives along k;
# tests, then the sweep beside the kernel before (gemm_probe_old: k step 32 always), same call.
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
el tests; tail -3 $OUT/tests.txt; grep -E "Failure|FAILED" $OUT/tests.txt | head
{
  timeout 60 ./gemm_probe f16 1024,2048,4096,8192 auto
  timeout 60 ./gemm_probe_old f16 2048,4096,8192 auto
} > $OUT/probe.txt 2>&1
el probe; grep -v "^ *$" $OUT/probe.txt

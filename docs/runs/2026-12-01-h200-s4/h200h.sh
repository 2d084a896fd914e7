#!/bin/bash
# Session 4, second H200 call: matmul_coop.comp with two shared stages and unrolled fragment
# loops: tests, then tile and workgroup size over sizes and layouts.
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
WICK_TEST_DEVICES=vulkan:0 timeout 60 ./wick_tests --gtest_filter='VulkanCoop*:Devices/Matmul.*' > $OUT/tests_coop.txt 2>&1; echo "rc=$?" >> $OUT/tests_coop.txt
el coop_tests; grep -E "OK|FAILED|Failure|differ|rc=" $OUT/tests_coop.txt | head -30
timeout 150 ./gemm_probe f16 2048,4096,8192 t128,t128w4,t64w4 > $OUT/probe.txt 2>&1
el probe; cat $OUT/probe.txt

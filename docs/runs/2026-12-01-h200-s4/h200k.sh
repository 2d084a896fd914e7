#!/bin/bash
# Session 4, fifth H200 call: matmul_coop.comp with both tiles k-major in shared memory (A read
# as column-major fragments, B as row-major; vectors along k transposed on the way in by a lane
# swap): its tests, then the sweep beside the previous kernel (gemm_probe_old) in the same call.
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
WICK_TEST_DEVICES=vulkan:0 timeout 90 ./wick_tests --gtest_filter='VulkanCoop*:Devices/Matmul.*:Devices/Llama*:Devices/QMat*' > $OUT/tests_coop.txt 2>&1; echo "rc=$?" >> $OUT/tests_coop.txt
el coop_tests; grep -E "OK|FAILED|Failure|differ|rc=" $OUT/tests_coop.txt | head -30
{
  timeout 60 ./gemm_probe f16 2048,4096,8192 auto
  timeout 60 ./gemm_probe_old f16 2048,4096,8192 auto
  timeout 60 ./gemm_probe f16 2048,4096,8192 t128
} > $OUT/probe.txt 2>&1
el probe; grep -v "^ *$" $OUT/probe.txt

#!/bin/bash
# Session 4, eighth H200 call: why the k step 64 chosen by a specialization constant ran like 32.
# gemm_probe: literal loop bounds guarded by the spec constants (now in the tree);
# gemm_probe_va: spec-constant loop bounds (the previous commit); gemm_probe_v5: k step 64 as a
# plain constant (the variant measured in the sixth call). Then the Vulkan suites.
cd "$(dirname "$0")/.."
T0=$(date +%s); el() { echo "[t+$(( $(date +%s) - T0 ))s] $*"; }
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib
{
  timeout 60 ./gemm_probe f16 2048,4096,8192 auto
  timeout 60 ./gemm_probe_va f16 2048,4096,8192 auto
  timeout 60 ./gemm_probe_v5 f16 2048,4096,8192 t128w4
} > $OUT/probe.txt 2>&1
el probe; grep -v "^ *$" $OUT/probe.txt
WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_filter='Devices/*:Vulkan*:Gpu*:QMatMulOnDevices*:LlamaOnDevices*' --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
el tests; tail -3 $OUT/tests.txt; grep -E "Failure|FAILED" $OUT/tests.txt | head

#!/bin/bash
# Session 24 run 9: the final tree (HEAD after the decode and driver refactors): decode and
# prefill 512 on Vulkan (the cooperative-matrix GEMM), WICK_VK_INT_DOT on / off, device tests.
cd "$(dirname "$0")/../.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0 timeout 200 ./wick_tests --gtest_brief=1 --gtest_filter="*PackedDot*:*CpuAndGpuAgree*:*Coop*:Devices/Llama.*:*LlamaOnDevices*:*LlamaBatch*:*Swiglu*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|SKIPPED|tests ran" $T | cut -c1-150 | tail -8
for s in 1 0; do WICK_VK_INT_DOT=$s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen.txt
for r in 1 2; do for s in 1 0; do
  echo "== round $r int_dot $s" >> $G; WICK_VK_INT_DOT=$s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
echo "== prefill512" >> $G; timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 512 -n 16 >> $G 2>&1
grep -hE "==|replayed|rc=[^0]" $G | cut -c1-200
date -u >> $O/clocks.txt

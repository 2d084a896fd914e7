#!/bin/bash
# Session 23 run 1: Vulkan dispatch chains (WICK_VK_CHAIN) — device tests under real overlap,
# decode on/off alternating, SM clocks while Vulkan decodes; CUDA's default as the same-call anchor.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
T=$O/tests.txt
echo "== chain tests" >> $T
WICK_TEST_DEVICES=vulkan:0 timeout 120 ./wick_tests --gtest_brief=1 --gtest_filter="*VulkanChain*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "==|FAILED|rc=|PASSED|Failure|Skipped|SKIPPED" $T | head -20
for s in 1 0; do WICK_VK_CHAIN=$s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 16 > /dev/null 2>&1; done
G=$O/gen_vk.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv -lms 200 > $O/clocks_during.txt &
SMI=$!
for r in 1 2 3; do for s in 1 0; do
  echo "== round $r WICK_VK_CHAIN=$s" >> $G
  WICK_VK_CHAIN=$s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
kill $SMI
grep -hE "==|\| vulkan|rc=" $G | cut -c1-200
C=$O/gen_cuda.txt
echo "== cuda default" >> $C; timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf >> $C 2>&1
grep -hE "==|\| cuda" $C | cut -c1-200
sort $O/clocks_during.txt | uniq -c | sort -rn | head -5
echo "== llama tests chained" >> $T
WICK_VK_CHAIN=1 WICK_TEST_DEVICES=vulkan:0 timeout 200 ./wick_tests --gtest_brief=1 --gtest_filter="Devices/Llama.*:*LlamaOnDevices*:*LlamaBatch*:*GpuReplay*:*Swiglu*:*RopeKv*:*GpuReduce*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "==|FAILED|rc=|PASSED|tests ran" $T | cut -c1-150 | tail -20
date -u >> $O/clocks.txt

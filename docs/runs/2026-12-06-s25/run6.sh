#!/bin/bash
# Session 25 run 6: the tree with shared memory blocks and the structural module check: the first
# 1-token forwards (.dev/ft, the vkAllocateMemory shim), wick bench gen's first token after load in
# new processes, decode, and the device tests of the memory, cache, replay and llama paths.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc2
O=$OUT; mkdir -p $O
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
timeout 60 $R/.dev/ft /tmp/m.gguf vulkan > /dev/null 2>&1
for i in 1 2; do
  echo "== vulkan shim process $i" >> $O/ft.txt; LD_PRELOAD=$R/.dev/shim/vkshim.so timeout 60 $R/.dev/ft /tmp/m.gguf vulkan >> $O/ft.txt 2>&1
done
cat $O/ft.txt | grep -v "SHIM vk[BCQ]"
G=$O/gen.txt
for r in 1 2; do for d in vulkan cuda; do
  echo "== round $r $d" >> $G; timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
grep -hE "==|replayed|op by op|rc=[^0]" $G | cut -c1-200
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 200 ./wick_tests --gtest_brief=1 --gtest_filter="Gpu/*:Devices/Llama.*:*LlamaOnDevices*:*LlamaBatch*:*Replay*:*Capture*:*GpuPool*:*BufferPool*:*EveryCut*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|SKIPPED|tests ran" $T | cut -c1-150 | tail -12

#!/bin/bash
# Session 7's H200 call 4: the 32-lane qact and unrolled reduce on cuda:0 and vulkan:0 (tests), decode
# (bench gen), first token in a fresh process with replay on and off, and the step's kernels (ncu).
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
F='*QMatMul*:*Qmat*:*Reduce*:*Argm*:*Prologue*:*RopeKv*:*Attention*:Devices/Llama*:*OnDevices*:*Replay*'
WICK_TEST_DEVICES=cuda:0,vulkan:0 timeout 200 ./wick_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
grep -hE "FAILED|rc=|PASSED|tests ran" $OUT/tests.txt | head -30; grep -hE "Failure" -A8 $OUT/tests.txt | head -30
G=$OUT/gen.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
for d in cuda vulkan; do for r in 0 1; do
  WICK_REPLAY=$r timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf -n 16 --prompt-tokens 16 >> $OUT/first.txt 2>&1
done; done
grep -E "\| (cuda|vulkan)|rc=" $G; grep -E "\| (cuda|vulkan)" $OUT/first.txt
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,dram__bytes_read.sum
WICK_REPLAY=0 timeout 200 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base -c 2600 \
  ./wick bench gen --device cuda --model /tmp/m.gguf --prompt-tokens 4 -n 4 > $OUT/ncu.csv 2> $OUT/ncu_err.txt
xz -9 $OUT/ncu.csv

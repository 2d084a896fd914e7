#!/bin/bash
# Session 26 run 3: decode chunks (LlamaModel::decode_greedy) against one step a submission and op
# by op, in the same process (wick bench gen), Vulkan and CUDA; the host round trip (bubble);
# the new tests on both devices.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for d in vulkan cuda; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen.txt
for r in 1 2; do for d in vulkan cuda; do
  echo "== round $r $d" >> $G; timeout 90 ./wick bench gen --device $d --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
grep -hE "==|replayed|op by op|rc=[^0]" $G | cut -c1-200
for d in vulkan cuda; do echo "== bubble $d" >> $O/bubble.txt; timeout 60 $R/.dev/bubble /tmp/m.gguf $d 128 >> $O/bubble.txt 2>&1; done
cut -c1-200 $O/bubble.txt
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 150 ./wick_tests --gtest_brief=1 --gtest_filter="*RowsByIdAreTheDequantized*:*RowsRefuseBadIds*:*DecodeGreedy*:*GreedyGeneration*:*ReplayedDecodeSteps*:*QuantizedWeightsRunOnTheDevice*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|SKIPPED|tests ran|Failure|Expected" $T | cut -c1-150 | tail -14
date -u >> $O/clocks.txt

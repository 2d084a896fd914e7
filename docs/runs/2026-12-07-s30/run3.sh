#!/bin/bash
# Session 30 run 3 (the shortest): A/B of wick_base and wick (and the two knob experiments) on
# Vulkan, alternating, two rounds; profiles of both; the llama device tests.
cd "$(dirname "$0")/../.."
R=$PWD
O=$OUT; mkdir -p $O
S0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for b in wick wick_base; do timeout 60 ./$b bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen_ab.txt
run() { echo "== $*" >> $G; env $2 timeout 40 ./$1 bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; }
for i in 1 2; do run wick_base X=1; run wick X=1; run wick WICK_VK_LATE_BARRIER=1; run wick "WICK_QMATVEC_SWIGLU=0 WICK_QMATVEC_FUSE=2,1536"; done
grep -hE "^==|replayed|op by op|rc=[^0]" $G | cut -c1-180
P=$O/vkprof; mkdir -p $P
for b in wick_base wick; do WICK_VK_PROFILE=1 timeout 40 ./$b bench gen --device vulkan --model /tmp/m.gguf -n 64 > $P/$b.txt 2>&1; done
for f in $P/*.txt; do echo "== $f"; grep -E "^ +[0-9.]+%" $f | head -7 | cut -c1-150; done
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 80 ./wick_tests --gtest_brief=1 --gtest_filter="*RopeKv*:*DecodeGreedy*:*ReplayedDecodeSteps*:*LlamaOnDevices*:*GpuAttention*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | cut -c1-150 | tail -10
echo "t=$(( $(date +%s) - S0 ))"

#!/bin/bash
# Session 27 run 1: A/B of the Vulkan decode step's changes (attention: subgroup reductions and
# loads issued first; qmatvec ACT_INLINE: weights staged before the prologue; barriers without
# the transfer stage) against the session's starting binary (wick_base), alternating; profiles;
# device tests.
cd "$(dirname "$0")/../.."
R=$PWD
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for b in wick wick_base; do for d in vulkan cuda; do timeout 60 ./$b bench gen --device $d --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done; done
G=$O/gen.txt
run() { echo "== $*" >> $G; env $1 timeout 60 ./$2 bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; }
for r in 1 2; do
  run X=1 wick_base
  run X=1 wick
  run WICK_VK_BARRIER=full wick
  run WICK_QMATVEC_WSTAGE=0 wick
done
grep -hE "^==|replayed|op by op|rc=[^0]" $G | cut -c1-160
date -u >> $O/clocks.txt
WICK_VK_PROFILE=1 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 64 > $O/vkprof_new.txt 2>&1
WICK_VK_PROFILE=1 timeout 60 ./wick_base bench gen --device vulkan --model /tmp/m.gguf -n 64 > $O/vkprof_base.txt 2>&1
for f in new base; do echo "== $f"; grep -A18 "WICK_VK_PROFILE" $O/vkprof_$f.txt | cut -c1-160; done
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 200 ./wick_tests --gtest_brief=1 --gtest_filter="*Attention*:*QMatVecFuse*:*DecodeGreedy*:*ReplayedDecodeSteps*:*QuantizedWeightsRunOnTheDevice*:*SwigluFfn*:*RopeKv*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | cut -c1-150 | tail -14
C=$O/gen_cuda.txt
for b in wick_base wick; do echo "== $b" >> $C; timeout 60 ./$b bench gen --device cuda --model /tmp/m.gguf >> $C 2>&1; done
grep -hE "^==|replayed|op by op" $C | cut -c1-160
date -u >> $O/clocks.txt

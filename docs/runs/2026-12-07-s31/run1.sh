#!/bin/bash
# Session 30 run 1: epilogue operands prefetched (qmatvec's residual and rope operands), attention's
# first chunk before the position, late barriers (WICK_VK_LATE_BARRIER), down's own silu prologue
# (WICK_QMATVEC_SWIGLU=0 WICK_QMATVEC_FUSE=2,1536) A/B against the session's starting binary
# (wick_base); profiles; device tests; lm_head shapes; llama.cpp anchor.
cd "$(dirname "$0")/../.."
R=$PWD
O=$OUT; mkdir -p $O
S0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
( ( time bash .dev/anchors/llama_cpp_cuda.sh $R/.dev/llama_src.tar.xz /tmp/lb ) > $O/llama_build.txt 2>&1; echo "rc=$?" >> $O/llama_build.txt ) &
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for b in wick wick_base; do timeout 60 ./$b bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen_ab.txt
run() { echo "== $*" >> $G; env $2 timeout 40 ./$1 bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; }
for i in 1 2; do run wick_base X=1; run wick X=1; run wick WICK_VK_LATE_BARRIER=1; run wick "WICK_QMATVEC_SWIGLU=0 WICK_QMATVEC_FUSE=2,1536"; done
grep -hE "^==|replayed|op by op|rc=[^0]" $G | cut -c1-180
echo "t=$(( $(date +%s) - S0 ))"
P=$O/vkprof
mkdir -p $P
for b in wick_base wick; do WICK_VK_PROFILE=1 timeout 40 ./$b bench gen --device vulkan --model /tmp/m.gguf -n 64 > $P/$b.txt 2>&1; done
WICK_VK_LATE_BARRIER=1 WICK_VK_PROFILE=1 timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 64 > $P/late.txt 2>&1
WICK_QMATVEC_SWIGLU=0 WICK_QMATVEC_FUSE=2,1536 WICK_VK_PROFILE=1 timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 64 > $P/downfuse.txt 2>&1
for f in $P/*.txt; do echo "== $f"; grep -E "replayed, 8" $f | cut -c1-200; grep -E "^ +[0-9.]+%" $f | head -8 | cut -c1-150; done
echo "t=$(( $(date +%s) - S0 ))"
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 120 ./wick_tests --gtest_brief=1 --gtest_filter="*RopeKv*:*GpuQMatVecFuseSweeps*:*Swiglu*:*DecodeGreedy*:*ReplayedDecodeSteps*:*LlamaOnDevices*:*GpuAttention*:Devices/Llama.*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | cut -c1-150 | tail -14
echo "t=$(( $(date +%s) - S0 ))"
for s in 64,4 32,8 64,8 128,4; do WICK_QMATVEC_SHAPE=128,2,$s,128,4 WICK_VK_PROFILE=1 timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 32 > $P/wide_$s.txt 2>&1; done
grep -H "QTYPE=8" $P/wide_* | cut -c1-160
grep -H "replayed, 8" $P/wide_* | cut -c1-200
while [ ! -x /tmp/lb/bin/llama-bench ] && [ $(( $(date +%s) - S0 )) -lt 380 ]; do sleep 5; done
tail -2 $O/llama_build.txt
L=$O/llama_bench.txt
[ -x /tmp/lb/bin/llama-bench ] && LD_LIBRARY_PATH=/tmp/lb/bin timeout 50 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 0 -n 128 -r 5 >> $L 2>&1; echo "rc=$?" >> $L
G=$O/gen.txt
gen() { echo "== $*" >> $G; env $3 timeout 40 ./$1 bench gen --device $2 --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; }
gen wick vulkan X=1; gen wick cuda X=1; gen wick_base cuda X=1; gen wick_base vulkan X=1
grep -E "tg128|rc=" $L | cut -c1-160
grep -hE "==|replayed|op by op|rc=[^0]" $G | cut -c1-200
echo "t=$(( $(date +%s) - S0 ))"
date -u >> $O/clocks.txt

#!/bin/bash
# Session 27 run 2: decode's feed-forward block in one dispatch (qffn.comp) on Vulkan: A/B against
# WICK_QFFN=0 and the session's starting binary (wick_base), device tests, a profile; then
# llama.cpp's CUDA backend (built meanwhile) beside wick's decode in the same call; serve 8/1.
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
run() { echo "== $*" >> $G; env $1 timeout 40 ./$2 bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; }
run X=1 wick_base
run X=1 wick
run WICK_QFFN=0 wick
run X=1 wick
grep -hE "^==|replayed|op by op|rc=[^0]" $G | cut -c1-160
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 100 ./wick_tests --gtest_brief=1 --gtest_filter="*Qffn*:*SwigluFfn*:*DecodeGreedy*:*ReplayedDecodeSteps*:*QuantizedWeightsRunOnTheDevice*:*GpuAttentionBlocks*:*SwigluAndIntDotKnobs*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | cut -c1-150 | tail -14
WICK_VK_PROFILE=1 timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 64 > $O/vkprof.txt 2>&1
grep -A10 "WICK_VK_PROFILE" $O/vkprof.txt | cut -c1-150
date -u >> $O/clocks.txt
while [ ! -x /tmp/lb/bin/llama-bench ] && [ $(( $(date +%s) - S0 )) -lt 300 ]; do sleep 5; done
tail -3 $O/llama_build.txt
L=$O/llama_bench.txt
G=$O/gen.txt
[ -x /tmp/lb/bin/llama-bench ] && LD_LIBRARY_PATH=/tmp/lb/bin timeout 60 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 0 -n 128 -r 5 >> $L 2>&1; echo "rc=$?" >> $L
for d in vulkan cuda; do echo "== $d" >> $G; timeout 40 ./wick bench gen --device $d --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
grep -E "tg128|rc=" $L | cut -c1-160
grep -hE "==|replayed|op by op|rc=[^0]" $G | cut -c1-200
date -u >> $O/clocks.txt
pip install -q --no-index --find-links $R/.dev/wheels openai > /dev/null 2>&1
S=$O/serve.txt
echo "== vulkan" >> $S; timeout 70 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device vulkan --rounds 1 >> $S 2>&1; echo "rc=$?" >> $S
tail -6 $S | cut -c1-200
date -u >> $O/clocks.txt

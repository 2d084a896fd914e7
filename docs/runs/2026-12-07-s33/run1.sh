#!/bin/bash
# Session 33 run 1: the final tree (HEAD at the session's start) on whatever card comes: serve 8/1
# on Vulkan and CUDA (issue 12), decode beside llama.cpp built in the call (issue 11), device tests.
cd "$(dirname "$0")/../.."
R=$PWD
O=$OUT; mkdir -p $O
S0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for d in vulkan cuda; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
echo "warm t=$(( $(date +%s) - S0 ))"
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo > /dev/null; done
S=$O/serve.txt
for d in vulkan cuda; do echo "== $d" >> $S; PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d --rounds 2 >> $S 2>&1; echo "rc=$?" >> $S; done
grep -E "^==|ratio|rc=" $S | cut -c1-200
echo "t=$(( $(date +%s) - S0 ))"
( ( time bash $R/.dev/anchors/llama_cpp_cuda.sh $R/.dev/llama_src.tar.xz /tmp/lb ) > $O/llama_build.txt 2>&1; echo "rc=$?" >> $O/llama_build.txt ) &
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 90 ./wick_tests --gtest_filter="*QMatMulArgmax*:*DecodeGreedy*:*GreedyGeneration*:*ReplayedDecode*:*Llama*:*Attention*" > $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran" $T | cut -c1-150 | tail -8
echo "t=$(( $(date +%s) - S0 ))"
G=$O/gen.txt
gen() { echo "== $*" >> $G; env $2 timeout 40 ./wick bench gen --device $1 --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; }
gen vulkan X=1; gen cuda X=1
while [ ! -x /tmp/lb/bin/llama-bench ] && [ $(( $(date +%s) - S0 )) -lt 480 ]; do sleep 5; done
tail -2 $O/llama_build.txt
L=$O/llama_bench.txt
[ -x /tmp/lb/bin/llama-bench ] && LD_LIBRARY_PATH=/tmp/lb/bin timeout 50 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 0 -n 128 -r 5 >> $L 2>&1; echo "rc=$?" >> $L
gen vulkan X=1; gen cuda X=1; gen vulkan X=1
grep -E "tg128|rc=" $L | cut -c1-160
grep -hE "==|replayed, 8|rc=[^0]" $G | cut -c1-150
echo "t=$(( $(date +%s) - S0 ))"
date -u >> $O/clocks.txt

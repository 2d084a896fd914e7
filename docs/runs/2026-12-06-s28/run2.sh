#!/bin/bash
# Session 28 run 2: attention and its output projection in one Vulkan kernel (WICK_ATTENTION_O)
# A/B, device tests, Vulkan profile; llama.cpp's CUDA backend built in the call, llama-bench -fa 0,1
# beside wick's decode (Vulkan with and without, CUDA); serve 8/1 on both.
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
for d in vulkan cuda; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
WICK_ATTENTION_O=0 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
G=$O/gen_ab.txt
run() { echo "== $*" >> $G; env $1 timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; }
run WICK_ATTENTION_O=0; run WICK_ATTENTION_O=1; run WICK_ATTENTION_O=0; run WICK_ATTENTION_O=1
grep -hE "^==|replayed|op by op|rc=[^0]" $G | cut -c1-180
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 150 ./wick_tests --gtest_brief=1 --gtest_filter="*QMatMulAttention*:*DecodeGreedy*:*ReplayedDecodeSteps*:*LlamaOnDevices*:*GpuAttentionBlocks*:Devices/Llama.*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | cut -c1-150 | tail -14
WICK_VK_PROFILE=1 timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 64 > $O/vkprof.txt 2>&1
grep -A12 "WICK_VK_PROFILE" $O/vkprof.txt | cut -c1-170
date -u >> $O/clocks.txt
while [ ! -x /tmp/lb/bin/llama-bench ] && [ $(( $(date +%s) - S0 )) -lt 330 ]; do sleep 5; done
tail -2 $O/llama_build.txt
L=$O/llama_bench.txt
G=$O/gen.txt
[ -x /tmp/lb/bin/llama-bench ] && LD_LIBRARY_PATH=/tmp/lb/bin timeout 60 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 0 -n 128 -r 5 >> $L 2>&1; echo "rc=$?" >> $L
gen() { echo "== $*" >> $G; env $1 timeout 40 ./wick bench gen --device $2 --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; }
gen WICK_ATTENTION_O=1 vulkan; gen X=1 cuda; gen WICK_ATTENTION_O=0 vulkan; gen WICK_ATTENTION_O=1 vulkan; gen X=1 cuda
grep -E "tg128|rc=" $L | cut -c1-160
grep -hE "==|replayed|op by op|rc=[^0]" $G | cut -c1-200
date -u >> $O/clocks.txt
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo > /dev/null; done
S=$O/serve.txt
for d in vulkan cuda; do echo "== $d" >> $S; PYTHONPATH=/tmp/pyo timeout 75 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d --rounds 2 >> $S 2>&1; echo "rc=$?" >> $S; done
grep -E "^==|ratio|median|rc=" $S | cut -c1-200
date -u >> $O/clocks.txt

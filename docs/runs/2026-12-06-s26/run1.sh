#!/bin/bash
# Session 26 run 1 (tree a1e4c4b, session 25's final): llama.cpp's CUDA backend built in the call
# (llama-bench -fa 0,1), wick decode and prefill 512 on Vulkan and CUDA, device tests meanwhile.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
( ( time bash .dev/anchors/llama_cpp_cuda.sh $R/.dev/llama_src.tar.xz /tmp/lb ) > $O/llama_build.txt 2>&1; echo "rc=$?" >> $O/llama_build.txt ) &
BUILD=$!
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 200 ./wick_tests --gtest_brief=1 --gtest_filter="*GpuQMatMulPrologues*:*PackedDot*:*GpuSwigluFfnSweeps*:Devices/Llama.*:*LlamaOnDevices*:*LlamaBatch*:*GpuAttentionBlocks*:*Replay*:*Capture*:Gpu/GpuPool.*:ThreadPool.*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|SKIPPED|tests ran" $T | cut -c1-150 | tail -12
date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for d in vulkan cuda; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
wait $BUILD
tail -3 $O/llama_build.txt
date -u >> $O/clocks.txt
L=$O/llama_bench.txt
LD_LIBRARY_PATH=/tmp/lb/bin timeout 150 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 512 -n 128 -r 5 >> $L 2>&1; echo "rc=$?" >> $L
grep -E "^\|" $L | cut -c1-160
G=$O/gen.txt
for r in 1 2; do for d in vulkan cuda; do
  echo "== round $r $d" >> $G; timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
  echo "== prefill512 round $r $d" >> $G; timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf --prompt-tokens 512 -n 16 >> $G 2>&1
done; done
grep -hE "==|replayed|first token|rc=[^0]" $G | cut -c1-200
for d in vulkan cuda; do echo "== bubble $d" >> $O/bubble.txt; timeout 60 $R/.dev/bubble /tmp/m.gguf $d 128 >> $O/bubble.txt 2>&1; done
cat $O/bubble.txt | cut -c1-200
LD_LIBRARY_PATH=/tmp/lb/bin timeout 60 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 1 -n 128 -p 0 -r 5 >> $L 2>&1; echo "rc=$?" >> $L
grep -E "tg128" $L | cut -c1-160
date -u >> $O/clocks.txt

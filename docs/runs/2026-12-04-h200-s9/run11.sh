#!/bin/bash
# Session 9: issue 10's cuda:0 suites on the final tree (+ the new architectures and IQ4 formats);
# decode/prefill wick cuda + vulkan beside llama.cpp CUDA (-fa 0,1); first token; ncu of one step.
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
( bash .dev/anchors/llama_cpp_cuda.sh $R/.dev/llama_src.tar.xz /tmp/lb > $OUT/llama_build.txt 2>&1 ) &
LB=$!
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/info.txt 2>&1
F10='Devices/*:Gpu/*:Cuda*:Llama*:*OnDevices*:HardeningCore*:*Iq4*:*Hf*'
WICK_TEST_DEVICES=cuda:0 timeout 200 ./wick_tests --gtest_filter="$F10:-LlamaCppVocab*:*Sweeps*" --gtest_brief=1 > $OUT/tests10_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests10_cuda.txt
grep -hE "FAILED|rc=|PASSED|tests ran" $OUT/tests*.txt | head -30; grep -hE "Failure" -A8 $OUT/tests*.txt | head -40
G=$OUT/gen.txt
timeout 40 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf --prompt-tokens 512 >> $G 2>&1; echo "rc=$?" >> $G
timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 512 >> $G 2>&1; echo "rc=$?" >> $G
for i in 1 2; do timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 16 --prompt-tokens 16 >> $OUT/first.txt 2>&1; done
grep -E "\| (cuda|vulkan)|rc=" $G; grep -E "\| (cuda|vulkan)" $OUT/first.txt
wait $LB; tail -2 $OUT/llama_build.txt
timeout 100 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 128,512 -n 128 -r 3 -ngl 99 > $OUT/llama_bench.txt 2>&1; echo "rc=$?" >> $OUT/llama_bench.txt
grep -v "^$" $OUT/llama_bench.txt | tail -8
M=gpu__time_duration.sum,launch__grid_size,launch__block_size
WICK_REPLAY=0 timeout 50 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base -c 800 \
  ./wick bench gen --device cuda --model /tmp/m.gguf --prompt-tokens 128 -n 2 > $OUT/ncu.csv 2> $OUT/ncu_err.txt
xz -9 $OUT/ncu.csv

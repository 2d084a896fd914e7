#!/bin/bash
# Session 8 call 3 (final tree): issue 10's cuda:0 suites, issue 11's vulkan:0 suites, decode and
# prefill of one GGUF file: wick cuda + vulkan beside llama.cpp CUDA (-fa 0,1); ncu of one step.
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
( sed -i 's/-j"$(nproc)"/-j10/' .dev/anchors/llama_cpp_cuda.sh; bash .dev/anchors/llama_cpp_cuda.sh $R/.dev/llama_src.tar.xz /tmp/lb > $OUT/llama_build.txt 2>&1 ) &
LB=$!
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/info.txt 2>&1
F10='Devices/*:Gpu/*:Cuda*:Llama*:*OnDevices*:HardeningCore*'
WICK_TEST_DEVICES=cuda:0 timeout 300 ./wick_tests --gtest_filter="$F10:-LlamaCppVocab*" --gtest_brief=1 > $OUT/tests10_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests10_cuda.txt
F11='*Attention*:*RopeKv*:*Prologue*:*Replay*:*OnDevices*:Devices/Llama*:Devices/GpuReduce*:Devices/GpuQMatMulShapes*'
WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_filter="$F11" --gtest_brief=1 > $OUT/tests11_vk.txt 2>&1; echo "rc=$?" >> $OUT/tests11_vk.txt
grep -hE "FAILED|rc=|PASSED|tests ran" $OUT/tests*.txt | head -30; grep -hE "Failure" -A8 $OUT/tests*.txt | head -40
wait $LB; tail -2 $OUT/llama_build.txt
G=$OUT/gen.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
WICK_CUDA_PDL=0 timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf --prompt-tokens 512 >> $G 2>&1; echo "rc=$?" >> $G
timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 512 >> $G 2>&1; echo "rc=$?" >> $G
grep -E "\| (cuda|vulkan)|rc=" $G
timeout 120 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 128,512 -n 128 -r 3 -ngl 99 > $OUT/llama_bench.txt 2>&1; echo "rc=$?" >> $OUT/llama_bench.txt
grep -v "^$" $OUT/llama_bench.txt | tail -8
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread
WICK_REPLAY=0 timeout 100 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base -c 4000 \
  ./wick bench gen --device cuda --model /tmp/m.gguf --prompt-tokens 4 -n 4 > $OUT/ncu.csv 2> $OUT/ncu_err.txt
xz -9 $OUT/ncu.csv

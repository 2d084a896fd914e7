#!/bin/bash
# Session 12 run 4 (final tree): cuda:0 and vulkan:0 tests of the changed kernels; decode and
# prefill on CUDA and Vulkan (Vulkan also with the previous qmatvec shape, 32 x 2); in-process
# forward_batch passes; serve with 8 clients on CUDA and Vulkan; llama.cpp CUDA (-fa 0,1) built
# and measured in the same call.
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
( bash .dev/anchors/llama_cpp_cuda.sh $R/.dev/llama_src.tar.xz /tmp/lb > $OUT/llama_build.txt 2>&1 ) &
LB=$!
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && tar xJf .dev/fb.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
F='Gpu/GpuReduce*:Devices/AttentionCached*:Devices/RopeKv*:*Prologue*:Devices/LlamaBatch*:Devices/Llama.*:Gpu/GpuNorm*'
WICK_TEST_DEVICES=cuda:0 timeout 150 ./wick_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/tests_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests_cuda.txt
WICK_TEST_DEVICES=vulkan:0 timeout 80 ./wick_tests --gtest_filter="$F" --gtest_brief=1 > $OUT/tests_vk.txt 2>&1; echo "rc=$?" >> $OUT/tests_vk.txt
grep -hE "FAILED|rc=|PASSED|tests ran" $OUT/tests*.txt | head -20; grep -hE "Failure" -A8 $OUT/tests*.txt | head -30
G=$OUT/gen.txt
timeout 40 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
for i in 1 2 3; do timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
for i in 1 2; do timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
echo "== WICK_QMATVEC_SHAPE=32,2" >> $G
WICK_QMATVEC_SHAPE=32,2 timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
echo "== prompt 512" >> $G
timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf --prompt-tokens 512 >> $G 2>&1; echo "rc=$?" >> $G
timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 512 >> $G 2>&1; echo "rc=$?" >> $G
grep -E "\| (cuda|vulkan)|rc=|==" $G | cut -c1-220
for dev in cuda vulkan; do timeout 60 ./fb /tmp/m.gguf $dev > $OUT/fb_$dev.txt 2>&1; echo "rc=$?" >> $OUT/fb_$dev.txt; cat $OUT/fb_$dev.txt; done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for dev in cuda vulkan; do
  S=$OUT/serve_$dev.txt
  PYTHONPATH=/tmp/pyo timeout 100 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $dev > $S 2>&1; echo "rc=$?" >> $S
  tail -4 $S
done
wait $LB; tail -1 $OUT/llama_build.txt
timeout 100 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 512 -n 128 -r 3 -ngl 99 > $OUT/llama_bench.txt 2>&1; echo "rc=$?" >> $OUT/llama_bench.txt
grep -v "^$" $OUT/llama_bench.txt | tail -6
timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
grep -E "\| cuda" $G | tail -2 | cut -c1-220

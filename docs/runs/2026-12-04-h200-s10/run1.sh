#!/bin/bash
# Session 10 run 1: vector-form attention (CUDA, Vulkan): tests on cuda:0 and vulkan (the H200),
# decode/prefill; serve batching on CUDA.
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/info.txt 2>&1
WICK_TEST_DEVICES=cuda:0 timeout 100 ./wick_tests --gtest_filter='*AttentionCached*:*RopeKv*:LlamaDecode*:*OnDevices*' --gtest_brief=1 > $OUT/tests_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests_cuda.txt
WICK_TEST_DEVICES=vulkan:0 timeout 60 ./wick_tests --gtest_filter="*AttentionCached*" --gtest_brief=1 > $OUT/tests_vk.txt 2>&1; echo "rc=$?" >> $OUT/tests_vk.txt
grep -hE "FAILED|rc=|PASSED|tests ran" $OUT/tests*.txt | head -30; grep -hE "Failure" -A8 $OUT/tests*.txt | head -40
G=$OUT/gen.txt
timeout 40 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
for i in 1 2; do timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf --prompt-tokens 512 >> $G 2>&1; echo "rc=$?" >> $G
grep -E "\| (cuda|vulkan)|rc=" $G
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
python3 --version > $OUT/serve_cuda.txt 2>&1
PYTHONPATH=/tmp/pyo timeout 100 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device cuda >> $OUT/serve_cuda.txt 2>&1; echo "rc=$?" >> $OUT/serve_cuda.txt
tail -6 $OUT/serve_cuda.txt

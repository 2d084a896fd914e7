#!/bin/bash
# Session 10 run 2 (final tree): cuda:0 tests of the merged work (f16 prefill path, rope scaling,
# attention), decode/prefill with WICK_QMATMUL_F16 default and off, serve batching on CUDA, beside
# llama.cpp CUDA (-fa 0,1) built in the same call.
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
( bash .dev/anchors/llama_cpp_cuda.sh $R/.dev/llama_src.tar.xz /tmp/lb > $OUT/llama_build.txt 2>&1 ) &
LB=$!
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
F='*QMatMul*:*AttentionCached*:*RopeKv*:Llama*:*Hf*:*OnDevices*:*Yarn*:*LongRope*:*Rotary*:HardeningCore*'
WICK_TEST_DEVICES=cuda:0 timeout 150 ./wick_tests --gtest_filter="$F:-*Sweeps*:LlamaCppVocab*:*CliGenerates*" --gtest_brief=1 > $OUT/tests_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests_cuda.txt
WICK_TEST_DEVICES=cuda:0 timeout 60 ./wick_tests --gtest_filter="*TheF16Path*" --gtest_brief=1 > $OUT/tests_cuda_f16.txt 2>&1; echo "rc=$?" >> $OUT/tests_cuda_f16.txt
grep -hE "FAILED|rc=|PASSED|tests ran" $OUT/tests*.txt | head -30; grep -hE "Failure" -A8 $OUT/tests*.txt | head -40
G=$OUT/gen.txt
timeout 40 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
for i in 1 2; do timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
for f16 in default off; do
  [ $f16 = off ] && export WICK_QMATMUL_F16=off
  echo "== WICK_QMATMUL_F16=$f16" >> $G
  timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf --prompt-tokens 512 >> $G 2>&1; echo "rc=$?" >> $G
  timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 512 >> $G 2>&1; echo "rc=$?" >> $G
done
unset WICK_QMATMUL_F16
timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
grep -E "\| (cuda|vulkan)|rc=|==" $G
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$OUT/serve_cuda.txt
PYTHONPATH=/tmp/pyo timeout 100 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device cuda > $S 2>&1; echo "rc=$?" >> $S
tail -5 $S
wait $LB; tail -2 $OUT/llama_build.txt
timeout 100 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 128,512 -n 128 -r 3 -ngl 99 > $OUT/llama_bench.txt 2>&1; echo "rc=$?" >> $OUT/llama_bench.txt
grep -v "^$" $OUT/llama_bench.txt | tail -8
timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
grep -E "\| cuda" $G | tail -2

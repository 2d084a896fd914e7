#!/bin/bash
# Session 12 run 3: cuda:0 tests of the changed kernels (attention in one dispatch, qact's rms
# prologue over several blocks); a sweep of qmatvec's workgroup shape (WICK_QMATVEC_SHAPE) with
# the in-process forward_batch passes of 1, 2 and 8 sequences and wick bench gen.
cd "$(dirname "$0")/.."
R=$PWD
mkdir -p /tmp/new && tar xJf .dev/bundle.tar.xz -C /tmp/new && tar xJf .dev/fb.tar.xz -C /tmp/new && cd /tmp/new
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
G=$OUT/gen.txt
timeout 40 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
F='Devices/AttentionCached*:Devices/RopeKv*:*Prologue*:Devices/QMatMulOnDevices*:Devices/LlamaBatch*:Devices/Llama.*'
WICK_TEST_DEVICES=cuda:0 timeout 200 ./wick_tests --gtest_filter="$F" > $OUT/tests_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests_cuda.txt
grep -E "^\[  (FAILED|PASSED)|rc=|tests ran" $OUT/tests_cuda.txt; grep -E "Failure" -A8 $OUT/tests_cuda.txt | head -30; grep "RUN" $OUT/tests_cuda.txt | tail -1
for s in default 32,1 64,2 64,1 128,4 128,2 256,8; do
  if [ $s = default ]; then unset WICK_QMATVEC_SHAPE; else export WICK_QMATVEC_SHAPE=$s; fi
  echo "== $s" | tee -a $OUT/sweep.txt
  timeout 60 ./fb /tmp/m.gguf cuda 2>&1 | awk 'NR%3==0' | tee -a $OUT/sweep.txt
  timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf 2>&1 | grep -E "\| cuda" | cut -c1-140 | tee -a $OUT/sweep.txt
done

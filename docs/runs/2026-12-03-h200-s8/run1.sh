#!/bin/bash
# Session 8 call 1: issue 10's cuda:0 suites with PDL on; decode with PDL on/off and qmatvec shapes.
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/info.txt 2>&1
F10='Devices/*:Gpu/*:Cuda*:Llama*:*OnDevices*:HardeningCore*'
WICK_TEST_DEVICES=cuda:0 timeout 300 ./wick_tests --gtest_filter="$F10:-LlamaCppVocab*" --gtest_brief=1 > $OUT/tests10_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests10_cuda.txt
grep -hE "FAILED|rc=|PASSED|tests ran" $OUT/tests10_cuda.txt | head -30; grep -hE "Failure" -A8 $OUT/tests10_cuda.txt | head -40
G=$OUT/gen.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
for pdl in 1 0 1; do
  echo "== PDL=$pdl" >> $G
  WICK_CUDA_PDL=$pdl timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done
for s in 32,1 32,4 64,1 64,2 64,4 128,1 128,2 128,4 256,1 256,2; do
  echo "== SHAPE=$s" >> $G
  WICK_QMATVEC_SHAPE=$s timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done
grep -E "^== |\| cuda|rc=" $G
M=gpu__time_duration.sum,launch__grid_size,launch__block_size
WICK_REPLAY=0 timeout 100 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base -c 2400 \
  ./wick bench gen --device cuda --model /tmp/m.gguf --prompt-tokens 4 -n 4 > $OUT/ncu.csv 2> $OUT/ncu_err.txt
xz -9 $OUT/ncu.csv

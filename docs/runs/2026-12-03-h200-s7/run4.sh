#!/bin/bash
# Session 7's H200 call 3: per-kernel GPU time of the CUDA decode step (ncu, op by op).
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf --prompt-tokens 4 -n 4 > $OUT/warm.txt 2>&1
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,dram__bytes_read.sum
WICK_REPLAY=0 timeout 400 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base -c 2600 \
  ./wick bench gen --device cuda --model /tmp/m.gguf --prompt-tokens 4 -n 4 > $OUT/ncu.csv 2> $OUT/ncu_err.txt
echo "rc=$?"; wc -l $OUT/ncu.csv; tail -3 $OUT/ncu_err.txt; xz -9 $OUT/ncu.csv

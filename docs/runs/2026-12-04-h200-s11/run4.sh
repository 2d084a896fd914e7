#!/bin/bash
# Session 11 run 4 (and 5: greedy tokens by one device argmax): wick serve (warm-up of every batch size at start, clients in processes) on
# CUDA and Vulkan, 8 clients; the decode of one sequence beside it.
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
G=$OUT/gen.txt
timeout 40 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for dev in cuda vulkan cuda; do
  S=$OUT/serve_$dev.txt
  PYTHONPATH=/tmp/pyo timeout 120 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $dev >> $S 2>&1; echo "rc=$?" >> $S
  tail -5 $S | head -3
done
grep -E "\| cuda" $G

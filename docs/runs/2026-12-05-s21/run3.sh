#!/bin/bash
# Session 21 run 3 (the warm H200 of run 2): more servers, 8 clients, CUDA and Vulkan.
cd "$(dirname "$0")/../.."
R=$PWD
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
S=$O/serve.txt
for d in cuda vulkan cuda; do
  echo "== $d" >> $S
  PYTHONPATH=/tmp/pyo timeout 50 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|rc=|scheduler" $S | cut -c1-220

#!/bin/bash
# Session 26 run 6: wick serve 8 clients / 1 (Vulkan and CUDA, 2 rounds each) with the final tree;
# asked for the H200, an H100 came.
cd "$(dirname "$0")/../.."
R=$PWD
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
cat $O/clocks.txt
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for d in vulkan cuda; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for d in cuda vulkan; do
  S=$O/serve_$d.txt
  PYTHONPATH=/tmp/pyo timeout 120 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d --rounds 2 >> $S 2>&1; echo "rc=$?" >> $S
  grep -E "^\| [18] |ratio|rc=" $S | cut -c1-200
done
date -u >> $O/clocks.txt

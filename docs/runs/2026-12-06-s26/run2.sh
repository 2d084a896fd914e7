#!/bin/bash
# Session 26 run 2 (same tree as run 1): passes of 1-8 sequences and wick serve 8 clients / 1 on
# Vulkan and CUDA, 3 rounds each.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -x /tmp/run/wick ] || { rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run; }
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
B=$O/batch.txt
for d in vulkan cuda; do
  echo "== $d" >> $B; timeout 90 ./wick bench gen --device $d --model /tmp/m.gguf --batch 8 -n 64 >> $B 2>&1; echo "rc=$?" >> $B
done
grep -hE "==|\| [1248] +\| [0-9]" $B | cut -c1-140
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for d in vulkan cuda; do
  S=$O/serve_$d.txt
  PYTHONPATH=/tmp/pyo timeout 170 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d --rounds 3 >> $S 2>&1; echo "rc=$?" >> $S
  grep -E "^\| [18] |ratio|rc=" $S | cut -c1-200
done
date -u >> $O/clocks.txt

#!/bin/bash
# Session 27 run 3: wick serve 8 clients / 1 on Vulkan with the final tree (one round).
cd "$(dirname "$0")/../.."
R=$PWD
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
[ -f /tmp/m.gguf ] || timeout 40 ./wick bench gen --device vulkan --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve_vulkan.txt
PYTHONPATH=/tmp/pyo timeout 90 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device vulkan --rounds 1 >> $S 2>&1; echo "rc=$?" >> $S
grep -E "^\| [18] |ratio|rc=" $S | cut -c1-200
date -u >> $O/clocks.txt

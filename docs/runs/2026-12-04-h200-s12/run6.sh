#!/bin/bash
# Session 12 run 6: wick serve with 8 clients again (CUDA twice, Vulkan once), to see how far run
# 5's CUDA ratio (2.53x, with its one-client rate up to 1260 tok/s) moves between runs.
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
timeout 40 ./wick bench gen --device cuda --save-model /tmp/m.gguf > /dev/null 2>&1
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for dev in cuda cuda vulkan; do
  S=$OUT/serve_$dev.txt
  PYTHONPATH=/tmp/pyo timeout 100 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $dev >> $S 2>&1; echo "rc=$?" >> $S
  tail -4 $S
done

#!/bin/bash
# wick bench matmul on the H200 with the GPU warm-up, beside the size sweep (gemm_probe).
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
export LD_LIBRARY_PATH=/tmp/run/lib
timeout 200 /tmp/run/wick bench matmul --device vulkan:0 > $OUT/bench_matmul.txt 2>&1
cat $OUT/bench_matmul.txt

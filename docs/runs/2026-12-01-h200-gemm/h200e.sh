#!/bin/bash
# GEMM size sweep on the H200 (Vulkan f32): where the tiled kernel's throughput falls.
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
export LD_LIBRARY_PATH=/tmp/run/lib
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/probe.txt
timeout 200 .dev/gemm_probe >> $OUT/probe.txt 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >> $OUT/probe.txt
cat $OUT/probe.txt

#!/bin/bash
# Session 24 run 4: Vulkan passes of 4 and 8 sequences without the swiglu stores, with x's
# quantization fused into the products (WICK_QMATVEC_FUSE) and other workgroup shapes.
cd "$(dirname "$0")/../.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
export WICK_QMATVEC_SWIGLU=0
C=("" "WICK_QMATVEC_FUSE=8,576" "WICK_QMATVEC_FUSE=8,576 WICK_QMATVEC_SHAPE=128,2,64,4" "WICK_QMATVEC_FUSE=8,2048" "WICK_QMATVEC_SHAPE=128,2,64,4" "WICK_QMATVEC_SHAPE=32,4,64,4")
for c in "${C[@]}"; do for b in 4 8; do env $c timeout 30 ./fbprof /tmp/m.gguf vulkan $b 20 > /dev/null 2>&1; done; done
F=$O/fb.txt
for r in 1 2; do for b in 4 8; do for i in "${!C[@]}"; do
  echo -n "round $r [${C[$i]}] " >> $F; env ${C[$i]} timeout 30 ./fbprof /tmp/m.gguf vulkan $b 200 >> $F 2>&1
done; done; done
cat $F
WICK_QMATVEC_FUSE=8,576 WICK_VK_PROFILE=1 ./fbprof /tmp/m.gguf vulkan 8 100 > $O/prof_8_fuse.txt 2>&1
grep -A14 "WICK_VK_PROFILE" $O/prof_8_fuse.txt | cut -c1-200
date -u >> $O/clocks.txt

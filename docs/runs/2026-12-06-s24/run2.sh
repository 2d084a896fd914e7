#!/bin/bash
# Session 24 run 2: where a Vulkan pass of 8 sequences goes (WICK_VK_PROFILE) against one.
cd "$(dirname "$0")/../.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for b in 1 8; do ./fbprof /tmp/m.gguf vulkan $b 50 > /dev/null 2>&1; done
for b in 1 8; do
  ./fbprof /tmp/m.gguf vulkan $b 200 > $O/fb_$b.txt 2>&1
  WICK_VK_PROFILE=1 ./fbprof /tmp/m.gguf vulkan $b 100 > $O/prof_$b.txt 2>&1
  cat $O/fb_$b.txt; grep -A40 "WICK_VK_PROFILE" $O/prof_$b.txt | cut -c1-200
done
date -u >> $O/clocks.txt

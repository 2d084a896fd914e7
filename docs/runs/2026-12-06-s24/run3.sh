#!/bin/bash
# Session 24 run 3: Vulkan passes of 1/2/4/8 sequences with the gate/up kernel's swiglu stores
# (default) against the separate swiglu quantization (WICK_QMATVEC_SWIGLU=0), alternating.
cd "$(dirname "$0")/../.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for s in 1 0; do for b in 1 2 3 4 8; do WICK_QMATVEC_SWIGLU=$s ./fbprof /tmp/m.gguf vulkan $b 30 > /dev/null 2>&1; done; done
F=$O/fb.txt
for r in 1 2; do for b in 1 2 3 4 8; do for s in 1 0; do
  echo -n "round $r swiglu $s " >> $F; WICK_QMATVEC_SWIGLU=$s ./fbprof /tmp/m.gguf vulkan $b 200 >> $F 2>&1
done; done; done
cat $F
WICK_QMATVEC_SWIGLU=0 WICK_VK_PROFILE=1 ./fbprof /tmp/m.gguf vulkan 8 100 > $O/prof_8_off.txt 2>&1
grep -A14 "WICK_VK_PROFILE" $O/prof_8_off.txt | cut -c1-200
date -u >> $O/clocks.txt

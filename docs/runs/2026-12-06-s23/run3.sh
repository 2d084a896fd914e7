#!/bin/bash
# Session 23 run 3: Vulkan qmatvec workgroup shapes since the fused prologues (WICK_QMATVEC_SHAPE
# "threads,rows,64,4": the lm_head's shape kept), decode twice each interleaved, one profile each.
cd "$(dirname "$0")/../.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
SHAPES="64,2 64,4 64,8 128,4 128,8 32,2 32,4 256,8"
for s in $SHAPES; do WICK_QMATVEC_SHAPE=$s,64,4 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen_vk.txt
for r in 1 2; do for s in $SHAPES; do
  echo "== round $r shape $s" >> $G
  WICK_QMATVEC_SHAPE=$s,64,4 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
grep -hE "==|\| vulkan.*replayed|rc=[^0]" $G | cut -c1-160
for s in $SHAPES; do
  WICK_QMATVEC_SHAPE=$s,64,4 WICK_VK_PROFILE=1 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 32 > $O/vkprof_$s.txt 2>&1
  echo "== profile $s"; grep -A7 "WICK_VK_PROFILE" $O/vkprof_$s.txt | tail -6 | awk '{print $4, $5, $NF}' | cut -c1-60
done
date -u >> $O/clocks.txt

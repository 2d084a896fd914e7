#!/bin/bash
# Session 12 run 2: attention in one dispatch (new) against the previous tree (old), alternating in
# one call: wick bench gen on CUDA and Vulkan, in-process forward_batch passes of 1, 2, 8 sequences;
# ncu of one op-by-op pass of 1 and 8 sequences (new tree).
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for v in old new; do
  mkdir -p /tmp/$v && tar xJf .dev/bundle$([ $v = old ] && echo _old).tar.xz -C /tmp/$v
done
export WICK_KERNEL_CACHE=/tmp/kc
tar xJf .dev/fb.tar.xz -C /tmp/new
cd /tmp/new
G=$OUT/gen.txt
LD_LIBRARY_PATH=/tmp/new/lib timeout 40 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
for i in 1 2 3; do for v in old new; do
  echo "== $v" >> $G
  (cd /tmp/$v && LD_LIBRARY_PATH=/tmp/$v/lib timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G)
done; done
for v in old new; do
  echo "== $v" >> $G
  (cd /tmp/$v && LD_LIBRARY_PATH=/tmp/$v/lib timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G)
done
grep -E "^== |\| (cuda|vulkan)|rc=" $G | cut -c1-200
for v in new; do for dev in cuda vulkan; do
  F=$OUT/fb_${v}_$dev.txt
  (cd /tmp/$v && LD_LIBRARY_PATH=/tmp/$v/lib timeout 60 ./fb /tmp/m.gguf $dev > $F 2>&1; echo "rc=$?" >> $F); echo "$v $dev"; cat $F
done; done
export LD_LIBRARY_PATH=/tmp/new/lib
M=gpu__time_duration.sum
for b in 1 8; do
  WICK_REPLAY=0 timeout 60 ./fbprof /tmp/m.gguf cuda $b 1 > /dev/null 2>&1
  WICK_REPLAY=0 timeout 90 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base \
    ./fbprof /tmp/m.gguf cuda $b 3 > $OUT/ncu_b$b.csv 2> $OUT/ncu_b${b}_err.txt
  echo "ncu b=$b rc=$? lines $(wc -l < $OUT/ncu_b$b.csv)"
done
xz -9 $OUT/*.csv

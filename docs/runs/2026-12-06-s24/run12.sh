#!/bin/bash
# Session 24 run 12: decode's few-row shape 256 x 2 (WICK_QMATVEC_SHAPE=256,2,64,4,128,4) against
# the default (128 x 2), alternating: fbprof passes and wick bench gen decode.
cd "$(dirname "$0")/../.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
C=(default 256,2,64,4,128,4)
for c in "${C[@]}"; do WICK_QMATVEC_SHAPE=$([ $c = default ] || echo $c) timeout 30 ./fbprof /tmp/m.gguf vulkan 1 20 > /dev/null 2>&1; WICK_QMATVEC_SHAPE=$([ $c = default ] || echo $c) timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
F=$O/fb.txt
for r in 1 2 3 4 5; do for c in "${C[@]}"; do
  echo -n "round $r shape $c " >> $F; WICK_QMATVEC_SHAPE=$([ $c = default ] || echo $c) timeout 30 ./fbprof /tmp/m.gguf vulkan 1 300 >> $F 2>&1
done; done
cat $F
G=$O/gen.txt
for r in 1 2; do for c in "${C[@]}"; do
  echo "== round $r shape $c" >> $G; WICK_QMATVEC_SHAPE=$([ $c = default ] || echo $c) timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1
done; done
grep -hE "==|replayed" $G | cut -c1-160
date -u >> $O/clocks.txt

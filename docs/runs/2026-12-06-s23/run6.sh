#!/bin/bash
# Session 23 run 6: base 128 x 2 with the mid tier (WICK_QMATVEC_SHAPE=128,2,64,4,128,4) against
# the tree's default (64 x 2, mid 128 x 4) and the shapes before the session (64,2,64,4): decode,
# passes of 1-8 sequences, serve.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
run() { if [ "$1" = default ]; then shift; "$@"; else WICK_QMATVEC_SHAPE=$1 "${@:2}"; fi; }
SH="128,2,64,4,128,4 default 64,2,64,4"
for s in $SH; do run $s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen_vk.txt
for r in 1 2; do for s in $SH; do
  echo "== round $r shape $s" >> $G; run $s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1
done; done
grep -hE "==|\| vulkan.*replayed" $G | cut -c1-150
B=$O/batch_vk.txt
for s in $SH; do
  echo "== shape $s" >> $B; run $s timeout 90 ./wick bench gen --device vulkan --model /tmp/m.gguf --batch 8 -n 64 >> $B 2>&1
done
grep -hE "==|\| [1248] +\| [0-9]" $B | cut -c1-140
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for s in 128,2,64,4,128,4 64,2,64,4; do
  echo "== shape $s" >> $S
  WICK_QMATVEC_SHAPE=$s PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device vulkan >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|rc=" $S | cut -c1-200
WICK_QMATVEC_SHAPE=128,2,64,4,128,4 WICK_VK_PROFILE=1 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 32 > $O/vkprof_a.txt 2>&1
grep -A9 "WICK_VK_PROFILE" $O/vkprof_a.txt | cut -c1-230
date -u >> $O/clocks.txt

#!/bin/bash
# Session 14 run 3: after reshape-as-view (no q/k/v copies at b > 1): CUDA/Vulkan passes, serve;
# Vulkan qmatvec shapes with WICK_VK_PROFILE; Vulkan prefill 512 by cooperative-matrix tile.
# Everything into one tarball ($OUT keeps ~8 files).
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && tar xJf .dev/fb.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=/tmp/o3; rm -rf $O; mkdir -p $O
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/clocks.txt
G=$O/gen.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
for dev in cuda vulkan; do timeout 60 ./fb /tmp/m.gguf $dev > $O/fb_$dev.txt 2>&1; echo "rc=$?" >> $O/fb_$dev.txt; done
for s in default 64,2 64,2,128,8 64,2,256,4 64,2,64,4 128,2,128,8 32,2,64,4; do
  for b in 1 8; do
    P=$O/vkprof_${s//,/_}_b$b.txt
    env WICK_VK_PROFILE=1 $( [ $s = default ] || echo WICK_QMATVEC_SHAPE=$s ) timeout 60 ./fbprof /tmp/m.gguf vulkan $b 40 > $P 2>&1; echo "rc=$?" >> $P
  done
done
for c in default 64,256 64,128 128,256 128,128; do
  echo "== WICK_VK_COOP_SHAPE=$c" >> $O/prefill.txt
  env $( [ $c = default ] || echo WICK_VK_COOP_SHAPE=$c ) timeout 90 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 512 -n 16 >> $O/prefill.txt 2>&1; echo "rc=$?" >> $O/prefill.txt
done
for i in 1 2; do timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
for s in default 64,2 64,2,128,8; do
  echo "== WICK_QMATVEC_SHAPE=$s" >> $G
  env $( [ $s = default ] || echo WICK_QMATVEC_SHAPE=$s ) timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for dev in cuda; do
  PYTHONPATH=/tmp/pyo timeout 120 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $dev > $O/serve_$dev.txt 2>&1; echo "rc=$?" >> $O/serve_$dev.txt
done
tar cJf $OUT/run3.tar.xz -C $O .
cat $O/fb_*.txt; grep -E "\| (cuda|vulkan)|rc=|==" $G $O/prefill.txt | cut -c1-200; tail -3 $O/serve_*.txt
for f in $O/vkprof_*; do echo "## $f"; grep -E "GPU time|QTYPE=8|\[8,|\[1,2\]|\[1,4\]" $f | cut -c1-120 | head -8; done

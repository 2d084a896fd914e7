#!/bin/bash
# Session 14 run 1: where Vulkan's decode time goes (WICK_VK_PROFILE, b = 1 and 8), the queue
# family A/B, CUDA's op-by-op kernels at b = 1 and 8 (ncu), the first CUDA server on a fresh
# machine (serve's warm-up takes the argmax since 0f24e0c), decode on CUDA / Vulkan.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && tar xJf .dev/fb.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/clocks.txt
G=$OUT/gen.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
rm -rf /tmp/kc2
for i in 1 2; do
  S=$OUT/serve_cuda_$i.txt
  WICK_KERNEL_CACHE=/tmp/kc2 PYTHONPATH=/tmp/pyo timeout 120 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device cuda > $S 2>&1; echo "rc=$?" >> $S
  tail -4 $S
done
for b in 1 8; do
  P=$OUT/vkprof_b$b.txt
  WICK_VK_PROFILE=1 timeout 60 ./fbprof /tmp/m.gguf vulkan $b 40 > $P 2>&1; echo "rc=$?" >> $P
  grep -v PASS $P | cut -c1-200 | head -30
done
P=$OUT/vkprof_prefill.txt
WICK_VK_PROFILE=1 timeout 90 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 512 -n 2 > $P 2>&1; echo "rc=$?" >> $P
grep -E "\| vulkan|WICK_VK|^ +[0-9]" $P | cut -c1-200 | head -24
for dev in cuda vulkan; do timeout 60 ./fb /tmp/m.gguf $dev > $OUT/fb_$dev.txt 2>&1; echo "rc=$?" >> $OUT/fb_$dev.txt; cat $OUT/fb_$dev.txt; done
for v in "WICK_QMATVEC_ROWS=4" "WICK_QMATVEC_SHAPE=64,2" "WICK_QMATVEC_SHAPE=256,4"; do
  echo "== $v cuda"; env $v timeout 60 ./fb /tmp/m.gguf cuda 2>&1 | tee $OUT/fb_cuda_${v#*=}.txt
done
WICK_VK_QUEUE=universal timeout 60 ./fb /tmp/m.gguf vulkan > $OUT/fb_vulkan_universal.txt 2>&1; echo "rc=$?" >> $OUT/fb_vulkan_universal.txt; cat $OUT/fb_vulkan_universal.txt
for q in compute universal compute universal; do
  echo "== WICK_VK_QUEUE=$q" >> $G; WICK_VK_QUEUE=$q timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done
for i in 1 2; do timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
# the fused qmatvec (each workgroup quantizes its x) at today's shapes
for cfg in "cuda 0,0" "vulkan 0,0" "vulkan 128,4" "vulkan 64,2"; do
  set -- $cfg
  echo "== WICK_QMATVEC_FUSE=1 WICK_QMATVEC_SHAPE=$2 $1" >> $G
  WICK_QMATVEC_FUSE=1 WICK_QMATVEC_SHAPE=$2 timeout 40 ./wick bench gen --device $1 --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done
echo "== WICK_QMATVEC_SHAPE=64,2 vulkan" >> $G
WICK_QMATVEC_SHAPE=64,2 timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
grep -E "\| (cuda|vulkan)|rc=|==" $G | cut -c1-220
M=gpu__time_duration.sum
for b in 1 8; do
  WICK_REPLAY=0 timeout 90 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base \
    ./fbprof /tmp/m.gguf cuda $b 3 > $OUT/ncu_b$b.csv 2> $OUT/ncu_b${b}_err.txt
  echo "ncu b=$b rc=$? lines $(wc -l < $OUT/ncu_b$b.csv)"
done
for b in 1 8; do python3 $R/.dev/s14/ncu_sum.py $OUT/ncu_b$b.csv 303 | tee $OUT/ncu_b${b}_sum.txt; done
xz -9 $OUT/*.csv
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv >> $OUT/clocks.txt

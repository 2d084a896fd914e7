#!/bin/bash
# Session 14 run 2 (same machine as run 1, whose profiles did not come back): the Vulkan
# profiles, the ncu b=8 summary, the first CUDA server; all in one tarball.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -x /tmp/run/wick ] || { mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && tar xJf .dev/fb.tar.xz -C /tmp/run; }
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > /dev/null 2>&1
O=/tmp/o2; rm -rf $O; mkdir -p $O
for b in 1 8; do
  WICK_VK_PROFILE=1 timeout 60 ./fbprof /tmp/m.gguf vulkan $b 40 > $O/vkprof_b$b.txt 2>&1; echo "rc=$?" >> $O/vkprof_b$b.txt
done
WICK_VK_PROFILE=1 timeout 90 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 512 -n 2 > $O/vkprof_prefill.txt 2>&1
M=gpu__time_duration.sum
WICK_REPLAY=0 timeout 90 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base \
    ./fbprof /tmp/m.gguf cuda 8 3 > $O/ncu_b8.csv 2> $O/ncu_b8_err.txt
WICK_REPLAY=0 timeout 90 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base \
    ./fbprof /tmp/m.gguf cuda 1 3 > $O/ncu_b1.csv 2> $O/ncu_b1_err.txt
for b in 1 8; do python3 $R/.dev/s14/ncu_sum.py $O/ncu_b$b.csv 303 > $O/ncu_b${b}_sum.txt 2>&1; done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
rm -rf /tmp/kc3
for i in 1 2; do
  WICK_KERNEL_CACHE=/tmp/kc3 PYTHONPATH=/tmp/pyo timeout 120 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device cuda > $O/serve_cuda_$i.txt 2>&1; echo "rc=$?" >> $O/serve_cuda_$i.txt
done
tar cJf $OUT/run2.tar.xz -C $O .
cat $O/ncu_b8_sum.txt $O/ncu_b1_sum.txt | head -60; tail -3 $O/serve_cuda_*.txt

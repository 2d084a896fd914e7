#!/bin/bash
# Session 19 run 3: attention's idle splits return at once (one used split: no combine): device
# tests, passes, ncu of the replayed b=8 and b=1 passes, servers, decode.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
C=$O/clocks.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $C
date -u >> $C
T=$O/tests.txt
WICK_TEST_DEVICES=cuda:0,vulkan:0 timeout 200 ./wick_tests --gtest_filter="*AttentionCached*:*LlamaBatch*:Devices/Llama.*:*RopeKvCache*" > $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | head -20
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
P=$O/pp.txt
timeout 60 ./pp /tmp/m.gguf cuda 4 1+0x0 8+0x0 0+1x34 1+7x37 > $P 2>&1; echo "rc=$?" >> $P
cut -c1-60 $P
M=gpu__time_duration.sum
for b in 1 8; do
  timeout 120 ncu --clock-control none --cache-control none --metrics $M --csv --print-units base \
    ./pp /tmp/m.gguf cuda 2 $b+0x0 > /tmp/ncu_b$b.csv 2>> $O/ncu_err.txt
done
python3 $R/.dev/s19/ncu_names.py /tmp/ncu_b8.csv 303 > $O/ncu_sum.txt 2>&1
python3 $R/.dev/s19/ncu_names.py /tmp/ncu_b1.csv 273 >> $O/ncu_sum.txt 2>&1
cat $O/ncu_sum.txt
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for d in cuda cuda cuda cuda vulkan vulkan; do
  echo "== $d" >> $S
  PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|scheduler|rc=" $S | cut -c1-230
G=$O/gen.txt
for d in cuda vulkan; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
grep -hE "\| (cuda|vulkan)|rc=" $G | cut -c1-150

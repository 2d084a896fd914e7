#!/bin/bash
# Session 19 run 6 (the final tree): device tests of this session's changes on cuda:0 and
# vulkan:0; six CUDA and two Vulkan servers with 8 clients; decode and b=8 passes on both.
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
WICK_TEST_DEVICES=cuda:0,vulkan:0 timeout 240 ./wick_tests --gtest_filter="*AttentionCached*:*LlamaBatch*:Devices/Llama.*:*RopeKvCache*:Devices/Matmul.*:Gpu/GpuQMatMulShapes.*:*DeviceErrors*" > $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | head -20
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for d in cuda cuda cuda cuda cuda cuda vulkan vulkan; do
  echo "== $d" >> $S
  PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|scheduler|rc=" $S | cut -c1-200
G=$O/gen.txt
for d in cuda vulkan; do
  timeout 90 ./wick bench gen --device $d --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
  timeout 90 ./wick bench gen --device $d --model /tmp/m.gguf --batch 8 >> $G 2>&1; echo "rc=$?" >> $G
done
grep -hE "\| (cuda|vulkan)|rc=" $G | cut -c1-150

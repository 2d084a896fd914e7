#!/bin/bash
# Session 17 run 2: the defaults after run 1 (the q/k/v projection writing the caches on; CUDA's
# qmatvec staging qact's rows from 2 x rows): the CUDA device tests of the new and changed paths
# (run 1's hit their time limit), decode and batched passes once more on both devices, and
# `wick serve` with 8 clients on both. One tarball.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=/tmp/o2; rm -rf $O; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/clocks.txt
date -u > $O/date.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $O/gen0.txt 2>&1
T=$O/tests.txt
WICK_TEST_DEVICES=cuda:0 timeout 200 ./wick_tests --gtest_filter="*RopeKv*:*GpuQMatVecStage*:Devices/Llama.*:*LlamaBatch*:*LlamaOnDevices*" --gtest_brief=1 > $T 2>&1; echo "rc=$?" >> $T
G=$O/gen.txt
for dev in cuda vulkan; do
  echo "== $dev" >> $G
  timeout 90 ./wick bench gen --device $dev --model /tmp/m.gguf --batch 8 >> $G 2>&1; echo "rc=$?" >> $G
done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for dev in cuda vulkan; do
  PYTHONPATH=/tmp/pyo timeout 120 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $dev > $O/serve_$dev.txt 2>&1; echo "rc=$?" >> $O/serve_$dev.txt
done
tar cJf $OUT/run2.tar.xz -C $O .
grep -hE "FAILED|rc=|PASSED|tests ran" $T | head
grep -hE "==|\| (cuda|vulkan)" $G | cut -c1-170
tail -4 $O/serve_*.txt

#!/bin/bash
# Session 17 run 2: the defaults after run 1 (the q/k/v projection writing the caches on; CUDA's
# qmatvec staging qact's rows from 2 x rows; Vulkan's qmatvec quantizing its own x for one row
# of k <= 576, not the lm_head): decode and batched passes on both devices at the defaults,
# Vulkan with WICK_QMATVEC_FUSE=0 (the old default), CUDA with WICK_QMATVEC_FUSE=1,576 (Vulkan's
# rule); `wick serve` with 8 clients on both; the CUDA device tests of the new and changed paths
# (run 1's hit their time limit); the passes again. Outputs written under $OUT as they come.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT/o2; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/clocks.txt
date -u > $O/date.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $O/gen0.txt 2>&1
G=$O/gen.txt
passes() {
  for cfg in "cuda -" "cuda 1,576" "vulkan -" "vulkan 0"; do
    set -- $cfg
    echo "== round $R_I $1 WICK_QMATVEC_FUSE=$2" >> $G
    if [ "$2" = - ]; then e=(); else e=(WICK_QMATVEC_FUSE=$2); fi
    env "${e[@]}" timeout 60 ./wick bench gen --device $1 --model /tmp/m.gguf --batch 8 >> $G 2>&1; echo "rc=$?" >> $G
  done
}
R_I=1 passes
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for dev in cuda vulkan; do
  PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $dev > $O/serve_$dev.txt 2>&1; echo "rc=$?" >> $O/serve_$dev.txt
done
T=$O/tests.txt
WICK_TEST_DEVICES=cuda:0 timeout 100 ./wick_tests --gtest_filter="*RopeKv*:*GpuQMatVecStage*:Gpu/GpuQMatVecFuse.*:Devices/Llama.*:*LlamaOnDevices*" --gtest_brief=1 > $T 2>&1; echo "rc=$?" >> $T
R_I=2 passes
grep -hE "FAILED|rc=|PASSED|tests ran" $T | head
grep -hE "==|\| (cuda|vulkan)" $G | cut -c1-170
tail -4 $O/serve_*.txt

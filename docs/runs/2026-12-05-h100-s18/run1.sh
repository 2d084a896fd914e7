#!/bin/bash
# Session 18 run 1: qmatvec's MMA variant (WICK_QMATVEC_MMA) on CUDA: its device tests, then the
# passes of 1..8 sequences and decode without and with it (and its workgroup sizes), then
# `wick serve` with 8 clients alternating off / on. Outputs under $OUT as they come.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/clocks.txt
date -u > $O/date.txt
T=$O/tests.txt
WICK_TEST_DEVICES=cuda:0 timeout 120 ./wick_tests --gtest_filter="*QMatVecMma*:*QMatMulRopeKv*:*GpuQMatVecStage*" --gtest_brief=1 > $T 2>&1; echo "rc=$?" >> $T
WICK_QMATVEC_MMA=2 WICK_TEST_DEVICES=cuda:0 timeout 90 ./wick_tests --gtest_filter="*LlamaBatch*:Devices/Llama.*" --gtest_brief=1 >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran" $T | head -20
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $O/gen0.txt 2>&1
G=$O/gen.txt
passes() {
  r=$1; shift
  for mma in "$@"; do
    echo "== round $r WICK_QMATVEC_MMA=$mma" >> $G
    WICK_QMATVEC_MMA=$mma timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf --batch 8 >> $G 2>&1; echo "rc=$?" >> $G
  done
}
passes 1 0 2 2,64 2,256 1
grep -hE "==|\| cuda" $G | cut -c1-150
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for i in 1 2; do
  for mma in 0 2; do
    S=$O/serve_${i}_mma$mma.txt
    WICK_QMATVEC_MMA=$mma PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device cuda > $S 2>&1; echo "rc=$?" >> $S
    echo "$S"; grep -E "^\| [18] |ratio" $S
  done
done
passes 2 2 0
grep -hE "==|\| cuda" $G | tail -40 | cut -c1-150

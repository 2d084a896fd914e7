#!/bin/bash
# Session 18 run 2: qmatvec's MMA device tests alone; passes and decode with MMA off / from 8 rows
# with 256 threads / from 2 rows with 256 threads (two rounds); `wick serve` with 8 clients, three
# servers each of MMA off and from 8 rows, alternating, with the scheduler's time shares.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/clocks.txt
date -u > $O/date.txt
T=$O/tests.log
WICK_TEST_DEVICES=cuda:0 timeout 150 ./wick_tests --gtest_filter="*QMatVecMma*:Gpu/GpuQMatMulRopeKv.GpuShapes*" > $T 2>&1; echo "rc=$?" >> $T
grep -hE "^\[ +(OK|FAILED|SKIPPED) |rc=|PASSED|tests ran|Failure" $T | head -20
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $O/gen0.txt 2>&1
G=$O/gen.txt
passes() {
  r=$1; shift
  for mma in "$@"; do
    echo "== round $r WICK_QMATVEC_MMA=$mma" >> $G
    WICK_QMATVEC_MMA=$mma timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf --batch 8 >> $G 2>&1; echo "rc=$?" >> $G
  done
}
passes 1 0 8,256 2,256
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for i in 1 2 3; do
  for mma in 0 8,256; do
    S=$O/serve_${i}_mma${mma/,/_}.txt
    WICK_QMATVEC_MMA=$mma PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device cuda > $S 2>&1; echo "rc=$?" >> $S
    echo "$S"; grep -E "^\| [18] |ratio|scheduler" $S | cut -c1-220
  done
done
passes 2 8,256 0
grep -hE "==|\| cuda" $G | cut -c1-150

#!/bin/bash
# Session 18 run 3, the defaults (CUDA: MMA for 8 x rows, 256 threads; serve's fuller warm-up):
# device tests; decode and passes on CUDA (and with MMA off) and Vulkan; `wick serve` with 8
# clients, three servers on CUDA and two on Vulkan, with the scheduler's time shares.
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
WICK_TEST_DEVICES=cuda:0 timeout 200 ./wick_tests --gtest_filter="*QMatVecMma*:Devices/Llama.*:*LlamaBatch*:*QMatMulRopeKv*" --gtest_brief=1 > $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | head -20
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > /dev/null 2>&1
G=$O/gen.txt
for cfg in "cuda -" "cuda 0" "vulkan -" "cuda -" "cuda 0"; do
  set -- $cfg
  echo "== $1 WICK_QMATVEC_MMA=$2" >> $G
  if [ "$2" = - ]; then e=(); else e=(WICK_QMATVEC_MMA=$2); fi
  env "${e[@]}" timeout 60 ./wick bench gen --device $1 --model /tmp/m.gguf --batch 8 >> $G 2>&1; echo "rc=$?" >> $G
done
grep -hE "==|\| (cuda|vulkan)" $G | cut -c1-150
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for s in cuda_1 vulkan_1 cuda_2 vulkan_2 cuda_3; do
  S=$O/serve_$s.txt
  PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device ${s%_*} > $S 2>&1; echo "rc=$?" >> $S
  echo "$S"; grep -E "^\| [18] |ratio|scheduler" $S | cut -c1-220
done

#!/bin/bash
# Session 19 run 9 (the final tree, MMA at 512 threads by default): b=8 passes, four CUDA servers,
# the MMA, RopeKv and llama device tests on cuda:0.
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
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
P=$O/pp.txt
for cfg in - 8,256 - 8,256; do
  if [ "$cfg" = - ]; then e=(); else e=(WICK_QMATVEC_MMA=$cfg); fi
  echo "== MMA $cfg" >> $P
  env "${e[@]}" timeout 60 ./pp /tmp/m.gguf cuda 8 1+0x0 8+0x0 >> $P 2>&1
done
grep -E "==|8\+0x0 .*rep [4-7]" $P | cut -c1-40
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for i in 1 2 3 4; do
  echo "== cuda" >> $S
  PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device cuda >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|scheduler|rc=" $S | cut -c1-200
T=$O/tests.txt
WICK_TEST_DEVICES=cuda:0 timeout 110 ./wick_tests --gtest_filter="*QMatVecMma*:*QMatMulRopeKv*:*LlamaBatch*:Devices/Llama.*" > $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | cut -c1-150 | head -30

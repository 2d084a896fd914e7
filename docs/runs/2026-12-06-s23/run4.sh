#!/bin/bash
# Session 23 run 4: the mid qmatvec tier (128 x 4 from 2048 rows) against the shapes before it
# (WICK_QMATVEC_SHAPE=64,2,64,4), alternating: decode, passes of 1-8 sequences, profile, serve,
# device tests.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for s in default 64,2,64,4; do WICK_QMATVEC_SHAPE=$([ $s = default ] || echo $s) timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen_vk.txt
for r in 1 2 3; do for s in default 64,2,64,4; do
  echo "== round $r shape $s" >> $G
  if [ $s = default ]; then E=""; else E="WICK_QMATVEC_SHAPE=$s"; fi
  env $E timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
grep -hE "==|\| vulkan.*replayed|rc=[^0]" $G | cut -c1-160
B=$O/batch_vk.txt
for r in 1 2; do for s in default 64,2,64,4; do
  echo "== round $r shape $s" >> $B
  if [ $s = default ]; then E=""; else E="WICK_QMATVEC_SHAPE=$s"; fi
  env $E timeout 90 ./wick bench gen --device vulkan --model /tmp/m.gguf --batch 8 -n 64 >> $B 2>&1; echo "rc=$?" >> $B
done; done
grep -hE "==|\| [1248] +\| [0-9]" $B | cut -c1-140
WICK_VK_PROFILE=1 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 32 > $O/vkprof_default.txt 2>&1
grep -A7 "WICK_VK_PROFILE" $O/vkprof_default.txt | cut -c1-230
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0 timeout 150 ./wick_tests --gtest_brief=1 --gtest_filter="*GpuQMatMulShapes*:*QMatMulPrologues*:*Swiglu*:Devices/Llama.*:*LlamaOnDevices*:*LlamaBatch*:*QMatvecFuse*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran" $T | cut -c1-150 | tail -8
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device vulkan >> $S 2>&1; echo "rc=$?" >> $S
grep -E "^\| [18] |ratio|rc=" $S | cut -c1-200
date -u >> $O/clocks.txt

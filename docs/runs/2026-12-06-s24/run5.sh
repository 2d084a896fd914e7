#!/bin/bash
# Session 24 run 5: qmatvec's packed 8-bit dot products (default) against one product per element
# (WICK_VK_INT_DOT=0): decode, passes of 1/4/8 sequences, profiles; serve; device tests.
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
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0 timeout 200 ./wick_tests --gtest_brief=1 --gtest_filter="*PackedDot*:*GpuQMatMulSweeps*:*Swiglu*:*QMatMulPrologues*:Devices/Llama.*:*LlamaOnDevices*:*LlamaBatch*:*QMatvecFuse*:*GpuQMatMulShapes*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran" $T | cut -c1-150 | tail -8
for s in 1 0; do WICK_VK_INT_DOT=$s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; for b in 1 8; do WICK_VK_INT_DOT=$s ./fbprof /tmp/m.gguf vulkan $b 20 > /dev/null 2>&1; done; done
G=$O/gen.txt
for r in 1 2; do for s in 1 0; do
  echo "== round $r int_dot $s" >> $G; WICK_VK_INT_DOT=$s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
grep -hE "==|replayed|rc=[^0]" $G | cut -c1-160
F=$O/fb.txt
for r in 1 2; do for b in 1 4 8; do for s in 1 0; do
  echo -n "round $r int_dot $s " >> $F; WICK_VK_INT_DOT=$s ./fbprof /tmp/m.gguf vulkan $b 200 >> $F 2>&1
done; done; done
cat $F
for b in 1 8; do WICK_VK_PROFILE=1 ./fbprof /tmp/m.gguf vulkan $b 100 > $O/prof_$b.txt 2>&1; grep -A9 "WICK_VK_PROFILE" $O/prof_$b.txt | cut -c1-60,150-200; done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve_vulkan.txt
PYTHONPATH=/tmp/pyo timeout 150 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device vulkan --rounds 3 >> $S 2>&1; echo "rc=$?" >> $S
grep -E "^\| [18] |ratio|rc=" $S | cut -c1-200
echo "== cuda" >> $G; timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1
grep -hE "cuda.*replayed" $G | cut -c1-160
date -u >> $O/clocks.txt

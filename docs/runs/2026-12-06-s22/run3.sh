#!/bin/bash
# Session 22 run 3: SWIGLU_Q8 with the grouped quantizer, Vulkan on/off alternating; profile;
# CUDA's default; device tests of the feed-forward block on both.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 16 > /dev/null 2>&1
WICK_QMATVEC_SWIGLU=0 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 16 > /dev/null 2>&1
G=$O/gen_vk.txt
for r in 1 2 3; do for s in on 0; do
  echo "== round $r WICK_QMATVEC_SWIGLU=$s" >> $G
  WICK_QMATVEC_SWIGLU=$s timeout 50 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
grep -hE "==|\| vulkan|rc=" $G | cut -c1-200
C=$O/gen_cuda.txt
for r in 1 2; do echo "== round $r default" >> $C; timeout 50 ./wick bench gen --device cuda --model /tmp/m.gguf >> $C 2>&1; done
grep -hE "==|\| cuda" $C | cut -c1-200
WICK_VK_PROFILE=1 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 64 > $O/vkprof.txt 2>&1
grep -A8 "WICK_VK_PROFILE" $O/vkprof.txt | cut -c1-220
T=$O/tests.txt
for d in vulkan:0 cuda:0; do
  echo "== $d" >> $T
  WICK_TEST_DEVICES=$d timeout 100 ./wick_tests --gtest_brief=1 --gtest_filter="*Swiglu*:Devices/Llama.*:*LlamaOnDevices*" >> $T 2>&1; echo "rc=$?" >> $T
done
WICK_QMATVEC_SWIGLU=1 WICK_TEST_DEVICES=cuda:0 timeout 60 ./wick_tests --gtest_brief=1 --gtest_filter="Devices/Llama.*:*LlamaOnDevices*:*LlamaBatch*" >> $T 2>&1; echo "rc=$? (cuda, SWIGLU=1)" >> $T
grep -hE "==|FAILED|rc=|PASSED|tests ran|Failure" $T | cut -c1-150 | head -24
date -u >> $O/clocks.txt
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for d in vulkan cuda; do
  echo "== $d" >> $S
  PYTHONPATH=/tmp/pyo timeout 60 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|rc=" $S | cut -c1-200
date -u >> $O/clocks.txt

#!/bin/bash
# Session 18 run 4: prompts as rows of the decode step (WICK_PROMPT_ROWS, default 64) in
# forward_batch: device tests on both devices; `wick serve` with 8 clients, CUDA alternating the
# default and WICK_PROMPT_ROWS=0 (the prompt path), then Vulkan; decode and passes at the defaults.
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
WICK_TEST_DEVICES=cuda:0,vulkan:0 timeout 150 ./wick_tests --gtest_filter="*LlamaBatch*:Devices/Llama.*:*RopeKvCache*" --gtest_brief=1 > $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | head -20
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > /dev/null 2>&1
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for cfg in "cuda -" "cuda 0" "cuda -" "cuda 0" "cuda -" "vulkan -" "vulkan -"; do
  set -- $cfg
  if [ "$2" = - ]; then e=(); else e=(WICK_PROMPT_ROWS=$2); fi
  echo "== $1 WICK_PROMPT_ROWS=$2" >> $S
  env "${e[@]}" PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $1 >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|scheduler" $S | cut -c1-230
G=$O/gen.txt
for d in cuda vulkan; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf --batch 8 >> $G 2>&1; echo "rc=$?" >> $G; done
grep -hE "\| (cuda|vulkan)" $G | cut -c1-150

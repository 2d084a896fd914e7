#!/bin/bash
# Session 28 run 4: the final tree (session 27's kernels; the O_PROJ attempt reverted): serve 8/1 on
# Vulkan and CUDA (3 rounds each), decode on both (two rounds), and Vulkan's decode in chunks of 32.
cd "$(dirname "$0")/../.."
R=$PWD
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for d in vulkan cuda; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo > /dev/null; done
S=$O/serve.txt
for d in vulkan cuda; do echo "== $d" >> $S; PYTHONPATH=/tmp/pyo timeout 90 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d --rounds 2 >> $S 2>&1; echo "rc=$?" >> $S; done
grep -E "^==|ratio|rc=" $S | cut -c1-200
date -u >> $O/clocks.txt
G=$O/gen.txt
for r in 1; do for d in vulkan cuda; do echo "== $d" >> $G; timeout 40 ./wick bench gen --device $d --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done; done
for c in 32; do echo "== vulkan WICK_DECODE_CHUNK=$c" >> $G; WICK_DECODE_CHUNK=$c timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
grep -hE "==|replayed|op by op|rc=[^0]" $G | cut -c1-200
date -u >> $O/clocks.txt

#!/bin/bash
# Session 33 run 4: serve 8/1 on Vulkan and CUDA with the final tree (the scheduler changed for
# logprobs, echo, n and tools after run 1), and decode once on each.
cd "$(dirname "$0")/../.."
R=$PWD
O=$OUT; mkdir -p $O
S0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for d in vulkan cuda; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
echo "warm t=$(( $(date +%s) - S0 ))"
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo > /dev/null; done
S=$O/serve.txt
for d in vulkan cuda; do echo "== $d" >> $S; PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d --rounds 2 >> $S 2>&1; echo "rc=$?" >> $S; done
grep -E "^==|ratio|rc=" $S | cut -c1-200
G=$O/gen.txt
for d in vulkan cuda; do echo "== $d" >> $G; timeout 40 ./wick bench gen --device $d --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
grep -hE "==|replayed, 8|rc=[^0]" $G | cut -c1-150
echo "t=$(( $(date +%s) - S0 ))"

#!/bin/bash
# Session 25 run 8 (final tree: the first one-token forward op by op, the second captures): first
# token after load in new processes (three per device after one that fills the caches), decode,
# serve on CUDA, and the llama/replay device tests.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc4
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for d in vulkan cuda; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen.txt
for r in 1 2 3; do for d in vulkan cuda; do
  echo "== round $r $d" >> $G; timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
grep -hE "==|replayed|op by op|rc=[^0]" $G | cut -c1-200
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve_cuda.txt
PYTHONPATH=/tmp/pyo timeout 120 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device cuda --rounds 3 >> $S 2>&1; echo "rc=$?" >> $S
grep -E "^ratios|rc=" $S
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 150 ./wick_tests --gtest_brief=1 --gtest_filter="*Replay*:*Capture*:Devices/Llama.*:*LlamaOnDevices*:*LlamaBatch*:Gpu/GpuPool.*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|SKIPPED|tests ran" $T | cut -c1-150 | tail -12
date -u >> $O/clocks.txt

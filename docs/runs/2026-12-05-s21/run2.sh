#!/bin/bash
# Session 21 run 2 (short): Vulkan barriers exact against full, decode both devices, one server
# each, the Vulkan device tests most touched by barriers.
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
G=$O/gen_barrier.txt
timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 16 > /dev/null 2>&1
for r in 1 2; do for b in exact full; do
  echo "== round $r WICK_VK_BARRIER=$b" >> $G
  WICK_VK_BARRIER=$b timeout 50 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
grep -hE "==|\| vulkan|rc=" $G | cut -c1-200
timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf > $O/gen_cuda.txt 2>&1; grep "| cuda" $O/gen_cuda.txt | cut -c1-200
T=$O/tests_vk.txt
WICK_TEST_DEVICES=vulkan:0 timeout 70 ./wick_tests --gtest_brief=1 --gtest_filter="*Replay*:*Capture*:*DeviceErrors*:Devices/Llama.*:*LlamaBatch*:*RopeKv*" > $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | cut -c1-150 | head -20
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for d in cuda vulkan; do
  echo "== $d" >> $S
  PYTHONPATH=/tmp/pyo timeout 60 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|rc=" $S | cut -c1-200

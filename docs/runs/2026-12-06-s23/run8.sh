#!/bin/bash
# Session 23 run 8: attention_block 256 as Vulkan's default against 128 (WICK_ATTENTION_BLOCK=128):
# decode after 128 and 1024 prompt tokens, prefill 512, passes of 1-8 sequences, serve, tests.
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
run() { if [ $1 = default ]; then "${@:2}"; else WICK_ATTENTION_BLOCK=$1 "${@:2}"; fi; }
for c in default 128; do run $c timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen_vk.txt
for r in 1 2; do for c in default 128; do
  echo "== round $r $c" >> $G; run $c timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1
done; done
for c in default 128; do
  echo "== long $c" >> $G; run $c timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 1024 -n 64 >> $G 2>&1
  echo "== prefill512 $c" >> $G; run $c timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 512 -n 16 >> $G 2>&1
done
grep -hE "==|\| vulkan.*replayed" $G | cut -c1-160
B=$O/batch_vk.txt
for c in default 128; do
  echo "== $c" >> $B; run $c timeout 90 ./wick bench gen --device vulkan --model /tmp/m.gguf --batch 8 -n 64 >> $B 2>&1
done
grep -hE "==|\| [1248] +\| [0-9]" $B | cut -c1-140
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for c in default 128; do
  echo "== $c" >> $S
  run $c env PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device vulkan --rounds 2 >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|ratio|rc=" $S | cut -c1-200
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0 timeout 100 ./wick_tests --gtest_brief=1 --gtest_filter="*GpuAttentionBlocks*:Devices/AttentionCached.*:*LlamaOnDevices*:Devices/Llama.*:*LlamaBatch*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran" $T | cut -c1-150 | tail -6
date -u >> $O/clocks.txt

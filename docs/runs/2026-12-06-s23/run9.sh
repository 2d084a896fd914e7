#!/bin/bash
# Session 23 run 9 (final tree): decode's attention workgroup 256, prompts' 128, against 128 for
# both (WICK_ATTENTION_BLOCK=128): decode, prefill 512; CUDA's default as the anchor; tests.
cd "$(dirname "$0")/../.."
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
  echo "== prefill512 round $r $c" >> $G; run $c timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf --prompt-tokens 512 -n 16 >> $G 2>&1
done; done
grep -hE "==|\| vulkan.*replayed" $G | cut -c1-160
C=$O/gen_cuda.txt
echo "== cuda default" >> $C; timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf >> $C 2>&1
grep -hE "==|\| cuda.*replayed" $C | cut -c1-160
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0 timeout 60 ./wick_tests --gtest_brief=1 --gtest_filter="*GpuAttentionBlocks*:*LlamaOnDevices*:Devices/Llama.*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran" $T | cut -c1-150 | tail -4
date -u >> $O/clocks.txt

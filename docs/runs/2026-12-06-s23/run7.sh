#!/bin/bash
# Session 23 run 7: the tree's decode shapes against 64,2,64,4 (confirmation); attention's
# workgroup (WICK_ATTENTION_BLOCK 32/64/256 against 128) on Vulkan and CUDA; passes; serve; tests.
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
CFG="default S=64,2,64,4 A=32 A=64 A=256"
run() { case $1 in default) "${@:2}";; S=*) WICK_QMATVEC_SHAPE=${1#S=} "${@:2}";; A=*) WICK_ATTENTION_BLOCK=${1#A=} "${@:2}";; esac; }
for c in $CFG; do run $c timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen_vk.txt
for r in 1 2; do for c in $CFG; do
  echo "== round $r $c" >> $G; run $c timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1
done; done
grep -hE "==|\| vulkan.*replayed" $G | cut -c1-150
C=$O/gen_cuda.txt
for c in default A=32 A=64; do echo "== $c" >> $C; run $c timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf >> $C 2>&1; done
grep -hE "==|\| cuda.*replayed" $C | cut -c1-150
B=$O/batch_vk.txt
for c in default S=64,2,64,4 A=32 A=64; do
  echo "== $c" >> $B; run $c timeout 90 ./wick bench gen --device vulkan --model /tmp/m.gguf --batch 8 -n 64 >> $B 2>&1
done
grep -hE "==|\| [1248] +\| [0-9]" $B | cut -c1-140
for c in A=32 A=64; do
  run $c env WICK_VK_PROFILE=1 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 32 > $O/vkprof_${c#A=}.txt 2>&1
  echo "== profile $c"; grep -A3 "WICK_VK_PROFILE" $O/vkprof_${c#A=}.txt | tail -2 | cut -c1-120
done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for c in default S=64,2,64,4; do
  echo "== $c" >> $S
  run $c env PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device vulkan >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|rc=" $S | cut -c1-200
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 150 ./wick_tests --gtest_brief=1 --gtest_filter="*GpuAttentionBlocks*:*DecodeAndMid*:*GpuQMatMulShapes*:Devices/AttentionCached.*:*LlamaOnDevices*:Devices/Llama.*:*Swiglu*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran" $T | cut -c1-150 | tail -8
date -u >> $O/clocks.txt

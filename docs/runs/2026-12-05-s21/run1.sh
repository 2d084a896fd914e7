#!/bin/bash
# Session 21 run 1: Vulkan barriers naming only their stages (WICK_VK_BARRIER=exact, new default)
# against full ones, alternating; CUDA decode; bench gen --batch 8; servers; device tests.
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
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
G=$O/gen_barrier.txt
timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 16 > /dev/null 2>&1  # warm-up, kernel cache
for r in 1 2; do for b in exact full; do
  echo "== round $r WICK_VK_BARRIER=$b" >> $G
  WICK_VK_BARRIER=$b timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
grep -hE "==|\| vulkan|rc=" $G | cut -c1-200
P=$O/pp_barrier.txt
for r in 1; do for b in exact full; do
  echo "== round $r WICK_VK_BARRIER=$b" >> $P
  WICK_VK_BARRIER=$b timeout 60 ./pp /tmp/m.gguf vulkan 6 1+0x0 8+0x0 >> $P 2>&1
done; done
grep -E "==|0x0 .*rep [3-5]" $P | cut -c1-60
WICK_VK_PROFILE=1 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 32 > $O/vkprof_b1.txt 2>&1
G2=$O/gen.txt
for d in cuda vulkan; do
  timeout 90 ./wick bench gen --device $d --model /tmp/m.gguf >> $G2 2>&1; echo "rc=$?" >> $G2
  timeout 90 ./wick bench gen --device $d --model /tmp/m.gguf --batch 8 >> $G2 2>&1; echo "rc=$?" >> $G2
done
grep -hE "\| (cuda|vulkan)|rc=|^\| [1248] " $G2 | cut -c1-150
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
for d in cuda cuda vulkan vulkan; do
  echo "== $d" >> $S
  PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $d >> $S 2>&1; echo "rc=$?" >> $S
done
grep -E "==|^\| [18] |ratio|rc=" $S | cut -c1-200
T=$O/tests_vk.txt
WICK_TEST_DEVICES=vulkan:0 timeout 90 ./wick_tests --gtest_brief=1 --gtest_filter="Devices/*:Gpu/*:*Replay*:*Capture*:*DeviceErrors*:*AttentionCached*:*RopeKv*" > $T 2>&1; echo "rc=$?" >> $T
grep -hE "FAILED|rc=|PASSED|tests ran|Failure" $T | cut -c1-150 | head -30

#!/bin/bash
# Session 14 run 4: the final tree (Vulkan: 64 x 64 cooperative-matrix tiles for prompt-sized
# products, qmatvec 64 x 2 / wide 64 x 4; reshape as a view): decode and prefill on CUDA and
# Vulkan, serve with 8 clients on both, device tests of the changed paths. One tarball.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && tar xJf .dev/fb.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=/tmp/o4; rm -rf $O; mkdir -p $O
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/clocks.txt
G=$O/gen.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
for i in 1 2; do
  for dev in vulkan cuda; do timeout 40 ./wick bench gen --device $dev --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
done
for i in 1 2; do
  for dev in vulkan cuda; do timeout 60 ./wick bench gen --device $dev --model /tmp/m.gguf --prompt-tokens 512 -n 16 >> $O/prefill.txt 2>&1; echo "rc=$?" >> $O/prefill.txt; done
done
for dev in cuda vulkan; do timeout 60 ./fb /tmp/m.gguf $dev > $O/fb_$dev.txt 2>&1; echo "rc=$?" >> $O/fb_$dev.txt; done
WICK_VK_PROFILE=1 timeout 60 ./fbprof /tmp/m.gguf vulkan 1 40 > $O/vkprof_b1.txt 2>&1
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for dev in cuda vulkan; do
  PYTHONPATH=/tmp/pyo timeout 120 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $dev > $O/serve_$dev.txt 2>&1; echo "rc=$?" >> $O/serve_$dev.txt
done
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0,cuda:0 timeout 150 ./wick_tests --gtest_filter="*Core*:*Matmul*:*Coop*:*QMat*:*Qmat*:*LlamaBatch*:Devices/Llama.*:*CliBinary.VulkanProfile*" --gtest_brief=1 > $T 2>&1; echo "rc=$?" >> $T
tar cJf $OUT/run4.tar.xz -C $O .
grep -hE "FAILED|rc=|PASSED|tests ran" $T | grep -v LlamaCppVocab | head
grep -hE "\| (cuda|vulkan)|rc=" $G $O/prefill.txt | cut -c1-200
grep -hE "b=1 pass|b=8 pass" $O/fb_*.txt
tail -3 $O/serve_*.txt | grep -E "ratio|rc="
grep -E "GPU time|QTYPE=8" $O/vkprof_b1.txt | cut -c1-120

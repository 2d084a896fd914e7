#!/bin/bash
# Session 15 run 1: qmatvec quantizing its own x with staged rows (ACT_INLINE) against the
# two-dispatch path, and qmatvec copying qact's rows into shared memory (ACT_STAGE), on CUDA and
# Vulkan: fb passes (b = 1, 2, 8) at the defaults (neither), WICK_QMATVEC_FUSE=1 and
# WICK_QMATVEC_STAGE=2; decode at the defaults and FUSE=1; the Vulkan profile with FUSE=1; device
# tests of both kernels and the AVX-512 quantizer. One tarball.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && tar xJf .dev/fb.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=/tmp/o1; rm -rf $O; mkdir -p $O
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/clocks.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $O/gen0.txt 2>&1
for dev in cuda vulkan; do
  for cfg in default fuse stage; do
    env=(); [ $cfg = fuse ] && env=(WICK_QMATVEC_FUSE=1); [ $cfg = stage ] && env=(WICK_QMATVEC_STAGE=2)
    env "${env[@]}" timeout 60 ./fb /tmp/m.gguf $dev > $O/fb_${dev}_$cfg.txt 2>&1; echo "rc=$?" >> $O/fb_${dev}_$cfg.txt
  done
done
G=$O/gen.txt
for i in 1 2; do
  for dev in cuda vulkan; do
    for f in 0 1; do
      echo "== $dev fuse=$f" >> $G
      WICK_QMATVEC_FUSE=$f timeout 40 ./wick bench gen --device $dev --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
    done
  done
done
# In-process batching (session 16's bench gen --batch): b = 1, 2, 4, 8 at the default and with
# the staged rows (the serve goal's b = 8 pass).
B=$O/batch.txt
for dev in cuda vulkan; do
  for st in 0 2; do
    echo "== $dev stage=$st" >> $B
    WICK_QMATVEC_STAGE=$st timeout 60 ./wick bench gen --device $dev --model /tmp/m.gguf --batch 8 -n 64 >> $B 2>&1; echo "rc=$?" >> $B
  done
done
WICK_QMATVEC_FUSE=1 WICK_VK_PROFILE=1 timeout 60 ./fbprof /tmp/m.gguf vulkan 1 40 > $O/vkprof_b1.txt 2>&1
T=$O/tests.txt
WICK_TEST_DEVICES=cpu timeout 40 ./wick_tests --gtest_filter="*SimdActivation*:*QMatMul*Simd*" --gtest_brief=1 > $O/tests_cpu.txt 2>&1; echo "rc=$?" >> $O/tests_cpu.txt
for d in cuda:0 vulkan:0; do
  WICK_TEST_DEVICES=$d timeout 100 ./wick_tests --gtest_filter="*GpuQMatVecFuse*:*GpuQMatVecStage*" --gtest_brief=1 >> $T 2>&1; echo "rc=$? ($d fuse)" >> $T
done
WICK_QMATVEC_FUSE=1 WICK_QMATVEC_STAGE=2 WICK_TEST_DEVICES=cuda:0,vulkan:0 timeout 90 ./wick_tests --gtest_filter="Devices/Llama.*:*LlamaBatch*:*QMatMulFused*" --gtest_brief=1 >> $T 2>&1; echo "rc=$? (llama)" >> $T
tar cJf $OUT/run1.tar.xz -C $O .
grep -hE "FAILED|rc=|PASSED|tests ran" $T $O/tests_cpu.txt | grep -v LlamaCppVocab | head -20
for f in $O/fb_*; do echo "$f: $(grep -E 'b=(1|8) pass' $f | tail -2 | tr '\n' ' ')"; done
grep -hE "==|\| (cuda|vulkan)" $G | cut -c1-170
grep -hE "==|\| (cuda|vulkan) +\| [0-9]" $B | cut -c1-150
grep -E "GPU time" $O/vkprof_b1.txt | cut -c1-150
grep -A12 "share" $O/vkprof_b1.txt | cut -c1-130

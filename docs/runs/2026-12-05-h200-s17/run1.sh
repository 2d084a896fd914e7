#!/bin/bash
# Session 17 run 1 (session 15's pending script, with session 16's bench gen --batch in place of
# the fb harness): the q/k/v projection writing rope_kv_cache's outputs from its stores (session
# 17, default on; WICK_QMATVEC_ROPE=0 the two dispatches), qmatvec quantizing its own x
# (WICK_QMATVEC_FUSE=1, ACT_INLINE) and qmatvec staging qact's rows in shared memory
# (WICK_QMATVEC_STAGE=2, ACT_STAGE), on CUDA and Vulkan: decode (replayed and op by op) and
# forward_batch passes at b = 1, 2, 4, 8, two rounds; the Vulkan profile of 40 one-token passes
# with FUSE 0 and 1; the kernels' tests on cuda:0 and vulkan:0, the llama tests with FUSE and
# STAGE on, the host's AVX-512 quantizer tests. One tarball. fbprof is
# ../2026-12-04-h200-s12/forward_batch_profile.cpp built against the release library; the bundle
# (.dev/bundle.tar.xz) holds it, wick, wick_tests and the shared libraries the device lacks.
cd "$(dirname "$0")/../.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=/tmp/o1; rm -rf $O; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $O/clocks.txt
date -u > $O/date.txt
timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $O/gen0.txt 2>&1
G=$O/gen.txt
for i in 1 2; do
  for dev in cuda vulkan; do
    for cfg in default norope fuse stage; do
      env=(WICK_QMATVEC_FUSE=0 WICK_QMATVEC_STAGE=0)
      [ $cfg = norope ] && env=(WICK_QMATVEC_ROPE=0 WICK_QMATVEC_FUSE=0 WICK_QMATVEC_STAGE=0)
      [ $cfg = fuse ] && env=(WICK_QMATVEC_FUSE=1 WICK_QMATVEC_STAGE=0)
      [ $cfg = stage ] && env=(WICK_QMATVEC_FUSE=0 WICK_QMATVEC_STAGE=2)
      echo "== round $i $dev $cfg" >> $G
      env "${env[@]}" timeout 90 ./wick bench gen --device $dev --model /tmp/m.gguf --batch 8 >> $G 2>&1; echo "rc=$?" >> $G
    done
  done
done
for f in 0 1; do
  WICK_QMATVEC_FUSE=$f WICK_VK_PROFILE=1 timeout 60 ./fbprof /tmp/m.gguf vulkan 1 40 > $O/vkprof_b1_fuse$f.txt 2>&1
done
WICK_QMATVEC_STAGE=2 WICK_VK_PROFILE=1 timeout 60 ./fbprof /tmp/m.gguf vulkan 8 40 > $O/vkprof_b8_stage2.txt 2>&1
WICK_QMATVEC_STAGE=0 WICK_VK_PROFILE=1 timeout 60 ./fbprof /tmp/m.gguf vulkan 8 40 > $O/vkprof_b8_stage0.txt 2>&1
T=$O/tests.txt
WICK_TEST_DEVICES=cpu timeout 40 ./wick_tests --gtest_filter="*SimdActivation*:*QMatMul*Simd*" --gtest_brief=1 > $O/tests_cpu.txt 2>&1; echo "rc=$?" >> $O/tests_cpu.txt
for d in cuda:0 vulkan:0; do
  WICK_TEST_DEVICES=$d timeout 100 ./wick_tests --gtest_filter="*GpuQMatVecFuse*:*GpuQMatVecStage*:*RopeKv*" --gtest_brief=1 >> $T 2>&1; echo "rc=$? ($d fuse, stage, rope)" >> $T
done
WICK_QMATVEC_FUSE=1 WICK_QMATVEC_STAGE=2 WICK_TEST_DEVICES=cuda:0,vulkan:0 timeout 90 ./wick_tests --gtest_filter="Devices/Llama.*:*LlamaBatch*:*QMatMulFused*" --gtest_brief=1 >> $T 2>&1; echo "rc=$? (llama)" >> $T
tar cJf $OUT/run1.tar.xz -C $O .
grep -hE "FAILED|rc=|PASSED|tests ran" $T $O/tests_cpu.txt | grep -v LlamaCppVocab | head -20
grep -hE "==|\| (cuda|vulkan) " $G | cut -c1-160
grep -hE "GPU time|command buffers" $O/vkprof_*.txt | cut -c1-160

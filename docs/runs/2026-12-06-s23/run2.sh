#!/bin/bash
# Session 23 run 2: qmatvec's unrolled dot loop with early weight and residual loads
# (WICK_QMATVEC_UNROLL on / 0 alternating), Vulkan's profile of each, device tests, CUDA's default.
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
for s in 1 0; do WICK_QMATVEC_UNROLL=$s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 16 > /dev/null 2>&1; done
G=$O/gen_vk.txt
for r in 1 2 3; do for s in 1 0; do
  echo "== round $r WICK_QMATVEC_UNROLL=$s" >> $G
  WICK_QMATVEC_UNROLL=$s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
done; done
grep -hE "==|\| vulkan|rc=" $G | cut -c1-200
C=$O/gen_cuda.txt
echo "== cuda default" >> $C; timeout 60 ./wick bench gen --device cuda --model /tmp/m.gguf >> $C 2>&1
grep -hE "==|\| cuda" $C | cut -c1-200
for s in 1 0; do
  WICK_QMATVEC_UNROLL=$s WICK_VK_PROFILE=1 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 64 > $O/vkprof_unroll$s.txt 2>&1
  grep -A8 "WICK_VK_PROFILE" $O/vkprof_unroll$s.txt | cut -c1-200
done
T=$O/tests.txt
WICK_TEST_DEVICES=vulkan:0 timeout 200 ./wick_tests --gtest_brief=1 --gtest_filter="*UnrolledDotLoop*:*QMatMulPrologues*:*Swiglu*:Devices/Llama.*:*LlamaOnDevices*:*RopeKv*:*GpuQMatMul*:*QMatvecFuse*" >> $T 2>&1; echo "rc=$?" >> $T
grep -hE "==|FAILED|rc=|PASSED|tests ran" $T | cut -c1-150 | tail -12
date -u >> $O/clocks.txt

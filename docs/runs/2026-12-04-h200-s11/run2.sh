#!/bin/bash
# Session 11 run 2: cuda:0 tests listed one by one (run 1's brief run timed out silently), the fused
# qmatvec under nsys if present, serve with WICK_QMATVEC_FUSE=0 on CUDA and Vulkan.
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
[ -f /tmp/m.gguf ] || ./wick bench gen --device cuda --save-model /tmp/m.gguf --quick > /dev/null 2>&1
F='*AttentionCached*:*RopeKv*:Llama*:HardeningCore*:*OnDevices*'
WICK_TEST_DEVICES=cuda:0 timeout 150 ./wick_tests --gtest_filter="$F:-*Sweeps*:LlamaCppVocab*:*CliGenerates*" > $OUT/tests_cuda.txt 2>&1; echo "rc=$?" >> $OUT/tests_cuda.txt
grep -E "^\[  (FAILED|PASSED)|rc=|tests ran" $OUT/tests_cuda.txt; grep -E "Failure" -A8 $OUT/tests_cuda.txt | head -30; grep "RUN" $OUT/tests_cuda.txt | tail -1
WICK_TEST_DEVICES=cuda:0 timeout 100 ./wick_tests --gtest_filter="*GpuQMatVecFuse*" > $OUT/tests_cuda_fuse.txt 2>&1; echo "rc=$?" >> $OUT/tests_cuda_fuse.txt
grep -E "^\[  (FAILED|PASSED)|rc=|OK \]" $OUT/tests_cuda_fuse.txt | cut -c1-120; grep "RUN" $OUT/tests_cuda_fuse.txt | tail -1
which nsys ncu
if which nsys >/dev/null; then
  WICK_QMATVEC_FUSE=1 timeout 60 nsys profile -o /tmp/prof --force-overwrite true ./wick bench gen --device cuda --model /tmp/m.gguf -n 32 > /dev/null 2>&1
  timeout 60 nsys stats --report cuda_gpu_kern_sum /tmp/prof.nsys-rep 2>/dev/null | head -20 | cut -c1-220 > $OUT/nsys.txt; cat $OUT/nsys.txt
fi
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
export WICK_QMATVEC_FUSE=0
for dev in cuda vulkan; do
  S=$OUT/serve_$dev.txt
  PYTHONPATH=/tmp/pyo timeout 100 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $dev > $S 2>&1; echo "rc=$?" >> $S
  tail -4 $S
done
G=$OUT/gen.txt
for i in 1 2; do timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
grep -E "\| (cuda|vulkan)|rc=" $G

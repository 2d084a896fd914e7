#!/bin/bash
# Session 11 run 3 (WICK_QMATVEC_FUSE off by default): forward_batch passes of 1, 2 and 8 sequences
# timed in-process (forward_batch_timing.cpp) on CUDA and Vulkan; wick serve with each client in a
# process of its own; decode; llama.cpp CUDA built in the same call.
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
( bash .dev/anchors/llama_cpp_cuda.sh $R/.dev/llama_src.tar.xz /tmp/lb > $OUT/llama_build.txt 2>&1 ) &
LB=$!
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && tar xJf .dev/fb.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
G=$OUT/gen.txt
timeout 40 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
for dev in cuda vulkan; do timeout 60 ./fb /tmp/m.gguf $dev > $OUT/fb_$dev.txt 2>&1; echo "rc=$?" >> $OUT/fb_$dev.txt; cat $OUT/fb_$dev.txt; done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for dev in cuda vulkan; do
  S=$OUT/serve_$dev.txt
  PYTHONPATH=/tmp/pyo timeout 100 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $dev > $S 2>&1; echo "rc=$?" >> $S
  tail -5 $S | head -3
done
for i in 1 2; do timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
grep -E "\| (cuda|vulkan)|rc=" $G
wait $LB; tail -1 $OUT/llama_build.txt
timeout 100 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 512 -n 128 -r 3 -ngl 99 > $OUT/llama_bench.txt 2>&1; echo "rc=$?" >> $OUT/llama_bench.txt
grep -v "^$" $OUT/llama_bench.txt | tail -5
timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G
grep -E "\| cuda" $G | tail -2

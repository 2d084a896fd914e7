#!/bin/bash
# Session 26 run 4 (run 3's machine, same tree): llama.cpp's CUDA backend built in the call
# (llama-bench -fa 0,1 tg128) beside wick's decode (chunks, one step a submission, op by op);
# a Vulkan profile of the chunked decode meanwhile.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -x /tmp/run/wick ] || { rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run; }
O=$OUT; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $O/clocks.txt; date -u >> $O/clocks.txt
( ( time bash .dev/anchors/llama_cpp_cuda.sh $R/.dev/llama_src.tar.xz /tmp/lb ) > $O/llama_build.txt 2>&1; echo "rc=$?" >> $O/llama_build.txt ) &
BUILD=$!
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
WICK_VK_PROFILE=1 timeout 90 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 64 > $O/vkprof.txt 2>&1
grep -A16 "WICK_VK_PROFILE" $O/vkprof.txt | cut -c1-200
wait $BUILD
tail -3 $O/llama_build.txt
date -u >> $O/clocks.txt
L=$O/llama_bench.txt
G=$O/gen.txt
for d in vulkan cuda; do timeout 60 ./wick bench gen --device $d --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
LD_LIBRARY_PATH=/tmp/lb/bin timeout 100 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 0,1 -p 0 -n 128 -r 5 >> $L 2>&1; echo "rc=$?" >> $L
for d in vulkan cuda; do echo "== $d" >> $G; timeout 90 ./wick bench gen --device $d --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
LD_LIBRARY_PATH=/tmp/lb/bin timeout 60 /tmp/lb/bin/llama-bench -m /tmp/m.gguf -fa 1 -p 0 -n 128 -r 5 >> $L 2>&1; echo "rc=$?" >> $L
grep -E "tg128|rc=" $L | cut -c1-160
grep -hE "==|replayed|op by op|rc=[^0]" $G | cut -c1-200
date -u >> $O/clocks.txt

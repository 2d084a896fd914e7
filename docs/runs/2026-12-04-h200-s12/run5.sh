#!/bin/bash
# Session 12 run 5 (final tree, CUDA shape 128 x 4 in cu_device.cpp, Vulkan back at 32 x 2): the
# in-process passes, serve with 8 clients and decode on CUDA and Vulkan with nothing else running
# (run 4 built llama.cpp beside its serve and forward_batch figures).
cd "$(dirname "$0")/.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run && tar xJf .dev/fb.tar.xz -C /tmp/run && cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
G=$OUT/gen.txt
timeout 40 ./wick bench gen --device cuda --save-model /tmp/m.gguf > $G 2>&1; echo "rc=$?" >> $G
for dev in cuda vulkan; do timeout 60 ./fb /tmp/m.gguf $dev > $OUT/fb_$dev.txt 2>&1; echo "rc=$?" >> $OUT/fb_$dev.txt; cat $OUT/fb_$dev.txt; done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
for dev in cuda vulkan; do
  S=$OUT/serve_$dev.txt
  PYTHONPATH=/tmp/pyo timeout 100 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device $dev > $S 2>&1; echo "rc=$?" >> $S
  tail -4 $S
done
for i in 1 2; do timeout 40 ./wick bench gen --device cuda --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
for i in 1 2; do timeout 40 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; echo "rc=$?" >> $G; done
grep -E "\| (cuda|vulkan)|rc=|==" $G | cut -c1-220

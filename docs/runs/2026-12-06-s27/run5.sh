#!/bin/bash
# Session 27 run 5 (run 3's machine, still warm; the command as given to the device):
cd /tmp/run && export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json && ls /tmp/lb/bin/llama-bench 2>&1 | tail -1; for r in 1 2; do for d in vulkan cuda; do echo "== $r $d" >> $OUT/gen.txt; timeout 40 ./wick bench gen --device $d --model /tmp/m.gguf >> $OUT/gen.txt 2>&1; done; done; grep -hE "==|replayed|op by op" $OUT/gen.txt | cut -c1-150; date -u

#!/bin/bash
# Session 25 run 5: a sampling profile (.dev/shim/prof.c, LD_PRELOAD) of .dev/ft on Vulkan in a
# process after one that filled the caches; the samples are symbolized on the build machine.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -x /tmp/run/wick ] || { rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run; }
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
timeout 60 $R/.dev/ft /tmp/m.gguf vulkan > /dev/null 2>&1
for i in 1 2; do
  PROF_ONLY=ft PROF_OUT=$O/prof_$i.txt LD_PRELOAD=$R/.dev/shim/prof.so timeout 60 $R/.dev/ft /tmp/m.gguf vulkan > $O/ft_$i.txt 2>&1
  cat $O/ft_$i.txt
done

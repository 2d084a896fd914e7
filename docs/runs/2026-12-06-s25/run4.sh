#!/bin/bash
# Session 25 run 4: the first 1-token forwards on Vulkan with a timing shim on a few Vulkan calls
# (.dev/shim/vkshim.c, LD_PRELOAD), two processes after one that fills the caches.
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
  echo "== vulkan shim process $i" >> $O/ft.txt; LD_PRELOAD=$R/.dev/shim/vkshim.so timeout 60 $R/.dev/ft /tmp/m.gguf vulkan >> $O/ft.txt 2>&1
done
ls -la /tmp/kc | head -5; du -sh /tmp/kc; ls -la ~/.cache/nvidia 2>&1 | head -3
cat $O/ft.txt

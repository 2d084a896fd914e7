#!/bin/bash
# Session 25 run 3: where the first replayed token's time goes (.dev/ft.cpp: a 1-token forward op
# by op twice, then the first replayed one (the capture), then replays), Vulkan and CUDA.
cd "$(dirname "$0")/../.."
R=$PWD
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -x /tmp/run/wick ] || { rm -rf /tmp/run; mkdir -p /tmp/run && tar xJf .dev/bundle.tar.xz -C /tmp/run; }
cd /tmp/run
export LD_LIBRARY_PATH=$PWD/lib WICK_KERNEL_CACHE=/tmp/kc
O=$OUT; mkdir -p $O
[ -f /tmp/m.gguf ] || timeout 60 ./wick bench gen --device cuda --save-model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1
for i in 1 2; do for d in vulkan cuda; do
  echo "== $d process $i" >> $O/ft.txt; timeout 60 $R/.dev/ft /tmp/m.gguf $d >> $O/ft.txt 2>&1
done; done
cat $O/ft.txt
if command -v perf > /dev/null; then timeout 60 perf record -g -o /tmp/ft.data $R/.dev/ft /tmp/m.gguf vulkan > /dev/null 2>&1; perf report -i /tmp/ft.data --no-children --sort dso,symbol 2>/dev/null | grep -v "^#" | grep "%" | head -40 > $O/perf.txt; head -30 $O/perf.txt; fi

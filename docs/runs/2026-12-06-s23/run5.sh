#!/bin/bash
# Session 23 run 5: the mid tier for 1-2 x rows (default) against the shapes before it
# (64,2,64,4), decode and passes; other mid shapes and a 128 x 2 base by profile; serve.
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
run() { if [ "$1" = default ]; then shift; "$@"; else WICK_QMATVEC_SHAPE=$1 "${@:2}"; fi; }
V="64,2,64,4,128,2 64,2,64,4,256,4 64,2,64,4,256,2 64,2,64,4,128,8 128,2,64,4,128,4"
for s in default 64,2,64,4 $V; do run $s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 8 --prompt-tokens 16 > /dev/null 2>&1; done
G=$O/gen_vk.txt
for r in 1 2; do for s in default 64,2,64,4; do
  echo "== round $r shape $s" >> $G; run $s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1
done; done
for s in $V; do echo "== shape $s" >> $G; run $s timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf >> $G 2>&1; done
grep -hE "==|\| vulkan.*replayed" $G | cut -c1-150
B=$O/batch_vk.txt
for s in default 64,2,64,4; do
  echo "== shape $s" >> $B; run $s timeout 90 ./wick bench gen --device vulkan --model /tmp/m.gguf --batch 8 -n 64 >> $B 2>&1
done
grep -hE "==|\| [1248] +\| [0-9]" $B | cut -c1-140
i=0
for s in default $V; do
  i=$((i+1)); run $s env WICK_VK_PROFILE=1 timeout 60 ./wick bench gen --device vulkan --model /tmp/m.gguf -n 32 > $O/vkprof_$i.txt 2>&1
  echo "== profile $s"; grep -A6 "WICK_VK_PROFILE" $O/vkprof_$i.txt | tail -5 | awk '{printf "%s %s ", $4, $NF; for (j=5;j<=NF;j++) if ($j ~ /SWIGLU|ROPE|RESIDUAL|attention|WG_SIZE/) printf "%s ", $j; print ""}' | cut -c1-120
done
mkdir -p /tmp/pyo; for w in $R/.dev/wheels/*.whl; do python3 -m zipfile -e $w /tmp/pyo; done
S=$O/serve.txt
PYTHONPATH=/tmp/pyo timeout 80 python3 $R/tests/serve/bench_serve.py ./wick /tmp/m.gguf --clients 8 --tokens 128 --device vulkan >> $S 2>&1; echo "rc=$?" >> $S
grep -E "^\| [18] |ratio|rc=" $S | cut -c1-200
date -u >> $O/clocks.txt
